// The text-to-image denoising loop over a loaded SdModel (SD 1.x, 2.x, SDXL).
//
// Data flow of one request: validate → tokenize prompt and negative prompt (both tokenizers for
// SDXL) → text encoder(s), once per distinct text, tiled per image (SDXL: penultimate hidden
// states concatenated → [B,77,2048], pooled text_embeds, time_ids = (h, w, 0, 0, h, w)) →
// per-image Rng (seed + k) draws the initial latents [1,4,h/8,w/8] × init_noise_sigma → for each
// scheduler step: latents duplicated [uncond; cond] in one UNet batch (scaled by the scheduler),
// timestep fed with the UNet's own dtype/rank, guidance noise = u + g·(c − u), scheduler Step →
// VAE decode one image at a time of latents / scaling_factor (in tiles above kVaeTileAutoPixels
// or when asked: sd/vae_tiling.h) → clip(x/2+0.5, 0, 1)·255 rounded
// half-to-even (numpy's round) → PNG with the A1111 infotext as its `parameters` chunk
// (sd/infotext.h). Prompts longer than CLIP's 77 tokens are truncated, with a warning in
// GenerateOutput::warnings saying how many tokens were dropped.
//
// Reproducibility: with RngMode::kNumpy and batch 1, the initial latents equal diffusers' ONNX
// pipeline's `np.random.RandomState(seed).randn(1,4,h,w)`; image k of a batch uses seed + k (or
// the explicit per-image seed list), so it is the same image a batch-1 request with that seed
// gives. Same seed + settings + provider → bit-identical pixels and PNG bytes.
//
// Batching several requests (Pipeline::GenerateBatch, used by the server): requests whose
// BatchKey is equal (size, steps, scheduler, guidance, rng mode) run as one UNet batch of all
// their images (at most kMaxBatch), each with its own prompt, negative prompt, seeds and n. Every
// text is encoded alone at batch 1 and every image decoded alone, and the scheduler update is
// element-wise with per-image generators, so image k of a request is the image that request gives
// run alone, as long as the UNet's per-row result does not depend on the batch size (true of ONNX
// Runtime's CPU kernels, tested in pipeline_test; GPU libraries may pick other kernels for another
// batch size, which can move low bits).
//
// Errors: INVALID_ARG for an out-of-range request field (named, with the accepted range) or an
// unknown scheduler; errors of the sessions pass through (an ORT failure is UNAVAILABLE, a bad
// tensor INVALID_ARG: runtime::FromOrtCode).
// Cancellation (the atomic flag or the progress callback returning false) is checked between
// steps and reported as GenerateOutput::cancelled, not as an error. In a batch each request has
// its own flag: a cancelled request gets no images (cancelled, steps_done = steps it saw) while
// the others continue (its rows keep running, since the scheduler state spans the batch); the
// loop stops early only when every request is cancelled or the callback returns false (that
// cancels all).
//
// Thread safety: Generate is const and may run concurrently on one Pipeline (each call has its
// own scheduler, Rngs and buffers; sessions are thread-safe). The SdModel must outlive the
// Pipeline.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "sd/model_loader.h"
#include "sd/png.h"
#include "sd/rng.h"
#include "sd/scheduler.h"

namespace tg::sd {

// The seed range of each generator (rng.h): numpy's RandomState takes 32-bit seeds, philox any
// 64-bit one. Image k of a request uses seed + k, which must be in range too.
inline constexpr std::string_view kSeedRangeText =
    "0..4294967295 (2^32-1) with --rng numpy (numpy.random.RandomState, the default), "
    "0..18446744073709551615 (2^64-1) with --rng philox";

// Limits applied by ValidateRequest.
inline constexpr int kMinSide = 256;
inline constexpr int kMaxSide = 2048;
inline constexpr int kMaxSteps = 1000;
inline constexpr int kMaxBatch = 8;
inline constexpr std::size_t kMaxPromptBytes = 256 * 1024;  // CLIP reads 75 tokens anyway
// Above this many pixels the VAE decodes in tiles unless told otherwise (sd/vae_tiling.h): a whole
// 1024² decode is the largest common size; larger ones tile.
inline constexpr std::int64_t kVaeTileAutoPixels = 1024 * 1024;

// How the VAE decodes: whole, in tiles (sd/vae_tiling.h), or tiles above kVaeTileAutoPixels.
enum class VaeTiling { kAuto, kOff, kOn };

struct GenerateRequest {
  std::string prompt;
  // Absent and empty differ, as in diffusers and Optimum: SDXL with force_zeros_for_empty_prompt
  // uses zeros as the unconditional embeddings only when there is no negative prompt; an empty
  // one is encoded like any text. SD 1.x/2.x encode "" for an absent one, so there they agree.
  std::optional<std::string> negative_prompt;
  int steps = 50;
  std::string scheduler;           // "" = the model's scheduler_config _class_name
  std::optional<double> guidance;  // empty = 7.5 (SD 1.x/2.x) or 5.0 (SDXL)
  int width = 0;                   // 0 = the variant's default size
  int height = 0;
  int batch = 1;                     // images per prompt, 1..8
  std::uint64_t seed = 0;            // image k uses seed + k unless `seeds` is given
  std::vector<std::uint64_t> seeds;  // optional explicit per-image seeds (size == batch)
  RngMode rng = RngMode::kNumpy;
  bool encode_png = true;  // also fill GeneratedImage::png
  std::string model_hash;  // "Model hash" of the infotext (PipelineHash); "" leaves it out
  std::string model_name;  // "Model" of the infotext (the pipeline folder's name); "" leaves it out
  VaeTiling vae_tiling = VaeTiling::kAuto;
};

struct StepProgress {
  int step = 0;   // 1-based number of the UNet call just finished
  int total = 0;  // UNet calls in this generation
  double unet_ms = 0.0;
  double host_ms = 0.0;  // guidance + scheduler + input preparation of this step
  // The latents after this step, [images, 4, latent_height, latent_width] row major (images of a
  // batch in request order); valid only during the callback. nullptr when not available.
  const float* latents = nullptr;
  int latent_height = 0;
  int latent_width = 0;
};
// Called after every step; returning false cancels the generation.
using ProgressCallback = std::function<bool(const StepProgress&)>;

struct StageTimings {
  double tokenize_ms = 0.0;
  double encode_ms = 0.0;            // text encoder runs
  double latents_ms = 0.0;           // initial noise
  std::vector<double> unet_ms;       // per UNet call (the session Run only)
  std::vector<double> scheduler_ms;  // per step: everything else (inputs, guidance, Step)
  double decode_ms = 0.0;            // VAE runs + pixel conversion
  double png_ms = 0.0;
  double total_ms = 0.0;
  double UnetTotal() const;       // sum of unet_ms
  double SchedulerTotal() const;  // sum of scheduler_ms
};

struct GeneratedImage {
  std::uint64_t seed = 0;
  RgbImage image;
  std::string parameters;  // A1111 infotext (sd/infotext.h), also the PNG's `parameters` chunk
  std::string png;         // encoded PNG when request.encode_png
};

struct GenerateOutput {
  bool cancelled = false;
  int steps_done = 0;
  std::string scheduler;  // canonical scheduler name used
  double guidance = 0.0;
  int width = 0;
  int height = 0;
  std::vector<GeneratedImage> images;
  StageTimings timings;
  std::vector<std::string> warnings;  // e.g. a prompt truncated to 77 tokens (how many dropped)
};

// Checks one side of the image size: a multiple of 8 in kMinSide..kMaxSide (any aspect ratio,
// e.g. SDXL's 1216x832 buckets). INVALID_ARG naming `name`, the value and the rule it breaks.
[[nodiscard]] common::Status CheckSide(std::string_view name, int value);

// Fills defaults from `model` and checks every field; INVALID_ARG naming the field, the value and
// the accepted range.
[[nodiscard]] common::Status ValidateRequest(const SdModel& model, GenerateRequest* request);
// The checks that need no model (sizes, steps, batch, guidance, prompt length, seeds), so a
// command can reject bad input before it loads anything. Unset width/height/guidance pass.
[[nodiscard]] common::Status ValidateRequestBasics(const GenerateRequest& request);

// The key under which validated requests may share one UNet batch: equal keys mean equal size,
// steps, scheduler (as requested; "" = the model's), guidance and rng mode.
std::string BatchKey(const GenerateRequest& validated);

// Fills each image's `parameters` (A1111 infotext from `request` and `out`) and, when
// request.encode_png, its PNG carrying that text as the `parameters` chunk; adds the time to
// out->timings.png_ms and total_ms. Generate ends with it; a caller that learns the model hash
// only after generating (the CLI hashes the UNet files while the pipeline runs) generates with
// encode_png = false and calls it again with model_hash set. INTERNAL if the encoder fails.
[[nodiscard]] common::Status DescribeAndEncode(const GenerateRequest& request, GenerateOutput* out);

// The initial latents of one image: Rng(mode, seed).randn(4*h*w), C order; Rng::Create's errors.
[[nodiscard]] common::Result<std::vector<float>> InitialNoise(RngMode mode, std::uint64_t seed,
                                                              int latent_h, int latent_w);

// Pixel conversion of one decoded image [3,H,W] (float, values nominally in [-1,1]) to RGB8.
RgbImage DecodedToRgb(const float* chw, int width, int height);

// The host side of one denoising step (everything but the UNet run), shared by Generate and
// benchmarks/sd_step_bench.cc so the benchmark measures the code that runs. Buffers are allocated
// once; Prepare and Finish each make one fused pass over the latents (scale + [x; x] + fp16
// conversion in Prepare; output read + fp16 conversion + guidance written straight into the
// scheduler's model-output buffer in Finish) and allocate nothing.
//
// Ancestral noise: with `rngs` given and a scheduler that NeedsNoise(), Prepare hands the drawing
// of the step's Gaussians to a worker thread (started on first use, joined by the destructor), so
// it runs while the UNet does; Finish waits for it. The worker draws the same values from the same
// generators in the same order as Step would, so results are bit-identical to serial drawing
// (`prefetch_noise` false draws serially, for comparison). The Rngs must outlive the workspace and
// must not be touched by the caller between Prepare and Finish.
// `unet` is borrowed as well and must outlive the workspace.
// Not thread-safe (one per generation); the internal worker is synchronised by the workspace.
class StepWorkspace {
 public:
  StepWorkspace(const UnetPart& unet, int images, bool cfg, float guidance, int latent_h,
                int latent_w, std::span<Rng> rngs = {}, bool prefetch_noise = true);
  ~StepWorkspace();
  StepWorkspace(const StepWorkspace&) = delete;
  StepWorkspace& operator=(const StepWorkspace&) = delete;

  // UNet inputs: [0] sample and [1] timestep (rewritten by Prepare), then whatever the caller
  // appends (the constant text conditioning).
  std::vector<runtime::NamedTensor>& inputs() { return inputs_; }
  // Writes [x; x] (x = latents scaled by the scheduler for `step`) and the timestep, in the
  // UNet's dtypes and ranks; starts drawing the step's ancestral noise on the worker.
  void Prepare(const Scheduler& sched, int step, const std::vector<float>& latents);
  // Checks the UNet output shape, applies guidance and the scheduler update to *latents.
  [[nodiscard]] common::Status Finish(Scheduler& sched, int step, const runtime::Tensor& unet_out,
                                      std::vector<float>* latents);

 private:
  class NoiseWorker;

  const UnetPart& unet_;
  bool cfg_;
  float guidance_;
  std::int64_t unet_batch_;
  std::size_t n_;  // floats of the latents of all images
  std::vector<std::int64_t> out_shape_;
  std::vector<runtime::NamedTensor> inputs_;
  std::span<Rng> rngs_;
  bool prefetch_noise_;
  std::unique_ptr<NoiseWorker> noise_;
};

class Pipeline {
 public:
  // `model` is borrowed and must outlive the pipeline.
  explicit Pipeline(const SdModel& model) : model_(model) {}

  // Validates `request` against the model and runs it (see the file comment for the data flow,
  // errors and cancellation). `progress`, when given, is called on the calling thread after each
  // step; returning false cancels. `cancel` is polled between steps.
  [[nodiscard]] common::Result<GenerateOutput> Generate(
      GenerateRequest request, const ProgressCallback& progress = nullptr,
      const std::atomic<bool>* cancel = nullptr) const;

  // Runs `requests` as one UNet batch (see "Batching" above); one output per request, in order.
  // INVALID_ARG (naming the request index) when one is invalid, when their BatchKeys differ, or
  // when they hold more than kMaxBatch images together; `cancels` is empty or one flag (or
  // nullptr) per request. Timings of the shared stages are the batch's, in every output.
  [[nodiscard]] common::Result<std::vector<GenerateOutput>> GenerateBatch(
      std::vector<GenerateRequest> requests, const ProgressCallback& progress = nullptr,
      std::span<const std::atomic<bool>* const> cancels = {}) const;
  // The model given to the constructor (borrowed, not owned).
  const SdModel& model() const { return model_; }

 private:
  const SdModel& model_;
};

}  // namespace tg::sd
