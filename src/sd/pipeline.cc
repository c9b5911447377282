// The denoising loop. Host work per step is kept to a few linear passes over the latents (fill
// the UNet input in place, guidance, scheduler step) with buffers allocated once per request, so
// it stays a small fraction of even a tiny UNet's run time (see bench/sd_step_bench.cc).
#include "sd/pipeline.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>

#include "sd/scheduler.h"

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
    std::uint16_t* dst = t->data<std::uint16_t>();
    for (std::size_t i = 0; i < n; ++i) dst[i] = runtime::FloatToHalf(src[i]);
  }
}

// Copies a float32/float16 tensor into dst (t.element_count() floats).
void ReadFloats(const Tensor& t, float* dst) {
  const auto n = static_cast<std::size_t>(t.element_count());
  if (t.dtype() == DataType::kFloat32) {
    std::memcpy(dst, t.data<float>(), n * sizeof(float));
  } else {
    const std::uint16_t* src = t.data<std::uint16_t>();
    for (std::size_t i = 0; i < n; ++i) dst[i] = runtime::HalfToFloat(src[i]);
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

Result<Rng> MakeRng(RngMode mode, std::uint64_t seed) {
  auto rng = Rng::Create(mode, seed);
  if (!rng.ok()) {
    return Status::InvalidArg("seed " + std::to_string(seed) + " is not usable with --rng " +
                              std::string(RngModeName(mode)) + ": " + rng.status().message());
  }
  return std::move(rng).value();
}

std::string Range(int lo, int hi) { return std::to_string(lo) + ".." + std::to_string(hi); }

Status ValidateFields(const SdModel& model, GenerateRequest* r);

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

Status ValidateRequestBasics(const GenerateRequest& req) {
  GenerateRequest r = req;
  if (r.width == 0) r.width = kMinSide;
  if (r.height == 0) r.height = kMinSide;
  if (!r.guidance) r.guidance = 1.0;
  SdModel empty;
  TG_RETURN_IF_ERROR(ValidateFields(empty, &r));
  if (!r.scheduler.empty()) {
    // Unknown names are rejected before any model is loaded; config-dependent problems
    // (unsupported options of the model's scheduler_config) are found by ValidateRequest.
    auto sched = CreateScheduler(r.scheduler, SchedulerConfig{});
    if (!sched.ok() && sched.status().code() == common::StatusCode::kInvalidArg) {
      return sched.status();
    }
  }
  return Status::Ok();
}

Status ValidateRequest(const SdModel& model, GenerateRequest* r) {
  TG_RETURN_IF_ERROR(ValidateFields(model, r));
  auto sched = CreateScheduler(r->scheduler, model.scheduler_config);
  if (!sched.ok()) return sched.status();
  return (*sched)->SetTimesteps(r->steps);
}

namespace {

Status ValidateFields(const SdModel& model, GenerateRequest* r) {
  if (r->prompt.size() > kMaxPromptBytes) {
    return Status::InvalidArg("prompt is " + std::to_string(r->prompt.size()) + " bytes; at most " +
                              std::to_string(kMaxPromptBytes) +
                              " bytes are accepted (CLIP reads only the first 75 tokens)");
  }
  if (r->negative_prompt.size() > kMaxPromptBytes) {
    return Status::InvalidArg("negative prompt is " + std::to_string(r->negative_prompt.size()) +
                              " bytes; at most " + std::to_string(kMaxPromptBytes) +
                              " bytes are accepted");
  }
  if (r->steps < 1 || r->steps > kMaxSteps) {
    return Status::InvalidArg("steps " + std::to_string(r->steps) + " is out of range " +
                              Range(1, kMaxSteps));
  }
  if (r->width == 0) r->width = model.default_size;
  if (r->height == 0) r->height = model.default_size;
  for (auto [name, v] : {std::pair<const char*, int>{"width", r->width}, {"height", r->height}}) {
    if (v < kMinSide || v > kMaxSide || v % 8 != 0) {
      return Status::InvalidArg(std::string(name) + " " + std::to_string(v) +
                                " is not allowed: a multiple of 8 in " + Range(kMinSide, kMaxSide) +
                                " is required");
    }
  }
  std::vector<std::int64_t> ss = model.unet.sample_shape;
  ss.resize(4, -1);  // no model yet (ValidateRequestBasics): nothing is fixed
  if ((ss[2] > 0 && ss[2] != r->height / 8) || (ss[3] > 0 && ss[3] != r->width / 8)) {
    return Status::InvalidArg("size " + std::to_string(r->width) + "x" + std::to_string(r->height) +
                              " does not fit unet/model.onnx, whose " +
                              "sample input is fixed at " + runtime::ShapeToString(ss) +
                              " (latents are size/8)");
  }
  if (r->batch < 1 || r->batch > kMaxBatch) {
    return Status::InvalidArg("batch " + std::to_string(r->batch) + " is out of range " +
                              Range(1, kMaxBatch));
  }
  if (!r->guidance) r->guidance = model.default_guidance;
  if (!std::isfinite(*r->guidance) || *r->guidance < 0.0 || *r->guidance > 100.0) {
    return Status::InvalidArg("guidance " + std::to_string(*r->guidance) +
                              " is out of range 0..100");
  }
  if (r->seeds.empty()) {
    for (int k = 0; k < r->batch; ++k) {
      if (r->seed > std::numeric_limits<std::uint64_t>::max() - static_cast<std::uint64_t>(k)) {
        return Status::InvalidArg("seed " + std::to_string(r->seed) + " + image index overflows");
      }
      r->seeds.push_back(r->seed + static_cast<std::uint64_t>(k));
    }
  } else if (static_cast<int>(r->seeds.size()) != r->batch) {
    return Status::InvalidArg(std::to_string(r->seeds.size()) + " seeds given for batch " +
                              std::to_string(r->batch) + "; one seed per image is required");
  }
  for (std::uint64_t s : r->seeds) {
    TG_RETURN_IF_ERROR(MakeRng(r->rng, s).status());
  }
  const std::int64_t unet_batch = (*r->guidance > 1.0 ? 2 : 1) * r->batch;
  if (ss[0] > 0 && ss[0] != unet_batch) {
    return Status::InvalidArg("unet/model.onnx has a fixed batch of " + std::to_string(ss[0]) +
                              "; this request needs " + std::to_string(unet_batch) +
                              " (images x 2 with guidance > 1)");
  }
  return Status::Ok();
}

}  // namespace

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

StepWorkspace::StepWorkspace(const UnetPart& unet, int images, bool cfg, float guidance,
                             int latent_h, int latent_w)
    : unet_(unet),
      cfg_(cfg),
      guidance_(guidance),
      unet_batch_((cfg ? 2 : 1) * images),
      n_(static_cast<std::size_t>(4) * latent_h * latent_w * images),
      out_shape_{unet_batch_, 4, latent_h, latent_w} {
  inputs_.push_back({unet.sample_name, Tensor(unet.sample_dtype, out_shape_)});
  inputs_.push_back({unet.timestep_name, Tensor()});
  if (unet.sample_dtype != DataType::kFloat32) scratch_.resize(n_);
  pred_.resize(n_ * (cfg ? 2 : 1));
  if (cfg) guided_.resize(n_);
}

void StepWorkspace::Prepare(const Scheduler& sched, int step, const std::vector<float>& latents) {
  // Sample input: [x; x] scaled by the scheduler, written straight into the input tensor.
  Tensor& sample = inputs_[0].tensor;
  if (unet_.sample_dtype == DataType::kFloat32) {
    float* x = sample.data<float>();
    std::memcpy(x, latents.data(), n_ * sizeof(float));
    sched.ScaleModelInput(x, n_, step);
    if (cfg_) std::memcpy(x + n_, x, n_ * sizeof(float));
  } else {
    std::memcpy(scratch_.data(), latents.data(), n_ * sizeof(float));
    sched.ScaleModelInput(scratch_.data(), n_, step);
    std::uint16_t* x = sample.data<std::uint16_t>();
    for (std::size_t j = 0; j < n_; ++j) x[j] = runtime::FloatToHalf(scratch_[j]);
    if (cfg_) std::memcpy(x + n_, x, n_ * sizeof(std::uint16_t));
  }
  FillTimestep(unet_, sched.timesteps()[step], unet_batch_, &inputs_[1].tensor);
}

Status StepWorkspace::Finish(Scheduler& sched, int step, const Tensor& unet_out,
                             std::vector<float>* latents, std::span<Rng> rngs) {
  TG_RETURN_IF_ERROR(ExpectShape(unet_out, out_shape_, "unet/model.onnx", unet_.output_name));
  ReadFloats(unet_out, pred_.data());
  const float* eps = pred_.data();
  if (cfg_) {
    // noise = uncond + g * (cond - uncond), in float32 like diffusers' numpy pipeline.
    const float* u = pred_.data();
    const float* c = pred_.data() + n_;
    for (std::size_t j = 0; j < n_; ++j) guided_[j] = u[j] + guidance_ * (c[j] - u[j]);
    eps = guided_.data();
  }
  return sched.Step(eps, step, latents->data(), n_, rngs);
}

Result<GenerateOutput> Pipeline::Generate(GenerateRequest req, const ProgressCallback& progress,
                                          const std::atomic<bool>* cancel) const {
  const SdModel& m = model_;
  const auto t_start = Clock::now();
  TG_RETURN_IF_ERROR(ValidateRequest(m, &req));
  TG_ASSIGN_OR_RETURN(std::unique_ptr<Scheduler> sched,
                      CreateScheduler(req.scheduler, m.scheduler_config));
  TG_RETURN_IF_ERROR(sched->SetTimesteps(req.steps));

  GenerateOutput out;
  out.scheduler = std::string(sched->name());
  out.guidance = *req.guidance;
  out.width = req.width;
  out.height = req.height;
  StageTimings& tm = out.timings;
  const bool cfg = *req.guidance > 1.0;
  const int B = req.batch;
  const std::int64_t UB = (cfg ? 2 : 1) * B;
  const int lh = req.height / 8, lw = req.width / 8;
  const std::size_t per_image = static_cast<std::size_t>(4) * lh * lw;
  const std::size_t n = per_image * B;

  // Tokenize.
  auto t0 = Clock::now();
  const bool sdxl = m.text_encoder_2.has_value();
  const bool zero_negative = sdxl && m.force_zeros_for_empty_prompt && req.negative_prompt.empty();
  std::vector<std::int64_t> pos1, pos2, neg1, neg2;
  TG_ASSIGN_OR_RETURN(pos1, m.tokenizer->Encode(req.prompt, kSeqLen));
  if (sdxl) {
    TG_ASSIGN_OR_RETURN(pos2, m.tokenizer_2->Encode(req.prompt, kSeqLen));
  }
  if (cfg && !zero_negative) {
    TG_ASSIGN_OR_RETURN(neg1, m.tokenizer->Encode(req.negative_prompt, kSeqLen));
    if (sdxl) {
      TG_ASSIGN_OR_RETURN(neg2, m.tokenizer_2->Encode(req.negative_prompt, kSeqLen));
    }
  }
  auto t1 = Clock::now();
  tm.tokenize_ms = Ms(t0, t1);

  // Encode: once per distinct text, then tiled [uncond × B; cond × B].
  TG_ASSIGN_OR_RETURN(Conditioning cond, EncodePrompt(m, pos1, pos2));
  Conditioning uncond;
  if (cfg) {
    if (zero_negative) {
      uncond.context.assign(cond.context.size(), 0.0f);
      uncond.text_embeds.assign(cond.text_embeds.size(), 0.0f);
    } else {
      TG_ASSIGN_OR_RETURN(uncond, EncodePrompt(m, neg1, neg2));
    }
  }
  const auto C = static_cast<std::int64_t>(cond.context.size() / kSeqLen);
  if (m.unet.context_size > 0 && C != m.unet.context_size) {
    return Status::InvalidArg("mismatched shapes: the text encoders produced width " +
                              std::to_string(C) + " but unet/model.onnx encoder_hidden_states " +
                              "expects " + std::to_string(m.unet.context_size));
  }
  const auto& U = m.unet;
  std::vector<NamedTensor> unet_in;  // the conditioning inputs (constant over the steps)
  {
    std::vector<float> ctx;
    ctx.reserve(static_cast<std::size_t>(UB) * cond.context.size());
    for (std::int64_t b = 0; b < UB; ++b) {
      const auto& src = (cfg && b < B) ? uncond.context : cond.context;
      ctx.insert(ctx.end(), src.begin(), src.end());
    }
    Tensor t;
    FillFloatTensor(ctx.data(), ctx.size(), U.context_dtype, {UB, kSeqLen, C}, &t);
    unet_in.push_back({U.context_name, std::move(t)});
  }
  if (!U.text_embeds_name.empty()) {
    const auto P = static_cast<std::int64_t>(cond.text_embeds.size());
    if (U.text_embeds_size > 0 && P != U.text_embeds_size) {
      return Status::InvalidArg("mismatched shapes: text_encoder_2 text_embeds width " +
                                std::to_string(P) + " but unet/model.onnx text_embeds expects " +
                                std::to_string(U.text_embeds_size));
    }
    std::vector<float> te, ids;
    for (std::int64_t b = 0; b < UB; ++b) {
      const auto& src = (cfg && b < B) ? uncond.text_embeds : cond.text_embeds;
      te.insert(te.end(), src.begin(), src.end());
      // time_ids = original_size + crop top-left + target_size (diffusers' SDXL defaults).
      const auto h = static_cast<float>(req.height), w = static_cast<float>(req.width);
      ids.insert(ids.end(), {h, w, 0.0f, 0.0f, h, w});
    }
    Tensor t1t, t2t;
    FillFloatTensor(te.data(), te.size(), U.text_embeds_dtype, {UB, P}, &t1t);
    FillFloatTensor(ids.data(), ids.size(), U.time_ids_dtype, {UB, 6}, &t2t);
    unet_in.push_back({U.text_embeds_name, std::move(t1t)});
    unet_in.push_back({U.time_ids_name, std::move(t2t)});
  }
  auto t2 = Clock::now();
  tm.encode_ms = Ms(t1, t2);

  // Initial latents: one generator per image, kept for ancestral noise.
  std::vector<Rng> rngs;
  std::vector<float> latents(n);
  const auto init_sigma = static_cast<float>(sched->init_noise_sigma());
  for (int k = 0; k < B; ++k) {
    TG_ASSIGN_OR_RETURN(Rng rng, MakeRng(req.rng, req.seeds[k]));
    float* dst = latents.data() + per_image * k;
    rng.FillGaussian(dst, per_image);
    for (std::size_t i = 0; i < per_image; ++i) dst[i] *= init_sigma;
    rngs.push_back(std::move(rng));
  }
  auto t3 = Clock::now();
  tm.latents_ms = Ms(t2, t3);

  // Denoising loop.
  const int total = sched->num_steps();
  StepWorkspace ws(U, B, cfg, static_cast<float>(*req.guidance), lh, lw);
  for (auto& t : unet_in) {
    if (t.name != U.sample_name && t.name != U.timestep_name) ws.inputs().push_back(std::move(t));
  }
  unet_in.clear();
  std::vector<Tensor> unet_out;
  const std::vector<std::string> out_names{U.output_name};
  tm.unet_ms.reserve(total);
  tm.scheduler_ms.reserve(total);
  for (int i = 0; i < total; ++i) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
      out.cancelled = true;
      break;
    }
    const auto h0 = Clock::now();
    ws.Prepare(*sched, i, latents);
    const auto h1 = Clock::now();
    unet_out.clear();
    TG_RETURN_IF_ERROR(U.session.Run(ws.inputs(), out_names, &unet_out));
    const auto h2 = Clock::now();
    TG_RETURN_IF_ERROR(ws.Finish(*sched, i, unet_out[0], &latents, std::span<Rng>(rngs)));
    const auto h3 = Clock::now();
    tm.unet_ms.push_back(Ms(h1, h2));
    tm.scheduler_ms.push_back(Ms(h0, h1) + Ms(h2, h3));
    out.steps_done = i + 1;
    if (progress) {
      StepProgress p{i + 1, total, tm.unet_ms.back(), tm.scheduler_ms.back()};
      if (!progress(p)) {
        out.cancelled = true;
        break;
      }
    }
  }
  if (out.cancelled) {
    tm.total_ms = Ms(t_start, Clock::now());
    return out;
  }

  // Decode one image at a time (the legacy pipeline does the same: fp16 VAEs misbehave batched).
  auto t4 = Clock::now();
  const auto& V = m.vae;
  const auto inv_scale = static_cast<float>(1.0 / V.scaling_factor);
  std::vector<float> z(per_image), rgb(static_cast<std::size_t>(3) * req.width * req.height);
  const std::vector<std::int64_t> vae_out_shape{1, 3, req.height, req.width};
  for (int k = 0; k < B; ++k) {
    const float* src = latents.data() + per_image * k;
    for (std::size_t j = 0; j < per_image; ++j) z[j] = src[j] * inv_scale;
    std::vector<NamedTensor> in(1);
    in[0].name = V.latent_name;
    FillFloatTensor(z.data(), z.size(), V.latent_dtype, {1, 4, lh, lw}, &in[0].tensor);
    std::vector<Tensor> dec;
    TG_RETURN_IF_ERROR(V.session.Run(in, {V.output_name}, &dec));
    TG_RETURN_IF_ERROR(ExpectShape(dec[0], vae_out_shape, "vae_decoder/model.onnx", V.output_name));
    ReadFloats(dec[0], rgb.data());
    GeneratedImage g;
    g.seed = req.seeds[k];
    g.image = DecodedToRgb(rgb.data(), req.width, req.height);
    out.images.push_back(std::move(g));
  }
  auto t5 = Clock::now();
  tm.decode_ms = Ms(t4, t5);
  if (req.encode_png) {
    for (auto& g : out.images) {
      TG_ASSIGN_OR_RETURN(g.png, EncodePng(g.image));
    }
  }
  auto t6 = Clock::now();
  tm.png_ms = Ms(t5, t6);
  tm.total_ms = Ms(t_start, t6);
  return out;
}

}  // namespace tg::sd
