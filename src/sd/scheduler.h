// Diffusion schedulers with the semantics of Hugging Face diffusers, configured from a pipeline's
// scheduler/scheduler_config.json.
//
// Families (names accepted by CreateScheduler, case-insensitive; diffusers class names too):
//   pndm      PNDMScheduler (PLMS; skip_prk_steps — the SD 1.5 default; N steps → N+1 UNet calls,
//             the second timestep repeated; with skip_prk_steps false, 12 Runge–Kutta calls
//             first, N >= 4)                                    default timestep_spacing: leading
//   ddim      DDIMScheduler, eta = 0                            default timestep_spacing: leading
//   euler     EulerDiscreteScheduler                            default timestep_spacing: linspace
//   euler_a   EulerAncestralDiscreteScheduler (noise from Rng)  default timestep_spacing: linspace
//   dpmpp_2m  DPMSolverMultistepScheduler, dpmsolver++ order 2 whatever the config's
//             algorithm_type/solver_order say (the name selects them); final step first order
//             (dpmpp_2m_karras forces use_karras_sigmas)        default timestep_spacing: linspace
//   lms       LMSDiscreteScheduler, order 4                     default timestep_spacing: linspace
//
// Usage by the denoising loop (n = number of floats of the whole latent batch):
//   TG_ASSIGN_OR_RETURN(auto s, CreateScheduler("pndm", cfg));
//   TG_RETURN_IF_ERROR(s->SetTimesteps(steps));
//   latents *= s->init_noise_sigma();
//   for (int i = 0; i < s->num_steps(); ++i) {         // num_steps() = UNet calls
//     x = latents; s->ScaleModelInput(x, n, i);         // (== x * ModelInputScale(i))
//     eps = unet(x, s->timesteps()[i]);                 // guidance applied by the caller
//     TG_RETURN_IF_ERROR(s->Step(eps, i, latents, n, rngs));
//   }
// Step() must be called with step_index 0, 1, 2, ... in order and the same n each time
// (INTERNAL otherwise: a caller bug); SetTimesteps() resets all multistep history.
// Arithmetic: coefficients in double (like diffusers' numpy set-up), element updates in double and
// stored as float32. PNDM's element loops (the SD 1.5 default) also have an AVX2 build chosen at
// run time; it has the same operations in the same order and no FMA, so the bits are the same.
//
// Ownership/threading: a Scheduler is stateful (multistep history, step counter) — one instance
// per generation; not thread-safe. SchedulerConfig is a plain value.
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "sd/rng.h"

namespace tg::sd {

enum class BetaSchedule { kLinear, kScaledLinear, kSquaredCosCapV2 };
enum class TimestepSpacing { kLeading, kTrailing, kLinspace };
enum class PredictionType { kEpsilon, kVPrediction, kSample };
// The enums as scheduler_config.json spells them ("scaled_linear", "leading", "epsilon"). Pure.
std::string_view BetaScheduleName(BetaSchedule b);
std::string_view TimestepSpacingName(TimestepSpacing t);
std::string_view PredictionTypeName(PredictionType p);

// The fields of scheduler_config.json that change the result. Optional fields left empty take the
// default of the scheduler class that uses them (as diffusers does).
struct SchedulerConfig {
  std::string source = "<defaults>";  // file the config came from (for error messages)
  std::string class_name;             // "_class_name", e.g. "PNDMScheduler" ("" when absent)
  int num_train_timesteps = 1000;
  double beta_start = 0.0001;
  double beta_end = 0.02;
  BetaSchedule beta_schedule = BetaSchedule::kLinear;
  std::vector<double> trained_betas;  // non-empty overrides beta_* (length num_train_timesteps)
  std::optional<TimestepSpacing> timestep_spacing;  // empty → the scheduler's own default
  int steps_offset = 0;
  PredictionType prediction_type = PredictionType::kEpsilon;
  std::optional<bool> set_alpha_to_one;  // DDIM default true, PNDM default false
  bool clip_sample = false;              // DDIM only (diffusers default true; SD configs false)
  double clip_sample_range = 1.0;
  bool skip_prk_steps = false;       // PNDM (diffusers default false; SD configs true)
  bool use_karras_sigmas = false;    // Euler, DPM++ 2M, LMS
  bool lower_order_final = true;     // DPM++: first-order final step(s) when N < 15
  bool euler_at_final = false;       // DPM++
  bool final_sigmas_zero = true;     // DPM++ final_sigmas_type "zero" (else "sigma_min")
  bool interpolation_linear = true;  // Euler interpolation_type "linear" (else "log_linear")
  bool clip_sample_set = false;      // true when the config file set clip_sample explicitly
  std::optional<double> sigma_min;   // Karras range override (Euler, DPM++)
  std::optional<double> sigma_max;
  bool solver_heun = false;  // DPM++ solver_type "heun" (default "midpoint")
  double lambda_min_clipped = -std::numeric_limits<double>::infinity();  // DPM++
};

// Parses a scheduler_config.json text. Unknown fields are ignored (diffusers ignores them too);
// a known field of the wrong type or value, or a semantics-changing option this build does not
// implement (thresholding, rescale_betas_zero_snr, exponential/beta sigmas, ...) gives INVALID_ARG
// / UNSUPPORTED naming `source`, the field, the value found and what is accepted.
[[nodiscard]] common::Result<SchedulerConfig> ParseSchedulerConfig(const std::string& json_text,
                                                                   const std::string& source);
// Reads and parses PATH (NOT_FOUND naming the file when missing).
[[nodiscard]] common::Result<SchedulerConfig> LoadSchedulerConfig(const std::string& path);

// betas / alphas_cumprod of the training schedule (double precision; diffusers computes them in
// float32 torch — differences are below 1e-7 relative).
std::vector<double> MakeBetas(const SchedulerConfig& config);
std::vector<double> AlphasCumprod(const SchedulerConfig& config);

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Canonical name ("pndm", "ddim", "euler", "euler_a", "dpmpp_2m", "lms").
  virtual std::string_view name() const = 0;
  // Computes the schedule for `num_inference_steps` and resets all state. INVALID_ARG unless
  // 1 <= num_inference_steps <= num_train_timesteps, or when the spacing and steps_offset would
  // produce a timestep outside the training range (DDIM/PNDM/DPM index ᾱ with it).
  [[nodiscard]] common::Status SetTimesteps(int num_inference_steps);

  // The timestep fed to the UNet at each call (size = num_steps()); integers for DDIM/PNDM,
  // fractional for interpolated Euler-family schedules.
  const std::vector<double>& timesteps() const { return timesteps_; }
  // Euler family / DPM / LMS: the sigmas, num_steps()+1 values ending with the final sigma (0).
  // DDIM / PNDM: sqrt((1-ᾱ_t)/ᾱ_t) of each timestep (informational, size num_steps()).
  const std::vector<double>& sigmas() const { return sigmas_; }
  int num_steps() const { return static_cast<int>(timesteps_.size()); }  // UNet calls
  int num_inference_steps() const { return num_inference_steps_; }       // as given to SetTimesteps
  // Factor applied to the initial N(0, 1) latents.
  double init_noise_sigma() const { return init_noise_sigma_; }
  // Factor scale_model_input multiplies the sample by at `step_index` (1 for DDIM/PNDM).
  virtual double ModelInputScale(int step_index) const { return 1.0; }
  // x[0..n) *= ModelInputScale(step_index).
  void ScaleModelInput(float* x, std::size_t n, int step_index) const;
  // out[0..n) = x[0..n) scaled for `step_index`: the same floats as copying x to out and calling
  // ScaleModelInput (a plain copy when the scale is 1). x and out must not overlap.
  void ScaleModelInputTo(const float* x, float* out, std::size_t n, int step_index) const;
  // True when Step needs Rng noise (euler_a).
  virtual bool NeedsNoise() const { return false; }

  // Allocates (and touches) every buffer Step needs for n floats per call — the model-output
  // buffer and the family's history — so steps do not pay first-touch page faults (a PLMS history
  // is four 128 KiB buffers at 512x512). Optional; kept across SetTimesteps. Not thread-safe.
  void Reserve(std::size_t n);

  // A scheduler-owned buffer of n floats the caller may write the (guided) model output of the
  // next Step into (and pass to Step), so a step needs no buffer of its own; allocated once.
  // Valid until the next ModelOutputBuffer call or the scheduler's destruction.
  float* ModelOutputBuffer(std::size_t n);

  // The ancestral noise of one step: fills out[0..n) exactly as Step draws it (chunk k of
  // n / noise.size() floats from noise[k]), advancing the generators. Step given these values as
  // `drawn_noise` is bit-identical to Step drawing them itself, so a caller can draw the next
  // step's noise on another thread while the UNet runs. n must be a multiple of noise.size().
  static void DrawNoise(std::span<Rng> noise, float* out, std::size_t n);

  // One denoising step: sample ← scheduler update given the model output (already guided) at
  // `step_index`. `noise` supplies ancestral noise when NeedsNoise(): n must be a multiple of
  // noise.size() and chunk k of sample (n / noise.size() floats, one image) draws from noise[k];
  // or `drawn_noise` (n floats from DrawNoise) is used instead and `noise` is not touched.
  // Errors: step out of order, n changed, missing noise source (INVALID_ARG/INTERNAL).
  [[nodiscard]] common::Status Step(const float* model_output, int step_index, float* sample,
                                    std::size_t n, std::span<Rng> noise = {},
                                    const float* drawn_noise = nullptr);
  // The config it was created with and the spacing in effect (the config's, else the default).
  const SchedulerConfig& config() const { return config_; }
  TimestepSpacing timestep_spacing() const { return spacing_; }
  PredictionType prediction_type() const { return config_.prediction_type; }

 protected:
  Scheduler(SchedulerConfig config, TimestepSpacing default_spacing);
  // Family-specific schedule computation: fills timesteps_, sigmas_, init_noise_sigma_.
  virtual common::Status ComputeSchedule(int num_inference_steps) = 0;
  // Family-specific update; n, order and noise were validated.
  virtual common::Status StepImpl(const float* model_output, int step_index, float* sample,
                                  std::size_t n, std::span<Rng> noise) = 0;
  // Clears history (called by SetTimesteps).
  virtual void ResetState() {}
  // Family-specific part of Reserve.
  virtual void ReserveState(std::size_t n) {}

  SchedulerConfig config_;
  TimestepSpacing spacing_;
  std::vector<double> alphas_cumprod_;  // size num_train_timesteps
  std::vector<double> timesteps_;
  std::vector<double> sigmas_;
  double init_noise_sigma_ = 1.0;
  int num_inference_steps_ = 0;
  // Pre-drawn ancestral noise of the Step in progress (nullptr: draw from the Rngs).
  const float* drawn_noise_ = nullptr;
  std::vector<float> model_output_buffer_;  // default ModelOutputBuffer

 private:
  int next_step_ = 0;
  std::size_t n_ = 0;
};

// The canonical scheduler names, in display order.
const std::vector<std::string>& SchedulerNames();
// Creates the scheduler `name` (canonical, alias or diffusers class name; "" or "default" → the
// config's _class_name). INVALID_ARG listing the valid names when unknown; UNSUPPORTED for a config
// option the family does not implement.
[[nodiscard]] common::Result<std::unique_ptr<Scheduler>> CreateScheduler(
    std::string_view name, const SchedulerConfig& config);

// Prediction-type conversions (diffusers' formulas), element-wise with ᾱ = alpha_prod_t:
//   x0  = (x - √(1-ᾱ)·ε) / √ᾱ;   from v: x0 = √ᾱ·x - √(1-ᾱ)·v,  ε = √ᾱ·v + √(1-ᾱ)·x.
// Sigma-space form (Euler family, x = x0 + σ·ε scaled): from v, x0 = v·(-σ/√(σ²+1)) + x/(σ²+1).
double PredictX0(PredictionType type, double model_output, double sample, double alpha_prod_t);
double PredictEpsilon(PredictionType type, double model_output, double sample, double alpha_prod_t);
double PredictX0Sigma(PredictionType type, double model_output, double sample, double sigma);

}  // namespace tg::sd
