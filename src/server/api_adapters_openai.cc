// POST /v1/images/generations and GET /v1/models (OpenAI-compatible), the image store's GET, and
// the SD warm-up and canary runs.
#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>

#include "common/json_writer.h"
#include "common/strings.h"
#include "sd/pipeline.h"
#include "server/api_adapters.h"

namespace tg::server {

using common::Json;
using common::Result;
using common::Status;

namespace {

// The fixed canary set: same prompts and seeds on every node, so latencies compare.
constexpr const char* kCanaryPrompts[] = {"a photo of a cat", "a red bicycle leaning on a wall",
                                          "a bowl of fruit on a wooden table"};

// What the request asked for besides the generation itself (CreateImageRequest).
struct ImagesOptions {
  std::string model;  // "" = the served image model
  bool url = true;    // response_format (the API's default is "url")
  bool stream = false;
  int partial_images = 0;
  bool size_auto = true;  // no size, null or "auto": the model's native size
};

struct SdJob : ServerJob {
  sd::GenerateRequest req;
  ImagesOptions opt;
  std::string base_url;  // scheme://host of the request, for response_format "url"
  // Streaming with partial_images: previews sent so far, the last step seen (a request above
  // sd::kMaxBatch images previews its first part only), and whether the head went out.
  int previews_sent = 0;
  int last_step = 0;
  bool stream_started = false;
};

using ParseError = std::optional<ApiError>;

ApiError Invalid(const std::string& field, std::string message, const char* code) {
  return ApiError::From(Status::InvalidArg(std::move(message)), field, code);
}

ApiError WrongType(const std::string& field, const char* want, const Json& v) {
  return Invalid(field, "field '" + field + "' must be " + want + ", found " + v.type_name(),
                 "invalid_type");
}

// The value of `field`, or nullptr when absent or null (both mean the default).
const Json* Field(const Json& body, const char* field) {
  auto it = body.find(field);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

// A string field whose value must be one of `supported` (the ones this server honours).
ParseError EnumField(const Json& body, const char* field,
                     std::initializer_list<const char*> supported, std::string* out) {
  const Json* v = Field(body, field);
  if (!v) return std::nullopt;
  if (!v->is_string()) return WrongType(field, "a string", *v);
  const std::string& s = v->get_ref<const std::string&>();
  std::string list;
  for (const char* ok : supported) {
    if (s == ok) {
      *out = s;
      return std::nullopt;
    }
    list += std::string(list.empty() ? "" : ", ") + "\"" + ok + "\"";
  }
  return Invalid(field,
                 "field '" + std::string(field) + "' is " +
                     common::WriteJson(Json(s.substr(0, 64)), -1, common::JsonNotice::kNone) +
                     "; this server supports " + list,
                 "invalid_value");
}

ParseError IntField(const Json& body, const char* field, int lo, int hi, int* out) {
  const Json* v = Field(body, field);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) return WrongType(field, "an integer", *v);
  const auto n = v->get<std::int64_t>();
  if (n < lo || n > hi) {
    return Invalid(field,
                   "field '" + std::string(field) + "' is " + std::to_string(n) + ", accepted " +
                       std::to_string(lo) + ".." + std::to_string(hi),
                   "invalid_value");
  }
  *out = static_cast<int>(n);
  return std::nullopt;
}

ParseError StringField(const Json& body, const char* field, std::string* out) {
  const Json* v = Field(body, field);
  if (!v) return std::nullopt;
  if (!v->is_string()) return WrongType(field, "a string", *v);
  *out = v->get<std::string>();
  return std::nullopt;
}

ParseError SizeField(const Json& body, sd::GenerateRequest* r, ImagesOptions* o) {
  const Json* v = Field(body, "size");
  if (!v) return std::nullopt;
  if (!v->is_string()) return WrongType("size", "a string \"WIDTHxHEIGHT\" or \"auto\"", *v);
  const std::string& s = v->get_ref<const std::string&>();
  if (s == "auto") return std::nullopt;
  const std::string limits =
      "\"auto\" (the model's native size) or \"WIDTHxHEIGHT\" with each "
      "side a multiple of 8 in " +
      std::to_string(sd::kMinSide) + ".." + std::to_string(sd::kMaxSide) + " (e.g. \"512x512\")";
  auto bad = [&] {
    return Invalid("size",
                   "field 'size' is " +
                       common::WriteJson(Json(s.substr(0, 32)), -1, common::JsonNotice::kNone) +
                       "; accepted: " + limits,
                   "invalid_value");
  };
  const auto x = s.find('x');
  // At most 5 digits a side (the limit is 4), so the conversion below cannot overflow.
  if (x == std::string::npos || x == 0 || x > 5 || x + 1 >= s.size() || s.size() - x - 1 > 5) {
    return bad();
  }
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i != x && (s[i] < '0' || s[i] > '9')) return bad();
  }
  const int w = std::stoi(s.substr(0, x)), h = std::stoi(s.substr(x + 1));
  // Checked here, before any work: a 0 side would otherwise mean "the default size" further on.
  if (!sd::CheckSide("width", w).ok() || !sd::CheckSide("height", h).ok()) return bad();
  r->width = w;
  r->height = h;
  o->size_auto = false;
  return std::nullopt;
}

// The request field a pipeline validation message is about (its messages start with the field's
// own name: "seed 5 ...", "steps 0 ...", "unknown scheduler ..."), "" when none fits.
std::string PipelineParam(const std::string& message) {
  static const std::pair<const char*, const char*> kWords[] = {{"seed", "seed"},
                                                               {"steps", "steps"},
                                                               {"guidance", "guidance_scale"},
                                                               {"size", "size"},
                                                               {"width", "size"},
                                                               {"height", "size"},
                                                               {"batch", "n"},
                                                               {"prompt", "prompt"},
                                                               {"negative", "negative_prompt"},
                                                               {"scheduler", "scheduler"}};
  std::string_view m = message;
  if (m.starts_with("unknown ")) m.remove_prefix(8);  // "unknown scheduler 'x' ..."
  const std::string first(m.substr(0, m.find(' ')));
  for (const auto& [word, field] : kWords) {
    if (first == word) return field;
  }
  return "";
}

// CreateImageRequest fields, in the order of openai-openapi, then this server's extensions.
constexpr const char* kKnownFields[] = {"prompt",
                                        "model",
                                        "n",
                                        "quality",
                                        "response_format",
                                        "output_format",
                                        "output_compression",
                                        "stream",
                                        "partial_images",
                                        "size",
                                        "moderation",
                                        "background",
                                        "style",
                                        "user",
                                        "negative_prompt",
                                        "steps",
                                        "scheduler",
                                        "guidance_scale",
                                        "seed"};

// Checks the CreateImageRequest fields this server honours only at some values.
ParseError OpenAiOnlyFields(const Json& body, const Limits& limits, ImagesOptions* o) {
  std::string s;
  // One quality, one style and an opaque PNG: the defaults (and their dall-e-2 spellings) are
  // honoured, anything else is refused rather than silently ignored.
  if (auto e = EnumField(body, "quality", {"auto", "standard"}, &s)) return e;
  if (auto e = EnumField(body, "style", {"vivid"}, &s)) return e;
  if (auto e = EnumField(body, "output_format", {"png"}, &s)) return e;
  if (auto e = EnumField(body, "background", {"auto", "opaque"}, &s)) return e;
  if (auto e = EnumField(body, "moderation", {"auto", "low"}, &s)) return e;
  int compression = 100;
  if (auto e = IntField(body, "output_compression", 0, 100, &compression)) return e;
  if (compression != 100) {
    return Invalid("output_compression",
                   "field 'output_compression' is " + std::to_string(compression) +
                       "; PNG is lossless, so only 100 (the default) is supported",
                   "invalid_value");
  }
  s = "url";
  if (auto e = EnumField(body, "response_format", {"url", "b64_json"}, &s)) return e;
  o->url = s == "url";
  if (const Json* v = Field(body, "stream")) {
    if (!v->is_boolean()) return WrongType("stream", "true or false", *v);
    o->stream = v->get<bool>();
  }
  if (auto e = IntField(body, "partial_images", 0, 3, &o->partial_images)) return e;
  if (o->partial_images > 0 && !o->stream) {
    return Invalid("partial_images", "field 'partial_images' needs \"stream\": true",
                   "invalid_value");
  }
  (void)limits;
  return std::nullopt;
}

// Validates the request body into a GenerateRequest and the options (model-independent checks;
// the pipeline's ValidateRequest runs the model-dependent ones).
ParseError ParseImagesRequest(const Json& body, const Limits& limits, ImagesOptions* o,
                              sd::GenerateRequest* r) {
  if (!body.is_object()) {
    return ApiError::From(Status::InvalidArg("request body must be a JSON object"));
  }
  for (const auto& [k, v] : body.items()) {
    if (std::find_if(std::begin(kKnownFields), std::end(kKnownFields),
                     [&k](const char* f) { return k == f; }) == std::end(kKnownFields)) {
      return Invalid(k.substr(0, 64), "unknown field '" + k.substr(0, 64) + "'",
                     "unknown_parameter");
    }
  }
  const Json* p = Field(body, "prompt");
  if (!p) {
    return Invalid("prompt", "missing required field 'prompt'", "missing_required_parameter");
  }
  if (!p->is_string()) return WrongType("prompt", "a string", *p);
  r->prompt = p->get<std::string>();
  if (r->prompt.empty()) return Invalid("prompt", "field 'prompt' is empty", "invalid_value");
  if (auto e = StringField(body, "model", &o->model)) return e;
  std::string ignored;
  if (auto e = StringField(body, "user", &ignored)) return e;
  if (auto e = OpenAiOnlyFields(body, limits, o)) return e;
  if (Field(body, "negative_prompt")) {  // given, even "": SDXL encodes it (absent: zeros)
    if (auto e = StringField(body, "negative_prompt", &r->negative_prompt.emplace())) return e;
  }
  if (auto e = StringField(body, "scheduler", &r->scheduler)) return e;
  r->batch = 1;
  if (auto e = IntField(body, "n", 1, limits.max_n, &r->batch)) return e;
  r->steps = std::min(20, limits.max_steps);
  if (auto e = IntField(body, "steps", 1, limits.max_steps, &r->steps)) return e;
  if (auto e = SizeField(body, r, o)) return e;
  if (const Json* g = Field(body, "guidance_scale")) {
    if (!g->is_number()) return WrongType("guidance_scale", "a number", *g);
    r->guidance = g->get<double>();
  }
  if (const Json* s = Field(body, "seed")) {
    if (!s->is_number_unsigned() && !(s->is_number_integer() && s->get<std::int64_t>() >= 0)) {
      return WrongType("seed", "a non-negative integer", *s);
    }
    r->seed = s->get<std::uint64_t>();
  }
  r->encode_png = true;
  // The pipeline generates at most sd::kMaxBatch images at once; a larger n runs in parts.
  sd::GenerateRequest check = *r;
  check.batch = std::min(check.batch, sd::kMaxBatch);
  if (Status st = sd::ValidateRequestBasics(check); !st.ok()) {
    return ApiError::From(RequestFault(st), PipelineParam(st.message()), "invalid_value");
  }
  return std::nullopt;
}

// Sizes the OpenAI streaming events may name; any other is sent as "auto" (the real size is in
// the "truegreen" object).
std::string EventSize(int w, int h) {
  const std::string s = std::to_string(w) + "x" + std::to_string(h);
  return s == "1024x1024" || s == "1024x1536" || s == "1536x1024" ? s : "auto";
}

// This server's own facts about a generation, beside the OpenAI fields.
void AppendExtension(const sd::GenerateOutput& out, const std::string& model, int steps,
                     bool degraded, std::string* b) {
  auto quoted = [](const std::string& s) {
    return common::WriteJson(Json(s), -1, common::JsonNotice::kNone);
  };
  *b += "\"truegreen\":{\"degraded\":";
  *b += degraded ? "true" : "false";
  *b += ",\"model\":" + quoted(model);
  *b += ",\"scheduler\":" + quoted(out.scheduler);
  *b += ",\"size\":\"" + std::to_string(out.width) + "x" + std::to_string(out.height);
  *b += "\",\"steps\":" + std::to_string(steps) + "}";
}

// The 200 body (ImagesResponse), written straight into one string: each PNG is Base64-encoded in
// place, never copied into a JSON value and re-escaped (that cost 1-6 ms per 512² image). Same
// bytes as nlohmann's dump of the object (keys in its sorted order; Base64, hex tokens and digits
// need no escaping). `urls`, when given, replace the images' b64_json.
std::string ImagesBody(const sd::GenerateOutput& out, const std::string& model, int steps,
                       bool degraded, const std::vector<std::string>* urls) {
  std::size_t reserve = 320 + model.size() + out.scheduler.size();
  for (const auto& im : out.images) reserve += 4 * ((im.png.size() + 2) / 3) + 48;
  std::string b;
  b.reserve(urls ? 512 + 160 * out.images.size() : reserve);
  b += "{\"background\":\"opaque\",\"created\":";
  b += std::to_string(static_cast<std::int64_t>(std::time(nullptr)));
  b += ",\"data\":[";
  for (std::size_t i = 0; i < out.images.size(); ++i) {
    b += i == 0 ? "{" : ",{";
    if (urls) {
      b += "\"seed\":" + std::to_string(out.images[i].seed) + ",\"url\":";
      b += common::WriteJson(Json((*urls)[i]), -1, common::JsonNotice::kNone) + "}";
      continue;
    }
    b += "\"b64_json\":\"";
    common::AppendBase64(out.images[i].png, &b);
    b += "\",\"seed\":" + std::to_string(out.images[i].seed) + "}";
  }
  b += "],\"output_format\":\"png\",";
  AppendExtension(out, model, steps, degraded, &b);
  b += "}";
  return b;
}

// The `stream: true` answer: one image_generation.completed event per image, as server-sent
// events (the OpenAI API's event names and fields). This server does not count tokens: usage is
// reported as zero.
std::string StreamBody(const sd::GenerateOutput& out, const std::string& model, int steps,
                       bool degraded) {
  std::string b;
  const std::string created = std::to_string(static_cast<std::int64_t>(std::time(nullptr)));
  for (const auto& im : out.images) {
    b += "event: image_generation.completed\ndata: {\"b64_json\":\"";
    common::AppendBase64(im.png, &b);
    b += "\",\"background\":\"opaque\",\"created_at\":" + created;
    b += ",\"output_format\":\"png\",\"quality\":\"auto\",\"size\":\"" +
         EventSize(out.width, out.height) + "\",";
    AppendExtension(out, model, steps, degraded, &b);
    b += ",\"type\":\"image_generation.completed\",\"usage\":{\"input_tokens\":0,"
         "\"input_tokens_details\":{\"image_tokens\":0,\"text_tokens\":0},\"output_tokens\":0,"
         "\"total_tokens\":0}}\n\n";
  }
  return b;
}

// The step after which preview k (0-based) of `previews` is sent: evenly spaced through the
// generation, never the last step (the final image follows it); 0 when there is no such step.
int PreviewStep(int k, int previews, int total) {
  const int s = (k + 1) * total / (previews + 1);
  return s >= 1 && s < total ? s : 0;
}

// A cheap preview of one image's latents [4, h, w]: the first three channels, each scaled to
// 0..255 over its own range, as an RGB image at latent resolution (size / 8). It shows the
// composition forming, not the final colours; no VAE runs.
Result<std::string> LatentPreviewPng(const float* latents, int h, int w) {
  sd::RgbImage im;
  im.width = w;
  im.height = h;
  im.pixels.resize(static_cast<std::size_t>(w) * h * 3);
  const std::size_t plane = static_cast<std::size_t>(w) * h;
  for (int c = 0; c < 3; ++c) {
    const float* ch = latents + plane * c;
    const auto [lo, hi] = std::minmax_element(ch, ch + plane);
    const float range = *hi - *lo > 1e-6f ? *hi - *lo : 1.0f;
    for (std::size_t i = 0; i < plane; ++i) {
      const float v = std::isfinite(ch[i]) ? (ch[i] - *lo) / range : 0.0f;
      im.pixels[i * 3 + c] = static_cast<std::uint8_t>(std::clamp(v, 0.0f, 1.0f) * 255.0f + 0.5f);
    }
  }
  return sd::EncodePng(im);
}

std::string PartialImageEvent(const std::string& png, int index, int w, int h) {
  std::string b = "event: image_generation.partial_image\ndata: {\"b64_json\":\"";
  common::AppendBase64(png, &b);
  b += "\",\"background\":\"opaque\",\"created_at\":" +
       std::to_string(static_cast<std::int64_t>(std::time(nullptr))) +
       ",\"output_format\":\"png\",\"partial_image_index\":" + std::to_string(index) +
       ",\"quality\":\"auto\",\"size\":\"" + EventSize(w, h) +
       "\",\"type\":\"image_generation.partial_image\"}\n\n";
  return b;
}

// The final answer of a job whose stream already started: the last part, carrying the
// completed events, or the error as an `error` event (the status line went out as 200).
HttpResponse FinalPart(const SdJob& job, HttpResponse r) {
  if (!job.stream_started) return r;
  if (r.status != 200) r.body = "event: error\ndata: " + r.body + "\n\n";
  r.part = HttpResponse::Part::kLast;
  return r;
}

// Sends the job's next partial image when this step is its turn: the head of the event stream
// goes out with the first one. Runs on the lane worker, inside the pipeline's progress callback.
void SendPreview(SdJob* job, const sd::StepProgress& p, std::size_t row0) {
  if (!job->opt.stream || job->previews_sent >= job->opt.partial_images || !p.latents ||
      p.step <= job->last_step) {
    job->last_step = p.total + 1;  // a later part restarts at step 1: no more previews
    return;
  }
  job->last_step = p.step;
  if (p.step != PreviewStep(job->previews_sent, job->opt.partial_images, p.total)) return;
  const std::size_t per_image = static_cast<std::size_t>(4) * p.latent_height * p.latent_width;
  auto png = LatentPreviewPng(p.latents + per_image * row0, p.latent_height, p.latent_width);
  if (!png.ok()) return;  // a preview is optional; the final image still comes
  HttpResponse r;
  r.body = PartialImageEvent(*png, job->previews_sent, job->req.width, job->req.height);
  r.content_type = "text/event-stream";
  if (!job->stream_started) {
    r.part = HttpResponse::Part::kFirst;
    r.headers.emplace_back("Cache-Control", "no-cache");
    r.headers.emplace_back("X-Request-Id", job->ctx->id);
    job->stream_started = true;
  } else {
    r.part = HttpResponse::Part::kMore;
  }
  ++job->previews_sent;
  job->respond(std::move(r));
}

// scheme://host the client used (Host header), for image URLs.
std::string BaseUrl(const HttpRequest& req, const std::string& host, int port) {
  std::string h = req.Header("host");
  if (h.empty() || h.find_first_of(" /\\\"<>") != std::string::npos || h.size() > 255) {
    h = host + ":" + std::to_string(port);
  }
  const std::string proto = req.Header("x-forwarded-proto");
  return (proto == "https" ? "https://" : "http://") + h;
}

}  // namespace

void OpenAiApi::AddRoutes(RouteTable* table) {
  using Access = RouteTable::Access;
  auto bind = [this](ApiResult<Reply> (OpenAiApi::*f)(Call&)) {
    return [this, f](Call& c) { return (this->*f)(c); };
  };
  table->Add("GET", "/v1/models", Access::kToken, bind(&OpenAiApi::ListModels));
  table->Add("GET", "/v1/models/{id}", Access::kToken, bind(&OpenAiApi::GetModel));
  table->Add("GET", std::string(kImageStorePrefix) + "{file}", Access::kToken,
             bind(&OpenAiApi::StoredImage));
  table->Add("POST", "/v1/images/generations", Access::kWork, bind(&OpenAiApi::Generations));
}

ApiResult<Reply> OpenAiApi::Generations(Call& c) {
  Json body = Json::parse(c.req.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return Status::InvalidArg("request body is not valid JSON (UTF-8)");
  auto job = std::make_shared<SdJob>();
  if (auto e = ParseImagesRequest(body, p_.config.limits, &job->opt, &job->req)) return *e;
  TG_RETURN_IF_ERROR(p_.CheckStarted());
  ApiError err;
  ModelRuntime* mr = p_.models.ImageModel(job->opt.model, p_.config.model_aliases, &err);
  if (!mr) return err;
  RequestCtx& ctx = *c.ctx;
  ctx.model = mr->model->spec.name;
  // The pipeline validates up to sd::kMaxBatch images; a larger n runs in parts (RunJobs), the
  // seeds going on from part to part.
  const int n = job->req.batch;
  sd::GenerateRequest& g = job->req;
  g.batch = std::min(n, sd::kMaxBatch);
  if (Status s = sd::ValidateRequest(*mr->model->sd, &g); !s.ok()) {
    return ApiError::From(RequestFault(s), PipelineParam(s.message()), "invalid_value");
  }
  if (g.seeds.front() > std::numeric_limits<std::uint64_t>::max() - static_cast<std::uint64_t>(n)) {
    return ApiError::From(Status::InvalidArg("seed " + std::to_string(g.seeds.front()) +
                                             " + image index overflows for n " + std::to_string(n)),
                          "seed", "invalid_value");
  }
  for (int k = g.batch; k < n; ++k) {
    g.seeds.push_back(g.seeds.front() + static_cast<std::uint64_t>(k));
  }
  g.batch = n;
  // Refused before it queues when not even one image of this size fits in the memory budget
  // (memory_admission.h); a larger n is split into runs that fit (RunJobs).
  if (Status s = p_.memory.Check(ctx.model, {g.width, g.height, 1, *g.guidance > 1.0, false});
      !s.ok()) {
    p_.metrics.Add("truegreen_memory_refused_total", {{"model", ctx.model}});
    return ApiError::From(s, "size", "invalid_value");
  }
  job->base_url = BaseUrl(c.req, p_.config.host, p_.port);
  const double units = static_cast<double>(g.width) * g.height * g.steps / 50.0 * g.batch;
  Lane* lane = mr->lanes[units > p_.config.limits.large_pixels ? 1 : 0].get();
  job->ctx = c.ctx;
  job->respond = c.respond;
  job->enqueued = Clock::now();
  job->deadline = job->enqueued + std::chrono::milliseconds(p_.config.limits.deadline_ms);
  // Requests share a UNet batch only when size, steps, scheduler, guidance and rng agree; a UNet
  // exported with a fixed batch runs every request alone, and so does one above kMaxBatch images.
  const auto& ss = mr->model->sd->unet.sample_shape;
  const bool solo = (!ss.empty() && ss[0] > 0) || n > sd::kMaxBatch;
  job->batch_key = solo ? "solo:" + ctx.id : sd::BatchKey(g);
  job->units = g.batch;  // the lane's max_batch counts images
  if (!lane->Submit(job)) {
    return ApiError::Of(ErrorKind::kQueueFull, "queue of model " + ctx.model + " (" + lane->name() +
                                                   " lane) is full: retry later");
  }
  return Reply::Queued();
}

namespace {

// Runs `reqs` as one GenerateBatch, or, for a single request above `max_part` images (at most
// sd::kMaxBatch, fewer when the memory budget says so), as consecutive parts of at most max_part
// images whose outputs are joined.
Result<std::vector<sd::GenerateOutput>> GenerateInParts(
    sd::Pipeline& pipeline, const std::vector<sd::GenerateRequest>& reqs, int max_part,
    const sd::ProgressCallback& progress, const std::vector<const std::atomic<bool>*>& cancels) {
  if (reqs.size() != 1 || reqs.front().batch <= max_part) {
    return pipeline.GenerateBatch(reqs, progress, cancels);
  }
  const sd::GenerateRequest& whole = reqs.front();
  std::vector<sd::GenerateOutput> joined(1);
  for (int off = 0; off < whole.batch; off += max_part) {
    sd::GenerateRequest part = whole;
    part.batch = std::min(max_part, whole.batch - off);
    part.seeds.assign(whole.seeds.begin() + off, whole.seeds.begin() + off + part.batch);
    TG_ASSIGN_OR_RETURN(auto out, pipeline.GenerateBatch({part}, progress, cancels));
    sd::GenerateOutput& o = out.front();
    sd::GenerateOutput& j = joined.front();
    if (off == 0) {
      j = std::move(o);
    } else {
      for (auto& im : o.images) j.images.push_back(std::move(im));
      j.cancelled = j.cancelled || o.cancelled;
      j.steps_done = o.steps_done;
    }
    if (j.cancelled) break;
  }
  return joined;
}

// Reserves the run's estimated memory (memory_admission.h), setting each request's VAE tiling to
// the estimate's; when the deadline passes (or the one request is cancelled) while waiting, every
// request is answered 504 and nullopt returned.
std::optional<MemoryAdmission::Reservation> ReserveMemory(const ServerParts& p,
                                                          const std::vector<SdJob*>& jobs,
                                                          std::vector<sd::GenerateRequest>* reqs,
                                                          int part) {
  const sd::GenerateRequest& r0 = reqs->front();
  int total = 0;
  Clock::time_point deadline = jobs.front()->deadline;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    total += (*reqs)[i].batch;
    deadline = std::max(deadline, jobs[i]->deadline);
  }
  const int at_once = std::min(total, part);
  bool tiled = false;
  const auto e = p.memory.Estimate(
      jobs.front()->ctx->model, {r0.width, r0.height, at_once, *r0.guidance > 1.0, false}, &tiled);
  if (!e) return MemoryAdmission::Reservation();  // no memory model: admitted as before
  for (auto& r : *reqs) r.vae_tiling = tiled ? sd::VaeTiling::kOn : sd::VaeTiling::kOff;
  // The parts run one after the other, but every part's images are kept until the answer.
  const std::int64_t bytes = e->admit_bytes + e->host_bytes / at_once * (total - at_once);
  p.metrics.Observe("truegreen_memory_job_estimate_bytes", {{"model", jobs.front()->ctx->model}},
                    static_cast<double>(bytes));
  // Every request of the run is cancelled at its own deadline; the run waits while any is live.
  std::atomic<bool> never{false};
  auto r = p.memory.Reserve(bytes, deadline, jobs.size() == 1 ? &jobs.front()->cancel : &never);
  if (r) return r;
  for (SdJob* job : jobs) {
    const ApiError e = ApiError::Of(ErrorKind::kDeadline,
                                    "deadline of " + std::to_string(p.config.limits.deadline_ms) +
                                        " ms passed while the request waited for memory");
    p.finish(job->ctx, job->respond, FinalPart(*job, ErrorFor(*job->ctx, e)));
  }
  return std::nullopt;
}

// The 200 answer of `j` in the form it asked for: an SSE stream, b64_json, or URLs into `store`.
HttpResponse ImagesResponse(ImageStore& store, const SdJob& j, const sd::GenerateOutput& out,
                            bool degraded) {
  HttpResponse r;
  const RequestCtx& ctx = *j.ctx;
  if (j.opt.stream) {
    r.content_type = "text/event-stream";
    r.headers.emplace_back("Cache-Control", "no-cache");
    r.body = StreamBody(out, ctx.model, j.req.steps, degraded);
    return r;
  }
  if (!j.opt.url) {
    r.body = ImagesBody(out, ctx.model, j.req.steps, degraded, nullptr);
    return r;
  }
  std::vector<std::string> urls;
  for (const auto& im : out.images) {
    auto token = store.Put(im.png, ImageStore::Clock::now());
    if (token.ok()) {
      urls.push_back(j.base_url + kImageStorePrefix + *token + ".png");
      continue;
    }
    // An image the store can never hold is answered as the request's choice it is: a 400 on
    // response_format, naming the form that works.
    if (token.status().code() == common::StatusCode::kInvalidArg) {
      return ErrorFor(
          ctx,
          ApiError::From(Status::InvalidArg("response_format \"url\": " + token.status().message() +
                                            "; ask for response_format \"b64_json\""),
                         "response_format", "invalid_value"));
    }
    return ErrorFor(ctx, ApiError::From(token.status()));
  }
  r.body = ImagesBody(out, ctx.model, j.req.steps, degraded, &urls);
  return r;
}

}  // namespace

ApiResult<Reply> OpenAiApi::StoredImage(Call& c) {
  std::string token = c.Param("file");
  if (token.size() > 4 && token.ends_with(".png")) token.resize(token.size() - 4);
  auto png = p_.images.Get(token, ImageStore::Clock::now());
  if (!png) {
    return Status::NotFound("no such image: unknown, or older than --image-ttl-s (" +
                            std::to_string(p_.images.ttl().count()) +
                            " s), or pushed out of the store by newer images");
  }
  HttpResponse r;
  r.content_type = "image/png";
  r.shared_body = png;
  return Reply(std::move(r));
}

Json OpenAiApi::ImageModels() const {
  // The Model objects: the served image models, then each alias (an id a client may send).
  auto model = [this](const std::string& id) {
    return Json{
        {"id", id}, {"object", "model"}, {"created", p_.started_unix}, {"owned_by", "truegreen"}};
  };
  Json data = Json::array();
  if (!p_.models.open()) return data;
  for (const auto& [name, mr] : p_.models.all()) {
    if (mr->model->sd) data.push_back(model(name));
  }
  for (const auto& [alias, target] : p_.config.model_aliases) {
    if (auto* mr = p_.models.Find(target); mr && mr->model->sd) data.push_back(model(alias));
  }
  return data;
}

ApiResult<Reply> OpenAiApi::ListModels(Call&) {
  return Reply(JsonResponse(200, {{"object", "list"}, {"data", ImageModels()}}));
}

ApiResult<Reply> OpenAiApi::GetModel(Call& c) {
  const std::string& id = c.Param("id");
  for (const Json& m : ImageModels()) {
    if (m["id"] == id) return Reply(JsonResponse(200, m));
  }
  return ApiError::From(Status::NotFound("the model '" + id.substr(0, 64) + "' does not exist"),
                        "model", "model_not_found");
}

// Runs the lane's batch in runs whose images fit in the memory budget (all of it in one run when
// it fits): requests in order, a run closed before the request that would overflow it; a request
// larger than one run runs alone, in parts (GenerateInParts).
void OpenAiApi::RunJobs(ModelRuntime* mr, std::vector<std::shared_ptr<Job>>& jobs) {
  const SdJob& first = *static_cast<SdJob*>(jobs.front().get());
  const sd::ImageJob shape{first.req.width, first.req.height, 1, *first.req.guidance > 1.0, false};
  const int part = p_.memory.PartImages(first.ctx->model, shape, sd::kMaxBatch);
  int total = 0;
  for (auto& j : jobs) total += static_cast<SdJob*>(j.get())->req.batch;
  if (total <= part) return RunBatch(mr, jobs, part);
  p_.metrics.Add("truegreen_memory_split_total", {{"model", first.ctx->model}});
  std::vector<std::shared_ptr<Job>> run;
  int images = 0;
  for (auto& j : jobs) {
    const int b = static_cast<SdJob*>(j.get())->req.batch;
    if (!run.empty() && images + b > part) {
      RunBatch(mr, run, part);
      run.clear();
      images = 0;
    }
    run.push_back(j);
    images += b;
  }
  if (!run.empty()) RunBatch(mr, run, part);
}

// Reserves the run's estimated memory (waiting while other runs hold it), then runs it as one
// generation (one UNet batch of every request's images). Each request keeps its deadline: when it
// passes while waiting for memory or between steps the request is answered 504 at once and
// cancelled in the pipeline (its rows finish with the others, nobody waits on it); the generation
// stops early only when every request of the batch has been answered.
void OpenAiApi::RunBatch(ModelRuntime* mr, std::vector<std::shared_ptr<Job>>& jobs, int part) {
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
  auto deadline_error = [this](const RequestCtx& ctx, int steps_done) {
    return ErrorFor(ctx,
                    ApiError::Of(ErrorKind::kDeadline,
                                 "deadline of " + std::to_string(p_.config.limits.deadline_ms) +
                                     " ms passed after " + std::to_string(steps_done) +
                                     " denoising steps; the generation was cancelled"));
  };
  const auto t0 = Clock::now();
  std::vector<std::size_t> row0(jobs.size(), 0);  // each job's first image in the batch
  for (std::size_t i = 1; i < jobs.size(); ++i) row0[i] = row0[i - 1] + reqs[i - 1].batch;
  auto progress = [&](const sd::StepProgress& p) {
    p_.metrics.Observe("truegreen_denoise_step_duration_seconds", lb, p.unet_ms / 1e3);
    const auto now = Clock::now();
    bool any_left = false;
    for (std::size_t i = 0; i < sd_jobs.size(); ++i) {
      if (answered[i]) continue;
      SdJob* job = sd_jobs[i];
      if (now >= job->deadline) {
        job->cancel.store(true);  // the pipeline drops its images from here on
        answered[i] = true;
        job->ctx->compute_ms = MsSince(t0);
        p_.finish(job->ctx, job->respond, FinalPart(*job, deadline_error(*job->ctx, p.step)));
        continue;
      }
      any_left = true;
      SendPreview(job, p, row0[i]);
    }
    return any_left;
  };
  auto reservation = ReserveMemory(p_, sd_jobs, &reqs, part);
  if (!reservation) return;  // every request was answered 504
  auto outs = GenerateInParts(*mr->model->pipeline, reqs, part, progress, cancels);
  if (!outs.ok() && IsMemoryFailure(outs.status())) {
    // The estimate was wrong: this run fails alone (503 naming memory), the replica stays up.
    p_.memory.CountFailure(p_.metrics, model);
    outs = Status::Unavailable("out of memory: the run (estimated " +
                               sd::FormatBytes(reservation->bytes()) +
                               ") failed to allocate: " + outs.status().message());
  }
  const double compute_ms = MsSince(t0);
  // Triton semantics: one execution per batch; inference count = images of answered requests.
  p_.metrics.Add("nv_inference_exec_count", lb);
  p_.metrics.Observe("truegreen_batch_size", lb, static_cast<double>(jobs.size()));
  for (std::size_t i = 0; i < sd_jobs.size(); ++i) {
    if (answered[i]) continue;
    SdJob* job = sd_jobs[i];
    RequestCtx& ctx = *job->ctx;
    ctx.compute_ms = compute_ms;
    if (!outs.ok()) {
      p_.finish(job->ctx, job->respond,
                FinalPart(*job, ErrorFor(ctx, ApiError::From(outs.status()))));
      continue;
    }
    const sd::GenerateOutput& out = (*outs)[i];
    if (out.cancelled) {
      p_.finish(job->ctx, job->respond, FinalPart(*job, deadline_error(ctx, out.steps_done)));
      continue;
    }
    ctx.items = static_cast<int>(out.images.size());
    p_.metrics.Add("nv_inference_count", lb, ctx.items);
    p_.metrics.Add("truegreen_images_generated_total", lb, ctx.items);
    p_.finish(job->ctx, job->respond,
              FinalPart(*job, ImagesResponse(p_.images, *job, out, mr->model->degraded())));
  }
}

Result<double> OpenAiApi::TimeCanaryRun(ModelRuntime* mr, int index) {
  sd::GenerateRequest r;
  r.prompt = kCanaryPrompts[index % 3];
  r.seed = static_cast<std::uint64_t>(index);
  r.steps = p_.config.canary.steps;
  r.width = r.height = p_.config.canary.size ? p_.config.canary.size : 256;
  r.encode_png = false;
  const auto t0 = Clock::now();
  auto out = mr->model->pipeline->Generate(r);
  if (!out.ok()) return out.status();
  if (out->images.size() != 1 || out->images[0].image.pixels.empty()) {
    return Status::Internal("the canary generation produced no image");
  }
  return MsSince(t0);
}

Status OpenAiApi::Warmup(ModelRuntime* mr) {
  // One generation at the canary size pays the first-run costs (allocator, cuDNN/TensorRT
  // tactics) of every session before anything is timed.
  auto ms = TimeCanaryRun(mr, 0);
  return ms.ok() ? Status::Ok() : ms.status();
}

}  // namespace tg::server
