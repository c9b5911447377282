// The denoising loop. Host work per step is kept to a few linear passes over the latents (fill
// the UNet input in place, guidance, scheduler step) with buffers allocated once per request, so
// it stays a small fraction of even a tiny UNet's run time (see benchmarks/sd_step_bench.cc).
#include "sd/pipeline.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "common/cpu_features.h"
#include "sd/infotext.h"
#include "sd/pipeline_internal.h"
#include "sd/scheduler.h"
#include "sd/vae_tiling.h"

namespace tg::sd {
namespace {

using common::Result;
using common::Status;
using runtime::DataType;
using runtime::NamedTensor;
using runtime::Tensor;
using Clock = std::chrono::steady_clock;

constexpr int kSeqLen = ClipTokenizer::kDefaultMaxLength;

double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// (Re)shapes `t` to dtype/shape (keeping its buffer when they already match) and writes `src`.
void FillFloatTensor(const float* src, std::size_t n, DataType dtype,
                     const std::vector<std::int64_t>& shape, Tensor* t) {
  if (t->dtype() != dtype || t->shape() != shape) *t = Tensor(dtype, shape);
  if (dtype == DataType::kFloat32) {
    std::memcpy(t->data<float>(), src, n * sizeof(float));
  } else {
    runtime::FloatToHalfN(src, t->data<std::uint16_t>(), n);
  }
}

// Copies a float32/float16 tensor into dst (t.element_count() floats).
void ReadFloats(const Tensor& t, float* dst) {
  const auto n = static_cast<std::size_t>(t.element_count());
  if (t.dtype() == DataType::kFloat32) {
    std::memcpy(dst, t.data<float>(), n * sizeof(float));
  } else {
    runtime::HalfToFloatN(t.data<std::uint16_t>(), dst, n);
  }
}

Status ExpectShape(const Tensor& t, const std::vector<std::int64_t>& want, const std::string& model,
                   const std::string& name) {
  if (t.shape() != want || (t.dtype() != DataType::kFloat32 && t.dtype() != DataType::kFloat16)) {
    return Status::InvalidArg("mismatched shapes: " + model + " returned " + name + " " +
                              std::string(runtime::DataTypeName(t.dtype())) +
                              runtime::ShapeToString(t.shape()) + "; expected float " +
                              runtime::ShapeToString(want));
  }
  return Status::Ok();
}

Tensor MakeIds(const std::vector<std::int64_t>& ids, DataType dtype) {
  Tensor t(dtype, {1, static_cast<std::int64_t>(ids.size())});
  if (dtype == DataType::kInt32) {
    auto* d = t.data<std::int32_t>();
    for (std::size_t i = 0; i < ids.size(); ++i) d[i] = static_cast<std::int32_t>(ids[i]);
  } else {
    std::memcpy(t.data<std::int64_t>(), ids.data(), ids.size() * sizeof(std::int64_t));
  }
  return t;
}

struct EncodedText {
  std::vector<float> hidden;  // [77, width]
  std::int64_t width = 0;
  std::vector<float> pooled;  // [pooled width] (SDXL text_encoder_2)
};

Result<EncodedText> RunEncoder(const TextEncoderPart& enc, const std::string& rel,
                               const std::vector<std::int64_t>& ids) {
  std::vector<NamedTensor> in;
  in.push_back({enc.ids_name, MakeIds(ids, enc.ids_dtype)});
  std::vector<std::string> names{enc.hidden_name};
  if (!enc.pooled_name.empty()) names.push_back(enc.pooled_name);
  std::vector<Tensor> out;
  TG_RETURN_IF_ERROR(enc.session.Run(in, names, &out));
  EncodedText e;
  const Tensor& h = out[0];
  if (h.shape().size() != 3 || h.shape()[0] != 1 || h.shape()[1] != kSeqLen) {
    return ExpectShape(h, {1, kSeqLen, enc.hidden_size}, rel, enc.hidden_name);
  }
  e.width = h.shape()[2];
  e.hidden.resize(static_cast<std::size_t>(h.element_count()));
  ReadFloats(h, e.hidden.data());
  if (!enc.pooled_name.empty()) {
    const Tensor& p = out[1];
    if (p.shape().size() != 2 || p.shape()[0] != 1) {
      return ExpectShape(p, {1, enc.pooled_size}, rel, enc.pooled_name);
    }
    e.pooled.resize(static_cast<std::size_t>(p.element_count()));
    ReadFloats(p, e.pooled.data());
  }
  return e;
}

// The conditioning of one text (prompt or negative prompt) for the UNet.
struct Conditioning {
  std::vector<float> context;      // [77, C]
  std::vector<float> text_embeds;  // SDXL pooled [1280]
};

Result<Conditioning> EncodePrompt(const SdModel& m, const std::vector<std::int64_t>& ids1,
                                  const std::vector<std::int64_t>& ids2) {
  Conditioning c;
  TG_ASSIGN_OR_RETURN(EncodedText e1, RunEncoder(m.text_encoder, "text_encoder/model.onnx", ids1));
  if (!m.text_encoder_2) {
    c.context = std::move(e1.hidden);
    return c;
  }
  TG_ASSIGN_OR_RETURN(EncodedText e2,
                      RunEncoder(*m.text_encoder_2, "text_encoder_2/model.onnx", ids2));
  // SDXL: concatenate both encoders' penultimate states per token → [77, C1 + C2].
  const auto w1 = static_cast<std::size_t>(e1.width), w2 = static_cast<std::size_t>(e2.width);
  c.context.resize(kSeqLen * (w1 + w2));
  for (std::size_t tkn = 0; tkn < static_cast<std::size_t>(kSeqLen); ++tkn) {
    std::memcpy(&c.context[tkn * (w1 + w2)], &e1.hidden[tkn * w1], w1 * sizeof(float));
    std::memcpy(&c.context[tkn * (w1 + w2) + w1], &e2.hidden[tkn * w2], w2 * sizeof(float));
  }
  c.text_embeds = std::move(e2.pooled);
  return c;
}

// Writes the timestep value into `t` with the UNet's declared dtype and rank.
void FillTimestep(const UnetPart& u, double value, std::int64_t batch, Tensor* t) {
  std::vector<std::int64_t> shape;
  if (u.timestep_layout == TimestepLayout::kSingle) shape = {1};
  if (u.timestep_layout == TimestepLayout::kBatched) shape = {batch};
  if (t->dtype() != u.timestep_dtype || t->shape() != shape) *t = Tensor(u.timestep_dtype, shape);
  const auto n = static_cast<std::size_t>(t->element_count());
  switch (u.timestep_dtype) {
    case DataType::kFloat16:
      std::fill_n(t->data<std::uint16_t>(), n, runtime::FloatToHalf(static_cast<float>(value)));
      break;
    case DataType::kFloat64:
      std::fill_n(t->data<double>(), n, value);
      break;
    case DataType::kInt64:  // numpy astype(int64) truncates toward zero, as Optimum's pipeline
      std::fill_n(t->data<std::int64_t>(), n, static_cast<std::int64_t>(value));
      break;
    case DataType::kInt32:
      std::fill_n(t->data<std::int32_t>(), n, static_cast<std::int32_t>(value));
      break;
    default:
      std::fill_n(t->data<float>(), n, static_cast<float>(value));
      break;
  }
}

}  // namespace

double StageTimings::UnetTotal() const {
  double s = 0;
  for (double v : unet_ms) s += v;
  return s;
}

double StageTimings::SchedulerTotal() const {
  double s = 0;
  for (double v : scheduler_ms) s += v;
  return s;
}

Result<std::vector<float>> InitialNoise(RngMode mode, std::uint64_t seed, int latent_h,
                                        int latent_w) {
  TG_ASSIGN_OR_RETURN(Rng rng, MakeRng(mode, seed));
  std::vector<float> v(static_cast<std::size_t>(4) * latent_h * latent_w);
  rng.FillGaussian(v.data(), v.size());
  return v;
}

RgbImage DecodedToRgb(const float* chw, int width, int height) {
  RgbImage img;
  img.width = width;
  img.height = height;
  const std::size_t plane = static_cast<std::size_t>(width) * height;
  img.pixels.resize(plane * 3);
  for (std::size_t p = 0; p < plane; ++p) {
    for (std::size_t c = 0; c < 3; ++c) {
      // float32 throughout like numpy: clip(x/2 + 0.5, 0, 1) * 255, round half to even.
      float v = chw[c * plane + p] / 2.0f + 0.5f;
      v = std::isnan(v) ? 0.0f : std::clamp(v, 0.0f, 1.0f);
      img.pixels[p * 3 + c] = static_cast<std::uint8_t>(std::nearbyint(v * 255.0f));
    }
  }
  return img;
}

// Draws "the next n Gaussians" of the generators on a worker thread. What is drawn does not
// depend on the step index: the streams are sequential, so noise drawn for a step that never
// consumed it is exactly what the following Step would have drawn itself.
class StepWorkspace::NoiseWorker {
 public:
  NoiseWorker(std::span<Rng> rngs, std::size_t n)
      : rngs_(rngs), buf_(n), thread_([this] { Loop(); }) {}
  ~NoiseWorker() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  // Starts a draw unless one is running or its result is still unconsumed.
  void Request() {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (state_ != State::kIdle) return;
      state_ = State::kDrawing;
    }
    cv_.notify_all();
  }
  // The drawn noise (waiting for a running draw), or nullptr when none was requested.
  const float* Wait() {
    std::unique_lock<std::mutex> l(mu_);
    if (state_ == State::kIdle) return nullptr;
    cv_.wait(l, [this] { return state_ == State::kReady; });
    return buf_.data();
  }
  // The scheduler used the values: the next Request draws new ones.
  void Consumed() {
    std::lock_guard<std::mutex> l(mu_);
    state_ = State::kIdle;
  }

 private:
  enum class State { kIdle, kDrawing, kReady };
  void Loop() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      cv_.wait(l, [this] { return stop_ || state_ == State::kDrawing; });
      if (stop_) return;
      l.unlock();
      Scheduler::DrawNoise(rngs_, buf_.data(), buf_.size());
      l.lock();
      state_ = State::kReady;
      cv_.notify_all();
    }
  }

  std::span<Rng> rngs_;
  std::vector<float> buf_;
  std::mutex mu_;
  std::condition_variable cv_;
  State state_ = State::kIdle;  // guarded by mu_
  bool stop_ = false;           // guarded by mu_
  std::thread thread_;          // last: starts after the members it reads
};

StepWorkspace::StepWorkspace(const UnetPart& unet, int images, bool cfg, float guidance,
                             int latent_h, int latent_w, std::span<Rng> rngs, bool prefetch_noise)
    : unet_(unet),
      cfg_(cfg),
      guidance_(guidance),
      unet_batch_((cfg ? 2 : 1) * images),
      n_(static_cast<std::size_t>(4) * latent_h * latent_w * images),
      out_shape_{unet_batch_, 4, latent_h, latent_w},
      rngs_(rngs),
      prefetch_noise_(prefetch_noise) {
  inputs_.push_back({unet.sample_name, Tensor(unet.sample_dtype, out_shape_)});
  inputs_.push_back({unet.timestep_name, Tensor()});
}

StepWorkspace::~StepWorkspace() = default;

namespace {

// Floats per block of the portable fp16 passes: small enough for the block buffers to stay in L1.
constexpr std::size_t kBlock = 1024;

// The float32 passes of a step, each a single loop built twice: for baseline x86-64 and for AVX2
// (8 floats per instruction), chosen once at run time. Same operations in the same order and no
// FMA, so both builds give the same bits.

// noise = uncond + g * (cond - uncond), in float32 like diffusers' numpy pipeline.
[[gnu::always_inline]] inline void GuideLoop(const float* u, const float* c, float g, float* out,
                                             std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) out[j] = u[j] + g * (c[j] - u[j]);
}

// The sample input of a float32 UNet: out (and out2, the second half of [x; x], when given) =
// x scaled for the step exactly as Scheduler::ScaleModelInputTo does (x * f, or x when !scale).
[[gnu::always_inline]] inline void ScaleDupLoop(const float* x, bool scale, float f, float* out,
                                                float* out2, std::size_t n) {
  if (out2 == nullptr) {
    for (std::size_t j = 0; j < n; ++j) out[j] = scale ? x[j] * f : x[j];
    return;
  }
  for (std::size_t j = 0; j < n; ++j) {
    const float v = scale ? x[j] * f : x[j];
    out[j] = v;
    out2[j] = v;
  }
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx2"))) void GuideAvx2(const float* u, const float* c, float g, float* out,
                                               std::size_t n) {
  GuideLoop(u, c, g, out, n);
}
__attribute__((target("avx2"))) void ScaleDupAvx2(const float* x, bool scale, float f, float* out,
                                                  float* out2, std::size_t n) {
  ScaleDupLoop(x, scale, f, out, out2, n);
}
#endif

void Guide(const float* u, const float* c, float g, float* out, std::size_t n) {
#if defined(__x86_64__) || defined(__i386__)
  if (common::CpuHasAvx2()) return GuideAvx2(u, c, g, out, n);
#endif
  GuideLoop(u, c, g, out, n);
}

void ScaleDup(const Scheduler& sched, int step, const float* x, float* out, float* out2,
              std::size_t n) {
  const double s = sched.ModelInputScale(step);
  const bool scale = s != 1.0;
  const auto f = static_cast<float>(s);
#if defined(__x86_64__) || defined(__i386__)
  if (common::CpuHasAvx2()) return ScaleDupAvx2(x, scale, f, out, out2, n);
#endif
  ScaleDupLoop(x, scale, f, out, out2, n);
}

// The fp16 boundary of a step in one pass each, with F16C when the CPU has it (checked once by
// common::CpuHasF16c); otherwise a block at a time through L1 with the portable conversions.
// Both give the same bits: the conversions are exact/round-to-nearest-even either way and the
// float arithmetic is the same operations in the same order (no FMA).
#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx,f16c"))) void GuideHalfF16c(const std::uint16_t* u,
                                                       const std::uint16_t* c, float g, float* out,
                                                       std::size_t n) {
  const __m256 gv = _mm256_set1_ps(g);
  std::size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 uf = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(u + j)));
    const __m256 cf = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c + j)));
    _mm256_storeu_ps(out + j, _mm256_add_ps(uf, _mm256_mul_ps(gv, _mm256_sub_ps(cf, uf))));
  }
  for (; j < n; ++j) {
    const float uf = runtime::HalfToFloat(u[j]), cf = runtime::HalfToFloat(c[j]);
    out[j] = uf + g * (cf - uf);
  }
}

// out[j] (and out2[j] when given) = fp16(x[j] * f), or fp16(x[j]) when !scale.
__attribute__((target("avx,f16c"))) void ScaleToHalfF16c(const float* x, bool scale, float f,
                                                         std::uint16_t* out, std::uint16_t* out2,
                                                         std::size_t n) {
  const __m256 fv = _mm256_set1_ps(f);
  std::size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 v = _mm256_loadu_ps(x + j);
    if (scale) v = _mm256_mul_ps(v, fv);
    const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j), h);
    if (out2 != nullptr) _mm_storeu_si128(reinterpret_cast<__m128i*>(out2 + j), h);
  }
  for (; j < n; ++j) {
    const std::uint16_t h = runtime::FloatToHalf(scale ? x[j] * f : x[j]);
    out[j] = h;
    if (out2 != nullptr) out2[j] = h;
  }
}
constexpr bool kF16cKernels = true;
#else
void GuideHalfF16c(const std::uint16_t*, const std::uint16_t*, float, float*, std::size_t) {}
void ScaleToHalfF16c(const float*, bool, float, std::uint16_t*, std::uint16_t*, std::size_t) {}
constexpr bool kF16cKernels = false;
#endif

void GuideHalf(const std::uint16_t* u, const std::uint16_t* c, float g, float* out, std::size_t n) {
  if (kF16cKernels && common::CpuHasF16c()) return GuideHalfF16c(u, c, g, out, n);
  float ub[kBlock], cb[kBlock];
  for (std::size_t j = 0; j < n; j += kBlock) {
    const std::size_t len = std::min(kBlock, n - j);
    runtime::HalfToFloatN(u + j, ub, len);
    runtime::HalfToFloatN(c + j, cb, len);
    Guide(ub, cb, g, out + j, len);
  }
}

// The sample input of an fp16 UNet: latents scaled for `step` exactly as
// Scheduler::ScaleModelInputTo does (a copy when the scale is 1, else x * float(scale)), converted
// to fp16 and written to out (and to out2, the second half of [x; x], when given).
void ScaleToHalf(const Scheduler& sched, int step, const float* x, std::uint16_t* out,
                 std::uint16_t* out2, std::size_t n) {
  const double s = sched.ModelInputScale(step);
  if (kF16cKernels && common::CpuHasF16c()) {
    return ScaleToHalfF16c(x, s != 1.0, static_cast<float>(s), out, out2, n);
  }
  float block[kBlock];
  for (std::size_t j = 0; j < n; j += kBlock) {
    const std::size_t len = std::min(kBlock, n - j);
    sched.ScaleModelInputTo(x + j, block, len, step);
    runtime::FloatToHalfN(block, out + j, len);
    if (out2 != nullptr) std::memcpy(out2 + j, out + j, len * sizeof(std::uint16_t));
  }
}

}  // namespace

void StepWorkspace::Prepare(const Scheduler& sched, int step, const std::vector<float>& latents) {
  // Sample input: [x; x] scaled by the scheduler, written straight into the input tensor.
  Tensor& sample = inputs_[0].tensor;
  const float* lat = latents.data();
  if (unet_.sample_dtype == DataType::kFloat32) {
    float* x = sample.data<float>();
    ScaleDup(sched, step, lat, x, cfg_ ? x + n_ : nullptr, n_);
  } else {
    std::uint16_t* x = sample.data<std::uint16_t>();
    ScaleToHalf(sched, step, lat, x, cfg_ ? x + n_ : nullptr, n_);
  }
  FillTimestep(unet_, sched.timesteps()[step], unet_batch_, &inputs_[1].tensor);
  if (prefetch_noise_ && sched.NeedsNoise() && !rngs_.empty() && n_ % rngs_.size() == 0) {
    if (!noise_) {
      try {
        noise_ = std::make_unique<NoiseWorker>(rngs_, n_);
      } catch (const std::system_error&) {  // no thread available: Step draws serially
        prefetch_noise_ = false;
        return;
      }
    }
    noise_->Request();  // drawn while the UNet runs
  }
}

Status StepWorkspace::Finish(Scheduler& sched, int step, const Tensor& unet_out,
                             std::vector<float>* latents) {
  TG_RETURN_IF_ERROR(ExpectShape(unet_out, out_shape_, "unet/model.onnx", unet_.output_name));
  // The (guided) output goes straight into the scheduler's model-output buffer: no copy of the
  // UNet output, and PNDM keeps that buffer as history instead of copying it again.
  const float* eps = nullptr;
  if (unet_out.dtype() == DataType::kFloat32) {
    const float* u = unet_out.data<float>();
    if (cfg_) {
      float* g = sched.ModelOutputBuffer(n_);
      Guide(u, u + n_, guidance_, g, n_);
      eps = g;
    } else {
      eps = u;
    }
  } else {
    const std::uint16_t* h = unet_out.data<std::uint16_t>();
    float* g = sched.ModelOutputBuffer(n_);
    if (!cfg_) {
      runtime::HalfToFloatN(h, g, n_);
    } else {
      GuideHalf(h, h + n_, guidance_, g, n_);
    }
    eps = g;
  }
  const float* drawn = noise_ ? noise_->Wait() : nullptr;
  TG_RETURN_IF_ERROR(sched.Step(eps, step, latents->data(), n_, rngs_, drawn));
  if (drawn != nullptr) noise_->Consumed();
  return Status::Ok();
}

namespace {

// The shape of one generation's work (one or several requests of equal BatchKey), derived once
// from the validated requests.
struct RunPlan {
  bool cfg = false;  // classifier-free guidance: [uncond; cond] in one UNet batch
  int batch = 1;     // images of all requests
  std::int64_t unet_batch = 1;
  int lh = 0, lw = 0;  // latent height and width (size / 8)
  std::size_t per_image = 0;
  std::size_t n = 0;             // latent floats of the whole batch
  std::vector<int> first_image;  // per request: index of its first image in the batch
};

RunPlan MakePlan(const std::vector<GenerateRequest>& reqs) {
  const GenerateRequest& req = reqs.front();
  RunPlan p;
  p.cfg = *req.guidance > 1.0;
  p.batch = 0;
  for (const auto& r : reqs) {
    p.first_image.push_back(p.batch);
    p.batch += r.batch;
  }
  p.unet_batch = (p.cfg ? 2 : 1) * p.batch;
  p.lh = req.height / 8;
  p.lw = req.width / 8;
  p.per_image = static_cast<std::size_t>(4) * p.lh * p.lw;
  p.n = p.per_image * static_cast<std::size_t>(p.batch);
  return p;
}

// Token ids of the prompt and negative prompt for each tokenizer (the second only for SDXL).
struct PromptIds {
  std::vector<std::int64_t> pos1, pos2, neg1, neg2;
  bool zero_negative = false;  // SDXL force_zeros_for_empty_prompt and no negative prompt given
};

// CLIP reads 77 ids; a longer text is cut, and the user is told how much of it was not read.
void WarnIfTruncated(const ClipTokenizer& tok, const char* what, const std::string& text,
                     std::vector<std::string>* warnings) {
  const std::size_t dropped = tok.DroppedTokens(text, kSeqLen);
  if (dropped == 0) return;
  warnings->push_back(
      std::string(what) + " is longer than the text encoder's " + std::to_string(kSeqLen) +
      " tokens: the last " + (dropped >= ClipTokenizer::kDroppedTokensCap ? "(at least) " : "") +
      std::to_string(dropped) + " token" + (dropped == 1 ? "" : "s") + " were dropped");
}

Result<PromptIds> TokenizePrompts(const SdModel& m, const GenerateRequest& req, bool cfg,
                                  std::vector<std::string>* warnings) {
  PromptIds ids;
  const bool sdxl = m.text_encoder_2.has_value();
  // diffusers' SDXL: zeros only when the negative prompt is absent (None); "" is encoded.
  ids.zero_negative = sdxl && m.force_zeros_for_empty_prompt && !req.negative_prompt.has_value();
  const std::string negative = req.negative_prompt.value_or("");
  TG_ASSIGN_OR_RETURN(ids.pos1, m.tokenizer->Encode(req.prompt, kSeqLen));
  WarnIfTruncated(*m.tokenizer, "prompt", req.prompt, warnings);
  if (sdxl) {
    TG_ASSIGN_OR_RETURN(ids.pos2, m.tokenizer_2->Encode(req.prompt, kSeqLen));
  }
  if (cfg && !ids.zero_negative) {
    TG_ASSIGN_OR_RETURN(ids.neg1, m.tokenizer->Encode(negative, kSeqLen));
    WarnIfTruncated(*m.tokenizer, "negative prompt", negative, warnings);
    if (sdxl) {
      TG_ASSIGN_OR_RETURN(ids.neg2, m.tokenizer_2->Encode(negative, kSeqLen));
    }
  }
  return ids;
}

// The conditioning of every image of the batch (pointers into EncodeText's cache).
struct ImageConditioning {
  std::vector<const Conditioning*> cond, uncond;  // [batch] each; uncond empty without cfg
};

// The constant conditioning inputs of the UNet, [uncond of each image; cond of each image]:
// context, and for SDXL text_embeds and time_ids. With one request this is its text tiled per
// image, as before batching existed.
Result<std::vector<NamedTensor>> ConditioningInputs(const SdModel& m, const GenerateRequest& req,
                                                    const RunPlan& p, const ImageConditioning& ic) {
  const auto& U = m.unet;
  const std::int64_t UB = p.unet_batch;
  const auto C = static_cast<std::int64_t>(ic.cond.front()->context.size() / kSeqLen);
  if (U.context_size > 0 && C != U.context_size) {
    return Status::InvalidArg("mismatched shapes: the text encoders produced width " +
                              std::to_string(C) + " but unet/model.onnx encoder_hidden_states " +
                              "expects " + std::to_string(U.context_size));
  }
  // Row b of the UNet batch: the negative text of image b (b < batch with cfg), else the prompt
  // of image b mod batch.
  const auto source = [&](std::int64_t b) {
    return (p.cfg && b < p.batch) ? ic.uncond[b] : ic.cond[b % p.batch];
  };
  const auto tiled = [&](std::vector<float> Conditioning::*field) {
    std::vector<float> v;
    v.reserve(static_cast<std::size_t>(UB) * (ic.cond.front()->*field).size());
    for (std::int64_t b = 0; b < UB; ++b) {
      const auto& src = source(b)->*field;
      v.insert(v.end(), src.begin(), src.end());
    }
    return v;
  };
  std::vector<NamedTensor> in(1);
  const std::vector<float> ctx = tiled(&Conditioning::context);
  in[0].name = U.context_name;
  FillFloatTensor(ctx.data(), ctx.size(), U.context_dtype, {UB, kSeqLen, C}, &in[0].tensor);
  if (U.text_embeds_name.empty()) return in;
  const auto P = static_cast<std::int64_t>(ic.cond.front()->text_embeds.size());
  if (U.text_embeds_size > 0 && P != U.text_embeds_size) {
    return Status::InvalidArg("mismatched shapes: text_encoder_2 text_embeds width " +
                              std::to_string(P) + " but unet/model.onnx text_embeds expects " +
                              std::to_string(U.text_embeds_size));
  }
  const std::vector<float> te = tiled(&Conditioning::text_embeds);
  // time_ids = original_size + crop top-left + target_size (diffusers' SDXL defaults).
  const auto h = static_cast<float>(req.height), w = static_cast<float>(req.width);
  std::vector<float> ids;
  for (std::int64_t b = 0; b < UB; ++b) ids.insert(ids.end(), {h, w, 0.0f, 0.0f, h, w});
  in.resize(3);
  in[1].name = U.text_embeds_name;
  FillFloatTensor(te.data(), te.size(), U.text_embeds_dtype, {UB, P}, &in[1].tensor);
  in[2].name = U.time_ids_name;
  FillFloatTensor(ids.data(), ids.size(), U.time_ids_dtype, {UB, 6}, &in[2].tensor);
  return in;
}

// Text encoder runs, once per distinct text of the whole batch (each at batch 1, as a request
// alone would run it); SDXL's absent negative is zeros when configured so.
Result<std::vector<NamedTensor>> EncodeText(const SdModel& m,
                                            const std::vector<GenerateRequest>& reqs,
                                            const RunPlan& p, const std::vector<PromptIds>& ids) {
  using Key = std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>;
  std::map<Key, Conditioning> cache;  // node-based: pointers stay valid
  std::deque<Conditioning> zeros;
  auto encode = [&](const std::vector<std::int64_t>& a,
                    const std::vector<std::int64_t>& b) -> Result<const Conditioning*> {
    Key key{a, b};
    if (auto it = cache.find(key); it != cache.end()) return &it->second;
    TG_ASSIGN_OR_RETURN(Conditioning c, EncodePrompt(m, a, b));
    return &cache.emplace(std::move(key), std::move(c)).first->second;
  };
  ImageConditioning ic;
  for (std::size_t r = 0; r < reqs.size(); ++r) {
    TG_ASSIGN_OR_RETURN(const Conditioning* cond, encode(ids[r].pos1, ids[r].pos2));
    const Conditioning* uncond = nullptr;
    if (p.cfg && ids[r].zero_negative) {
      Conditioning& z = zeros.emplace_back();
      z.context.assign(cond->context.size(), 0.0f);
      z.text_embeds.assign(cond->text_embeds.size(), 0.0f);
      uncond = &z;
    } else if (p.cfg) {
      TG_ASSIGN_OR_RETURN(uncond, encode(ids[r].neg1, ids[r].neg2));
    }
    for (int k = 0; k < reqs[r].batch; ++k) {
      ic.cond.push_back(cond);
      if (p.cfg) ic.uncond.push_back(uncond);
    }
  }
  return ConditioningInputs(m, reqs.front(), p, ic);
}

// One generator per image (kept for ancestral noise) and the initial latents they draw; image k
// of the batch is image k - first_image[r] of request r, with that request's seed.
Result<std::vector<Rng>> InitialLatents(const std::vector<GenerateRequest>& reqs, const RunPlan& p,
                                        double init_noise_sigma, std::vector<float>* latents) {
  std::vector<Rng> rngs;
  latents->assign(p.n, 0.0f);
  const auto sigma = static_cast<float>(init_noise_sigma);
  int k = 0;
  for (const GenerateRequest& req : reqs) {
    for (int i = 0; i < req.batch; ++i, ++k) {
      TG_ASSIGN_OR_RETURN(Rng rng, MakeRng(req.rng, req.seeds[i]));
      float* dst = latents->data() + p.per_image * k;
      rng.FillGaussian(dst, p.per_image);
      for (std::size_t j = 0; j < p.per_image; ++j) dst[j] *= sigma;
      rngs.push_back(std::move(rng));
    }
  }
  return rngs;
}

// One request of a running batch: its cancellation flag and its output.
struct Member {
  const std::atomic<bool>* cancel = nullptr;
  GenerateOutput* out = nullptr;
};

// Marks members whose flag is set as cancelled; returns how many still run.
int CheckCancelled(std::vector<Member>& members) {
  int alive = 0;
  for (Member& mb : members) {
    if (!mb.out->cancelled && mb.cancel != nullptr && mb.cancel->load(std::memory_order_relaxed)) {
      mb.out->cancelled = true;
    }
    alive += mb.out->cancelled ? 0 : 1;
  }
  return alive;
}

// The denoising loop. A member cancelled mid-batch stops counting steps and gets no images, but
// its rows keep running: the scheduler's state (PNDM/LMS history) spans the whole batch, and the
// other members' results must not depend on who left. The loop ends early only when every member
// is cancelled (or the progress callback says stop).
Status Denoise(const SdModel& m, Scheduler& sched, const RunPlan& p, float guidance,
               std::vector<NamedTensor> conditioning, std::vector<Rng>& rngs,
               std::vector<float>* latents, const ProgressCallback& progress,
               std::vector<Member>& members, StageTimings& tm) {
  const auto& U = m.unet;
  const int total = sched.num_steps();
  // Ancestral noise is drawn on the workspace's worker while the UNet runs only when the UNet runs
  // on a GPU: on the CPU (dev profile) ONNX Runtime's intra-op threads already occupy the cores,
  // and a competing worker made the full euler_a step slower, not faster (docs/PERFORMANCE.md).
  StepWorkspace ws(U, p.batch, p.cfg, guidance, p.lh, p.lw, std::span<Rng>(rngs),
                   /*prefetch_noise=*/!m.degraded());
  for (auto& t : conditioning) ws.inputs().push_back(std::move(t));
  std::vector<Tensor> unet_out;
  const std::vector<std::string> out_names{U.output_name};
  tm.unet_ms.reserve(total);
  tm.scheduler_ms.reserve(total);
  // Scheduler buffers are allocated and touched here, outside the timed steps.
  sched.Reserve(latents->size());
  for (int i = 0; i < total; ++i) {
    if (CheckCancelled(members) == 0) return Status::Ok();
    const auto h0 = Clock::now();
    ws.Prepare(sched, i, *latents);
    const auto h1 = Clock::now();
    unet_out.clear();
    TG_RETURN_IF_ERROR(U.session.Run(ws.inputs(), out_names, &unet_out));
    const auto h2 = Clock::now();
    TG_RETURN_IF_ERROR(ws.Finish(sched, i, unet_out[0], latents));
    const auto h3 = Clock::now();
    tm.unet_ms.push_back(Ms(h1, h2));
    tm.scheduler_ms.push_back(Ms(h0, h1) + Ms(h2, h3));
    for (Member& mb : members) {
      if (!mb.out->cancelled) mb.out->steps_done = i + 1;
    }
    if (progress &&
        !progress(StepProgress{i + 1, total, tm.unet_ms.back(), tm.scheduler_ms.back(),
                               latents->data(), static_cast<int>(p.lh), static_cast<int>(p.lw)})) {
      for (Member& mb : members) mb.out->cancelled = true;
      return Status::Ok();
    }
  }
  return Status::Ok();
}

// Whether `req` decodes in tiles (VaeTiling::kAuto: above kVaeTileAutoPixels).
bool Tiled(const GenerateRequest& req) {
  return req.vae_tiling == VaeTiling::kOn ||
         (req.vae_tiling == VaeTiling::kAuto &&
          static_cast<std::int64_t>(req.width) * req.height > kVaeTileAutoPixels);
}

// One VAE run over latents z [1, 4, lh, lw] into rgb [3, 8·lh, 8·lw].
Status RunVae(const VaeDecoderPart& V, const std::vector<float>& z, std::int64_t lh,
              std::int64_t lw, std::vector<float>* rgb) {
  std::vector<NamedTensor> in(1);
  in[0].name = V.latent_name;
  FillFloatTensor(z.data(), z.size(), V.latent_dtype, {1, 4, lh, lw}, &in[0].tensor);
  std::vector<Tensor> dec;
  TG_RETURN_IF_ERROR(V.session.Run(in, {V.output_name}, &dec));
  TG_RETURN_IF_ERROR(
      ExpectShape(dec[0], {1, 3, lh * 8, lw * 8}, "vae_decoder/model.onnx", V.output_name));
  rgb->resize(static_cast<std::size_t>(dec[0].element_count()));
  ReadFloats(dec[0], rgb->data());
  return Status::Ok();
}

// VAE decode one image at a time (the legacy pipeline does the same: fp16 VAEs misbehave
// batched), whole or in tiles, then the pixel conversion. `latents` points at the request's
// first image.
Status DecodeLatents(const SdModel& m, const GenerateRequest& req, const RunPlan& p,
                     const float* latents, GenerateOutput* out) {
  const auto& V = m.vae;
  const auto inv_scale = static_cast<float>(1.0 / V.scaling_factor);
  std::vector<float> z(p.per_image), rgb;
  const bool tiled = Tiled(req);
  auto tile = [&V](const std::vector<float>& zt, int th, int tw, std::vector<float>* px) {
    return RunVae(V, zt, th, tw, px);
  };
  for (int k = 0; k < req.batch; ++k) {
    const float* src = latents + p.per_image * k;
    for (std::size_t j = 0; j < p.per_image; ++j) z[j] = src[j] * inv_scale;
    if (tiled) {
      TG_RETURN_IF_ERROR(DecodeTiled(z.data(), p.lh, p.lw, tile, &rgb));
    } else {
      TG_RETURN_IF_ERROR(RunVae(V, z, p.lh, p.lw, &rgb));
    }
    GeneratedImage g;
    g.seed = req.seeds[k];
    g.image = DecodedToRgb(rgb.data(), req.width, req.height);
    out->images.push_back(std::move(g));
  }
  return Status::Ok();
}

}  // namespace

Status DescribeAndEncode(const GenerateRequest& req, GenerateOutput* out) {
  const auto t0 = Clock::now();
  GenerationParameters gp;
  gp.prompt = req.prompt;
  // Without guidance (<= 1) the negative prompt is not used, so the infotext does not claim it.
  if (out->guidance > 1.0) gp.negative_prompt = req.negative_prompt;
  gp.steps = req.steps;
  gp.sampler = std::string(A1111SamplerName(out->scheduler));
  gp.cfg_scale = out->guidance;
  gp.width = out->width;
  gp.height = out->height;
  gp.model_hash = req.model_hash;
  gp.model = req.model_name;
  gp.version = TruegreenVersion();
  for (auto& g : out->images) {
    gp.seed = g.seed;
    g.parameters = FormatInfotext(gp);
    if (req.encode_png) {
      TG_ASSIGN_OR_RETURN(g.png, EncodePng(g.image, {{"parameters", g.parameters}}));
    }
  }
  const double ms = Ms(t0, Clock::now());
  out->timings.png_ms += ms;
  out->timings.total_ms += ms;
  return Status::Ok();
}

Result<GenerateOutput> Pipeline::Generate(GenerateRequest request, const ProgressCallback& progress,
                                          const std::atomic<bool>* cancel) const {
  std::vector<GenerateRequest> one;
  one.push_back(std::move(request));
  const std::atomic<bool>* cancels[] = {cancel};
  TG_ASSIGN_OR_RETURN(std::vector<GenerateOutput> outs,
                      GenerateBatch(std::move(one), progress, cancels));
  return std::move(outs.front());
}

Result<std::vector<GenerateOutput>> Pipeline::GenerateBatch(
    std::vector<GenerateRequest> reqs, const ProgressCallback& progress,
    std::span<const std::atomic<bool>* const> cancels) const {
  const SdModel& m = model_;
  const auto t_start = Clock::now();
  TG_RETURN_IF_ERROR(ValidateBatch(m, reqs));
  if (!cancels.empty() && cancels.size() != reqs.size()) {
    return Status::InvalidArg("GenerateBatch: " + std::to_string(cancels.size()) +
                              " cancellation flags for " + std::to_string(reqs.size()) +
                              " requests");
  }
  const GenerateRequest& req0 = reqs.front();
  TG_ASSIGN_OR_RETURN(std::unique_ptr<Scheduler> sched,
                      CreateScheduler(req0.scheduler, m.scheduler_config));
  TG_RETURN_IF_ERROR(sched->SetTimesteps(req0.steps));
  std::vector<GenerateOutput> outs(reqs.size());
  std::vector<Member> members(reqs.size());
  for (std::size_t r = 0; r < reqs.size(); ++r) {
    outs[r].scheduler = std::string(sched->name());
    outs[r].guidance = *req0.guidance;
    outs[r].width = req0.width;
    outs[r].height = req0.height;
    members[r] = Member{cancels.empty() ? nullptr : cancels[r], &outs[r]};
  }
  StageTimings tm;
  const RunPlan plan = MakePlan(reqs);

  auto t0 = Clock::now();
  std::vector<PromptIds> ids;
  for (std::size_t r = 0; r < reqs.size(); ++r) {
    TG_ASSIGN_OR_RETURN(PromptIds pi, TokenizePrompts(m, reqs[r], plan.cfg, &outs[r].warnings));
    ids.push_back(std::move(pi));
  }
  auto t1 = Clock::now();
  TG_ASSIGN_OR_RETURN(std::vector<NamedTensor> conditioning, EncodeText(m, reqs, plan, ids));
  auto t2 = Clock::now();
  std::vector<float> latents;
  TG_ASSIGN_OR_RETURN(std::vector<Rng> rngs,
                      InitialLatents(reqs, plan, sched->init_noise_sigma(), &latents));
  auto t3 = Clock::now();
  tm.tokenize_ms = Ms(t0, t1);
  tm.encode_ms = Ms(t1, t2);
  tm.latents_ms = Ms(t2, t3);

  TG_RETURN_IF_ERROR(Denoise(m, *sched, plan, static_cast<float>(*req0.guidance),
                             std::move(conditioning), rngs, &latents, progress, members, tm));
  // Shared stages are reported in full to every request of the batch; decode and PNG are its own.
  for (std::size_t r = 0; r < reqs.size(); ++r) {
    GenerateOutput& out = outs[r];
    out.timings = tm;
    if (out.cancelled) {
      out.timings.total_ms = Ms(t_start, Clock::now());
      continue;
    }
    const auto t4 = Clock::now();
    TG_RETURN_IF_ERROR(DecodeLatents(m, reqs[r], plan,
                                     latents.data() + plan.per_image * plan.first_image[r], &out));
    const auto t5 = Clock::now();
    out.timings.decode_ms = Ms(t4, t5);
    out.timings.total_ms = Ms(t_start, t5);
    TG_RETURN_IF_ERROR(DescribeAndEncode(reqs[r], &out));  // adds its own time
  }
  return outs;
}

}  // namespace tg::sd
