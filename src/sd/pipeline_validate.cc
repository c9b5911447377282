// Request validation and batch keys of the pipeline (pipeline.h): every range check with the
// field, the value and the accepted range in its message, and what several requests must share to
// run as one UNet batch.
#include <cmath>
#include <cstdio>
#include <limits>

#include "sd/pipeline.h"
#include "sd/pipeline_internal.h"
#include "sd/scheduler.h"

namespace tg::sd {
namespace {

using common::Result;
using common::Status;

std::string Range(int lo, int hi) { return std::to_string(lo) + ".." + std::to_string(hi); }

Status ValidateFields(const SdModel& model, GenerateRequest* r) {
  if (r->prompt.size() > kMaxPromptBytes) {
    return Status::InvalidArg("prompt is " + std::to_string(r->prompt.size()) + " bytes; at most " +
                              std::to_string(kMaxPromptBytes) +
                              " bytes are accepted (CLIP reads only the first 75 tokens)");
  }
  if (r->negative_prompt && r->negative_prompt->size() > kMaxPromptBytes) {
    return Status::InvalidArg("negative prompt is " + std::to_string(r->negative_prompt->size()) +
                              " bytes; at most " + std::to_string(kMaxPromptBytes) +
                              " bytes are accepted");
  }
  if (r->steps < 1 || r->steps > kMaxSteps) {
    return Status::InvalidArg("steps " + std::to_string(r->steps) + " is out of range " +
                              Range(1, kMaxSteps));
  }
  if (r->width == 0) r->width = model.default_size;
  if (r->height == 0) r->height = model.default_size;
  TG_RETURN_IF_ERROR(CheckSide("width", r->width));
  TG_RETURN_IF_ERROR(CheckSide("height", r->height));
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
  for (std::size_t k = 0; k < r->seeds.size(); ++k) {
    if (!Rng::Create(r->rng, r->seeds[k]).ok()) return SeedRangeError(r->rng, r->seeds[k], k);
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

Status SeedRangeError(RngMode mode, std::uint64_t seed, std::size_t image) {
  // Each generator's range, so the reader sees which one takes the seed.
  return Status::InvalidArg("seed " + std::to_string(seed) +
                            (image > 0 ? " (image " + std::to_string(image) +
                                             "'s: the first seed + " + std::to_string(image) + ")"
                                       : std::string()) +
                            " is out of range for --rng " + std::string(RngModeName(mode)) +
                            ": required " + std::string(kSeedRangeText));
}

Result<Rng> MakeRng(RngMode mode, std::uint64_t seed) {
  auto rng = Rng::Create(mode, seed);
  if (!rng.ok()) return SeedRangeError(mode, seed, 0);
  return std::move(rng).value();
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

Status CheckSide(std::string_view name, int v) {
  const std::string rule = "a multiple of 8 in " + Range(kMinSide, kMaxSide) + " is required";
  if (v < kMinSide || v > kMaxSide) {
    return Status::InvalidArg(std::string(name) + " " + std::to_string(v) +
                              " is out of range: " + rule);
  }
  if (v % 8 != 0) {
    return Status::InvalidArg(std::string(name) + " " + std::to_string(v) +
                              " is not a multiple of 8 (latents are size/8): " + rule);
  }
  return Status::Ok();
}

Status ValidateRequest(const SdModel& model, GenerateRequest* r) {
  TG_RETURN_IF_ERROR(ValidateFields(model, r));
  auto sched = CreateScheduler(r->scheduler, model.scheduler_config);
  if (!sched.ok()) return sched.status();
  return (*sched)->SetTimesteps(r->steps);
}

// Validates every request and that they may share one UNet batch.
Status ValidateBatch(const SdModel& m, std::vector<GenerateRequest>& reqs) {
  if (reqs.empty()) return Status::InvalidArg("a generation needs at least one request");
  int images = 0;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    Status s = ValidateRequest(m, &reqs[i]);
    if (!s.ok()) return reqs.size() == 1 ? s : s.WithPrefix("request " + std::to_string(i));
    if (BatchKey(reqs[i]) != BatchKey(reqs[0])) {
      return Status::InvalidArg("request " + std::to_string(i) + " (" + BatchKey(reqs[i]) +
                                ") cannot share a UNet batch with request 0 (" + BatchKey(reqs[0]) +
                                "): size, steps, scheduler, guidance and " + "rng must be equal");
    }
    images += reqs[i].batch;
  }
  if (images > kMaxBatch) {
    return Status::InvalidArg("the batch holds " + std::to_string(images) + " images; at most " +
                              std::to_string(kMaxBatch) + " share one UNet batch");
  }
  std::vector<std::int64_t> ss = m.unet.sample_shape;
  ss.resize(4, -1);
  const std::int64_t unet_batch = (*reqs[0].guidance > 1.0 ? 2 : 1) * images;
  if (ss[0] > 0 && ss[0] != unet_batch) {
    return Status::InvalidArg("unet/model.onnx has a fixed batch of " + std::to_string(ss[0]) +
                              "; this batch of requests needs " + std::to_string(unet_batch));
  }
  return Status::Ok();
}

std::string BatchKey(const GenerateRequest& r) {
  char g[32];
  std::snprintf(g, sizeof(g), "%.17g", r.guidance.value_or(-1.0));
  return std::to_string(r.width) + "x" + std::to_string(r.height) +
         ",steps=" + std::to_string(r.steps) +
         ",scheduler=" + (r.scheduler.empty() ? "default" : r.scheduler) + ",guidance=" + g +
         ",rng=" + std::string(RngModeName(r.rng));
}

}  // namespace tg::sd
