// The memory an image job needs before it runs, and the budget it must fit in.
//
// Model. A job (width x height, `images` images, guidance on or off) runs three phases one after
// the other: the text encoders (77 tokens, a constant), the UNet at rows = images x (2 with
// guidance) on T = (height/8)·(width/8) latent pixels, and the VAE decode, one image at a time
// (whole, or in tiles of 64x64 latents: sd/vae_tiling.h). Each session's arena is shrunk after
// every run (the runtime policy's arena.shrink_after_run, which serve and generate set when they
// budget memory), so a phase's activations are returned before the next one starts and the job's
// peak is the larger phase plus the host buffers (images, PNGs, the response body). Each phase's
// activation bytes are
//     c0 + rows · (c1·T + c2·T²)
// the T² term being unfused attention's batch x heads x T x T score tensors (~0 once attention
// runs as com.microsoft.MultiHeadAttention), fitted by non-negative least squares to the peaks
// measured while the session itself runs at calibration sizes (CalibrateSdMemory: 256², 384²,
// 512² at one image and 256² at two). Because the samples are measured on the sessions that
// serve, the estimate follows the graph that actually runs (rewritten or not) and the provider's
// arena. `base_bytes` is what the process holds with the sessions loaded and warm.
//
// Budget. ResolveBudget picks the memory the replica may use: --memory-budget when given; on a
// GPU the device memory free after the sessions load plus what the process holds there, minus a
// reserve; on the CPU the cgroup's limit, else what the process holds plus MemAvailable, minus a
// reserve (kReserveFraction of it, at least kMinReserveBytes).
//
// Thread safety: SdMemoryModel is immutable after construction; every const method may be called
// from any thread. CalibrateSdMemory runs generations and must not overlap other work on the
// process (it measures the process's peak resident set).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "probe/host_memory.h"
#include "sd/pipeline.h"

namespace tg::sd {

// Bytes of one phase as a function of its batch rows and latent pixels (see file comment).
struct ActivationFit {
  double c0 = 0.0, c1 = 0.0, c2 = 0.0;
  double Bytes(std::int64_t rows, std::int64_t latent_pixels) const;
};

struct ActivationSample {
  std::int64_t rows = 1;
  std::int64_t latent_pixels = 0;
  double bytes = 0.0;  // measured peak above the resident set before the run
};

// Non-negative least squares over {c0, c1, c2}: every subset of the terms is solved and the
// feasible solution with the smallest residual kept (a negative term would promise memory back at
// some size). An empty sample list gives zeros.
ActivationFit FitActivations(std::span<const ActivationSample> samples);

struct ImageJob {
  int width = 512;
  int height = 512;
  int images = 1;
  bool cfg = true;         // classifier-free guidance (guidance > 1): two UNet rows per image
  bool vae_tiled = false;  // decode in 64x64-latent tiles (sd/vae_tiling.h)
};

struct JobEstimate {
  std::int64_t unet_bytes = 0;   // UNet phase activations (text encoders included)
  std::int64_t vae_bytes = 0;    // decode phase: activations + the decoded image buffers
  std::int64_t host_bytes = 0;   // latents, RGB images, PNGs and response bodies of the job
  std::int64_t job_bytes = 0;    // max(unet, vae) + host: what the job adds to base_bytes
  std::int64_t admit_bytes = 0;  // job_bytes · (1 + kEstimateMargin): what admission counts
};

// The fit is measured at small sizes and extrapolated: at 1024x1024 the estimate fell short of the
// measured peak by 6 % (generate) and serve's peak adds the answer's copies, which overran a
// 512 MiB budget by 7 % at the largest size said to fit. Every fit decision (MaxImagesThatFit,
// LargestSizeThatFits, CheckOneImageFits, generate's check, serve's reservations) therefore
// counts admit_bytes, not job_bytes; job_bytes stays the model's own estimate (its accuracy is
// tested against measured peaks).
inline constexpr double kEstimateMargin = 0.20;

class SdMemoryModel {
 public:
  SdMemoryModel() = default;
  SdMemoryModel(ActivationFit unet, ActivationFit vae, std::int64_t base_bytes)
      : unet_(unet), vae_(vae), base_(base_bytes) {}

  JobEstimate Estimate(const ImageJob& job) const;
  // What the process holds with the sessions loaded and warm, before any job.
  std::int64_t base_bytes() const { return base_; }
  const ActivationFit& unet() const { return unet_; }
  const ActivationFit& vae() const { return vae_; }

 private:
  ActivationFit unet_, vae_;
  std::int64_t base_ = 0;
};

// Whether `job` decodes in tiles: above kVaeTileAutoPixels, or when the whole decode would not fit
// in `available_bytes` (the budget less base_bytes) while the tiled one would use less.
bool ChooseVaeTiling(const SdMemoryModel& model, ImageJob job, std::int64_t available_bytes);

// The job's estimate with its decode chosen by ChooseVaeTiling (job.vae_tiled is ignored).
JobEstimate EstimateWithTiling(const SdMemoryModel& model, ImageJob job,
                               std::int64_t available_bytes, bool* vae_tiled = nullptr);
// How many images of `job`'s size fit in `available_bytes` at once (0: not even one), at most
// `cap`.
int MaxImagesThatFit(const SdMemoryModel& model, ImageJob job, std::int64_t available_bytes,
                     int cap);
// The largest size whose `images` images fit in `available_bytes`: sides multiples of 8 in
// kMinSide..kMaxSide, at `aspect` = width / height (1 = square), the height searched from kMaxSide
// down; absent when not even kMinSide fits.
std::optional<std::pair<int, int>> LargestSizeThatFits(const SdMemoryModel& model, double aspect,
                                                       int images, bool cfg,
                                                       std::int64_t available_bytes);

struct MemoryBudget;
// OK when one image of `job` fits in the budget less `held_bytes` (what the process holds with
// every model loaded); else INVALID_ARG: "size WxH needs <estimate> for one image ... but the
// memory budget is <budget> (<source>), <held> of it held by the loaded models; the largest size
// that fits is ..." (serve's 400 and generate's exit 2 say the same).
[[nodiscard]] common::Status CheckOneImageFits(const SdMemoryModel& model, ImageJob job,
                                               const MemoryBudget& budget, std::int64_t held_bytes);

// How a process's memory is read while calibrating (the resident set on the CPU).
class MemoryMeter {
 public:
  virtual ~MemoryMeter() = default;
  virtual std::int64_t Now() = 0;   // bytes held now
  virtual bool ResetPeak() = 0;     // peak := now; false when it cannot be reset
  virtual std::int64_t Peak() = 0;  // highest Now() since the last reset
};
// The process's resident set (probe/host_memory.h: VmRSS, VmHWM, clear_refs).
class RssMeter : public MemoryMeter {
 public:
  std::int64_t Now() override;
  bool ResetPeak() override;
  std::int64_t Peak() override;
};

// Runs one-step generations at the calibration sizes on `pipeline` (after a warm-up) and fits the
// model from the peaks `meter` sees in each phase. UNAVAILABLE when a run fails; the sizes are
// skipped that a fixed-shape UNet cannot take (INVALID_ARG when none is left).
[[nodiscard]] common::Result<SdMemoryModel> CalibrateSdMemory(const Pipeline& pipeline,
                                                              MemoryMeter& meter);

struct MemoryBudget {
  std::int64_t bytes = 0;    // what the replica may hold in all
  std::int64_t reserve = 0;  // kept back from the measured limit (0 for --memory-budget)
  std::string source;        // "--memory-budget", "cgroup memory.max (...)", ...
  bool device = false;       // a GPU's memory, not the host's
};
inline constexpr double kReserveFraction = 0.10;
inline constexpr std::int64_t kMinReserveBytes = std::int64_t{256} << 20;

// The budget (see file comment). `flag`: --memory-budget. `gpu_free`/`gpu_held`: device memory
// free now and held by this process (absent on the CPU). `rss`: this process's resident set.
// INVALID_ARG when nothing gives a limit (no flag, no cgroup limit, no MemAvailable).
[[nodiscard]] common::Result<MemoryBudget> ResolveBudget(std::optional<std::int64_t> flag,
                                                         const probe::HostMemory& host,
                                                         std::optional<std::int64_t> gpu_free,
                                                         std::optional<std::int64_t> gpu_held,
                                                         std::int64_t rss);

// "1.53 GiB" (two decimals, binary units) for messages and logs.
std::string FormatBytes(std::int64_t bytes);

}  // namespace tg::sd
