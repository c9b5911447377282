// POST /v1/images/generations (OpenAI-compatible) and the SD warm-up and canary runs.
#include <ctime>

#include "common/strings.h"
#include "server/server_internal.h"

namespace tg::server {

using common::Json;
using common::Result;
using common::Status;

namespace {

// The fixed canary set: same prompts and seeds on every node, so latencies compare.
constexpr const char* kCanaryPrompts[] = {"a photo of a cat", "a red bicycle leaning on a wall",
                                          "a bowl of fruit on a wooden table"};

struct SdJob : ServerJob {
  sd::GenerateRequest req;
};

Status FieldType(const char* field, const char* want, const Json& v) {
  return Status::InvalidArg("field '" + std::string(field) + "' must be " + want + ", found " +
                            std::string(v.type_name()));
}

Status ParseSizeField(const Json& v, sd::GenerateRequest* r) {
  if (!v.is_string()) return FieldType("size", "a string \"WIDTHxHEIGHT\"", v);
  const std::string s = v.get<std::string>();
  const auto x = s.find('x');
  auto bad = [&] {
    return Status::InvalidArg(
        "field 'size' must be \"WIDTHxHEIGHT\" with sides 256..1024, "
        "multiples of 8 (e.g. \"512x512\")");
  };
  if (x == std::string::npos || x == 0 || x + 1 >= s.size() || s.size() > 9) return bad();
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i != x && (s[i] < '0' || s[i] > '9')) return bad();
  }
  r->width = std::stoi(s.substr(0, x));
  r->height = std::stoi(s.substr(x + 1));
  return Status::Ok();
}

Status IntField(const Json& body, const char* field, int lo, int hi, int* out) {
  if (!body.contains(field)) return Status::Ok();
  const Json& v = body[field];
  if (!v.is_number_integer()) return FieldType(field, "an integer", v);
  const auto n = v.get<std::int64_t>();
  if (n < lo || n > hi) {
    return Status::InvalidArg("field '" + std::string(field) + "' is " + std::to_string(n) +
                              ", accepted " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  *out = static_cast<int>(n);
  return Status::Ok();
}

Status StringField(const Json& body, const char* field, std::string* out) {
  if (!body.contains(field)) return Status::Ok();
  if (!body[field].is_string()) return FieldType(field, "a string", body[field]);
  *out = body[field].get<std::string>();
  return Status::Ok();
}

// Validates the OpenAI request body into a GenerateRequest (model-independent checks; the
// pipeline's ValidateRequest runs the model-dependent ones on the worker).
Status ParseImagesRequest(const Json& body, const Limits& limits, std::string* model,
                          sd::GenerateRequest* r) {
  if (!body.is_object()) return Status::InvalidArg("request body must be a JSON object");
  static const char* kKnown[] = {"prompt",
                                 "n",
                                 "size",
                                 "response_format",
                                 "model",
                                 "negative_prompt",
                                 "steps",
                                 "scheduler",
                                 "guidance_scale",
                                 "seed",
                                 "user"};
  for (const auto& [k, v] : body.items()) {
    if (std::find(std::begin(kKnown), std::end(kKnown), k) == std::end(kKnown)) {
      return Status::InvalidArg("unknown field '" + k.substr(0, 64) + "'");
    }
  }
  if (!body.contains("prompt")) return Status::InvalidArg("missing required field 'prompt'");
  if (!body["prompt"].is_string()) return FieldType("prompt", "a string", body["prompt"]);
  r->prompt = body["prompt"].get<std::string>();
  if (r->prompt.empty()) return Status::InvalidArg("field 'prompt' is empty");
  TG_RETURN_IF_ERROR(StringField(body, "model", model));
  TG_RETURN_IF_ERROR(StringField(body, "negative_prompt", &r->negative_prompt));
  TG_RETURN_IF_ERROR(StringField(body, "scheduler", &r->scheduler));
  TG_RETURN_IF_ERROR(IntField(body, "n", 1, limits.max_n, &r->batch));
  TG_RETURN_IF_ERROR(IntField(body, "steps", 1, limits.max_steps, &r->steps));
  if (!body.contains("steps")) r->steps = std::min(20, limits.max_steps);
  if (body.contains("size")) TG_RETURN_IF_ERROR(ParseSizeField(body["size"], r));
  if (body.contains("response_format")) {
    const Json& f = body["response_format"];
    if (!f.is_string()) return FieldType("response_format", "a string", f);
    if (f.get<std::string>() != "b64_json") {
      return Status::InvalidArg(
          "field 'response_format' must be \"b64_json\" (this server keeps "
          "no image store, so \"url\" is not offered)");
    }
  }
  if (body.contains("guidance_scale")) {
    const Json& g = body["guidance_scale"];
    if (!g.is_number()) return FieldType("guidance_scale", "a number", g);
    r->guidance = g.get<double>();
  }
  if (body.contains("seed")) {
    const Json& s = body["seed"];
    if (!s.is_number_unsigned() && !(s.is_number_integer() && s.get<std::int64_t>() >= 0)) {
      return FieldType("seed", "a non-negative integer", s);
    }
    r->seed = s.get<std::uint64_t>();
  }
  r->encode_png = true;
  return sd::ValidateRequestBasics(*r);
}

// The 200 body, written straight into one string: each PNG is Base64-encoded in place, never
// copied into a JSON value and re-escaped (that cost 1-6 ms per 512² image, issue 11 "Speed").
// Same bytes as nlohmann's dump of the object (keys in its sorted order; Base64, digits and the
// size need no escaping; model and scheduler go through the JSON serializer).
std::string ImagesBody(const sd::GenerateOutput& out, const std::string& model, int steps,
                       bool degraded) {
  auto quoted = [](const std::string& s) {
    return Json(s).dump(-1, ' ', false, Json::error_handler_t::replace);
  };
  std::size_t reserve = 256 + model.size() + out.scheduler.size();
  for (const auto& im : out.images) reserve += 4 * ((im.png.size() + 2) / 3) + 48;
  std::string b;
  b.reserve(reserve);
  b += "{\"created\":";
  b += std::to_string(static_cast<std::int64_t>(std::time(nullptr)));
  b += ",\"data\":[";
  for (std::size_t i = 0; i < out.images.size(); ++i) {
    b += i == 0 ? "{\"b64_json\":\"" : ",{\"b64_json\":\"";
    common::AppendBase64(out.images[i].png, &b);
    b += "\",\"seed\":";
    b += std::to_string(out.images[i].seed);
    b += "}";
  }
  b += "],\"degraded\":";
  b += degraded ? "true" : "false";
  b += ",\"model\":" + quoted(model);
  b += ",\"scheduler\":" + quoted(out.scheduler);
  b += ",\"size\":\"" + std::to_string(out.width) + "x" + std::to_string(out.height);
  b += "\",\"steps\":" + std::to_string(steps) + "}";
  return b;
}

}  // namespace

void Server::HandleImages(const HttpRequest& req, std::shared_ptr<RequestCtx> ctx,
                          Responder respond) {
  auto done = [&](HttpResponse r) { Finish(ctx, respond, std::move(r)); };
  Json body = Json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return done(Error(400, "request body is not valid JSON (UTF-8)"));
  auto job = std::make_shared<SdJob>();
  std::string model;
  if (Status s = ParseImagesRequest(body, config_.limits, &model, &job->req); !s.ok()) {
    return done(Error(common::HttpStatusFromStatus(s), s.message()));
  }
  if (!started_.load()) return done(Error(503, "not ready: " + NotReadyReason()));
  ModelRuntime* mr = nullptr;
  if (model.empty()) {
    for (const auto& [name, m] : models_) {
      if (m->model->sd) {
        if (mr) return done(Error(400, "several image models are served: name one in 'model'"));
        mr = m.get();
      }
    }
    if (!mr) return done(Error(404, "no image model is served"));
  } else {
    mr = FindModel(model);
    if (!mr || !mr->model->sd) {
      return done(Error(404, "no image model named '" + model.substr(0, 64) + "'"));
    }
  }
  ctx->model = mr->model->spec.name;
  if (Status s = sd::ValidateRequest(*mr->model->sd, &job->req); !s.ok()) {
    return done(Error(common::HttpStatusFromStatus(s), s.message()));
  }
  const sd::GenerateRequest& g = job->req;
  const double units = static_cast<double>(g.width) * g.height * g.steps / 50.0 * g.batch;
  Lane* lane = mr->lanes[units > config_.limits.large_pixels ? 1 : 0].get();
  job->ctx = ctx;
  job->respond = respond;
  job->enqueued = Clock::now();
  job->deadline = job->enqueued + std::chrono::milliseconds(config_.limits.deadline_ms);
  // Requests share a UNet batch only when size, steps, scheduler, guidance and rng agree; a UNet
  // exported with a fixed batch runs every request alone.
  const auto& ss = mr->model->sd->unet.sample_shape;
  const bool fixed_batch = !ss.empty() && ss[0] > 0;
  job->batch_key = fixed_batch ? "solo:" + ctx->id : sd::BatchKey(g);
  job->units = g.batch;  // the lane's max_batch counts images
  if (!lane->Submit(job)) {
    HttpResponse r = Error(
        429, "queue of model " + ctx->model + " (" + lane->name() + " lane) is full: retry later");
    r.headers.emplace_back("Retry-After", "1");
    return done(std::move(r));
  }
}

// Runs the lane's batch as one generation (one UNet batch of every request's images). Each
// request keeps its deadline: when it passes between steps the request is answered 504 at once
// and cancelled in the pipeline (its rows finish with the others, nobody waits on it); the
// generation stops early only when every request of the batch has been answered.
void Server::RunSdJobs(ModelRuntime* mr, std::vector<std::shared_ptr<Job>>& jobs) {
  std::vector<SdJob*> sd_jobs;
  std::vector<sd::GenerateRequest> reqs;
  std::vector<const std::atomic<bool>*> cancels;
  for (auto& j : jobs) {
    sd_jobs.push_back(static_cast<SdJob*>(j.get()));
    reqs.push_back(sd_jobs.back()->req);
    cancels.push_back(&sd_jobs.back()->cancel);
    sd_jobs.back()->ctx->queue_ms = MsSince(sd_jobs.back()->enqueued);
  }
  const std::string model = sd_jobs.front()->ctx->model;
  const Labels lb = {{"model", model}};
  std::vector<bool> answered(jobs.size(), false);
  auto deadline_error = [this](int steps_done) {
    return Error(504, "deadline of " + std::to_string(config_.limits.deadline_ms) +
                          " ms passed after " + std::to_string(steps_done) +
                          " denoising steps; the generation was cancelled");
  };
  const auto t0 = Clock::now();
  auto progress = [&](const sd::StepProgress& p) {
    metrics_.Observe("truegreen_denoise_step_duration_seconds", lb, p.unet_ms / 1e3);
    const auto now = Clock::now();
    bool any_left = false;
    for (std::size_t i = 0; i < sd_jobs.size(); ++i) {
      if (answered[i]) continue;
      if (now >= sd_jobs[i]->deadline) {
        sd_jobs[i]->cancel.store(true);  // the pipeline drops its images from here on
        answered[i] = true;
        sd_jobs[i]->ctx->compute_ms = MsSince(t0);
        Finish(sd_jobs[i]->ctx, sd_jobs[i]->respond, deadline_error(p.step));
        continue;
      }
      any_left = true;
    }
    return any_left;
  };
  auto outs = mr->model->pipeline->GenerateBatch(reqs, progress, cancels);
  const double compute_ms = MsSince(t0);
  // Triton semantics: one execution per batch; inference count = images of answered requests.
  metrics_.Add("nv_inference_exec_count", lb);
  metrics_.Observe("truegreen_batch_size", lb, static_cast<double>(jobs.size()));
  for (std::size_t i = 0; i < sd_jobs.size(); ++i) {
    if (answered[i]) continue;
    SdJob* job = sd_jobs[i];
    RequestCtx& ctx = *job->ctx;
    ctx.compute_ms = compute_ms;
    if (!outs.ok()) {
      Finish(job->ctx, job->respond,
             Error(common::HttpStatusFromStatus(outs.status()), outs.status().message()));
      continue;
    }
    const sd::GenerateOutput& out = (*outs)[i];
    if (out.cancelled) {
      Finish(job->ctx, job->respond, deadline_error(out.steps_done));
      continue;
    }
    ctx.items = static_cast<int>(out.images.size());
    metrics_.Add("nv_inference_count", lb, ctx.items);
    metrics_.Add("truegreen_images_generated_total", lb, ctx.items);
    HttpResponse r;
    r.body = ImagesBody(out, ctx.model, job->req.steps, mr->model->degraded());
    Finish(job->ctx, job->respond, std::move(r));
  }
}

Result<double> Server::TimeSdCanaryRun(ModelRuntime* mr, int index) {
  sd::GenerateRequest r;
  r.prompt = kCanaryPrompts[index % 3];
  r.seed = static_cast<std::uint64_t>(index);
  r.steps = config_.canary.steps;
  r.width = r.height = config_.canary.size ? config_.canary.size : 256;
  r.encode_png = false;
  const auto t0 = Clock::now();
  auto out = mr->model->pipeline->Generate(r);
  if (!out.ok()) return out.status();
  if (out->images.size() != 1 || out->images[0].image.pixels.empty()) {
    return Status::Internal("the canary generation produced no image");
  }
  return MsSince(t0);
}

Status Server::WarmupSd(ModelRuntime* mr) {
  // One generation at the canary size pays the first-run costs (allocator, cuDNN/TensorRT
  // tactics) of every session before anything is timed.
  auto ms = TimeSdCanaryRun(mr, 0);
  return ms.ok() ? Status::Ok() : ms.status();
}

}  // namespace tg::server
