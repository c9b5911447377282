#include "server/server.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>

#include "common/file_util.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/outcome.h"
#include "common/percentile.h"
#include "server/server_internal.h"

namespace tg::server {

using common::Json;
using common::Status;

namespace {

std::string ReadFault(const std::string& path) {
  if (path.empty()) return "";
  auto t = common::ReadFileLimited(path, 4096);
  if (!t.ok()) return "";
  std::string s = *t;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

Server::Server(ServeConfig config, std::vector<ModelSpec> specs, common::LibraryLoader loader)
    : config_(std::move(config)),
      specs_(std::move(specs)),
      loader_(std::move(loader)),
      readiness_({"admit", "sessions", "warmup", "canary"},
                 [this] { return gpu_ ? gpu_->LivenessFault() : std::string(); }) {
  startup_ = MakeChainStartup(config_, loader_);
  gpu_ = std::make_unique<GpuMonitor>(loader_, &metrics_, [this](const std::string& l) { Log(l); });
  images_ = std::make_unique<ImageStore>(config_.image_store_bytes,
                                         std::chrono::seconds(config_.image_ttl_s));
  started_unix_ = static_cast<std::int64_t>(std::time(nullptr));
  openai_ = std::make_unique<OpenAiApi>(Parts());
  kserve_ = std::make_unique<KserveApi>(Parts());
  AddRoutes();
  DeclareMetrics();
  if (config_.access_log == "-") {
    // A stream of its own on a copy of stderr, so the log has one owner whatever it writes to.
    const int fd = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 0);
    access_log_ = common::UniqueFile(fd >= 0 ? ::fdopen(fd, "a") : nullptr);
    if (!access_log_ && fd >= 0) ::close(fd);
  } else if (config_.access_log != "off") {
    // O_NONBLOCK: a FIFO put in place after ValidateServeConfig must not stop start-up; only a
    // regular file is kept (the same rule as the one writer, common::WriteFileAtomic).
    const int fd = ::open(config_.access_log.c_str(),
                          O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
    struct stat st {};
    if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        ::fcntl(fd, F_SETFL, O_WRONLY | O_APPEND) == 0) {
      access_log_ = common::UniqueFile(::fdopen(fd, "a"));
    }
    if (!access_log_ && fd >= 0) ::close(fd);
    if (!access_log_) Log("--access-log " + config_.access_log + ": not a regular file");
  }
}

Server::~Server() = default;

void Server::Log(const std::string& line, std::string_view level) const {
  // Operational log lines go to stderr whatever the --log-level (tests and operators read them),
  // through the shared writer so --log-format json makes each one a JSON object.
  common::WriteStderrLine(level, "truegreen serve: " + line);
}

Status ServerParts::CheckStarted() const {
  if (readiness.GatesPassed()) return Status::Ok();
  return Status::Unavailable("not ready: " + readiness.NotReadyReason());
}

ServerParts Server::Parts() {
  return ServerParts{config_,
                     models_,
                     readiness_,
                     metrics_,
                     *images_,
                     memory_,
                     port_,
                     started_unix_,
                     [this](const std::shared_ptr<RequestCtx>& ctx, const Responder& respond,
                            HttpResponse r) { Finish(ctx, respond, std::move(r)); }};
}

// ---- start-up gates -------------------------------------------------------------------------

Status Server::RunGate(std::size_t index, const std::function<Status()>& step) {
  const std::string& name = readiness_.gate_name(index);
  readiness_.GateRunning(index);
  Log("gate " + name + ": running");
  const auto t0 = Clock::now();
  Status s = step();
  const double ms = MsSince(t0);
  readiness_.GateDone(index, s, ms);
  metrics_.Set("truegreen_gate_status", {{"gate", name}}, s.ok() ? 1 : 0);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.1f ms", ms);
  if (s.ok()) {
    Log("gate " + name + ": passed in " + buf +
        (s.message().empty() ? "" : " (" + s.message() + ")"));
  } else {
    Log("gate " + name + ": FAILED in " + buf + " (exit " + std::to_string(ExitCode(s)) +
            "): " + s.message(),
        "error");
  }
  return s;
}

Status Server::GateAdmit() {
  NodeAdmission a;
  Status s = startup_->SnapshotAndAdmit(&a);
  readiness_.SetAdmission(a);
  if (s.ok()) return s;
  // The refusing step's code (no GPU path 3, drift 4, configuration 2), led by the verdict.
  return Status(s.code(), a.verdict + ": " + s.message());
}

Status Server::GateSessions() {
  for (const ModelSpec& spec : specs_) {
    // Library failures arrive as UNAVAILABLE (runtime::FromOrtCode), model files as NOT_FOUND or
    // INVALID_ARG, drift as FAILED_PRECONDITION: each keeps its code and so its exit code.
    auto m = startup_->OpenModel(spec);
    if (!m.ok()) return m.status().WithPrefix("model " + spec.name);
    auto mr = std::make_unique<ModelRuntime>();
    mr->model = std::move(m).value();
    if (mr->model->degraded()) {
      readiness_.SetDegraded();
      Log("model " + spec.name + " DEGRADED: " + mr->model->degraded_reason(), "warning");
    }
    const Json placement = mr->model->Placement();
    for (const auto& [part, p] : placement.items()) {
      for (const auto& [prov, n] : p["nodes_per_provider"].items()) {
        metrics_.Set("truegreen_session_nodes",
                     {{"model", spec.name}, {"session", part}, {"provider", prov}},
                     n.get<double>());
      }
    }
    StartLanes(mr.get());
    models_.Add(spec.name, std::move(mr));
  }
  // The shared chain's op canary over every opened model: a GPU that crashes or miscomputes one
  // of their ops never serves (a CPU-only dev run skips it, saying so).
  TG_RETURN_IF_ERROR(startup_->OpCanary(specs_));
  metrics_.Set("truegreen_degraded", {}, readiness_.degraded() ? 1 : 0);
  models_.Open();
  return Status::Ok();
}

Status Server::GateWarmup() {
  for (auto& [name, mr] : models_.all()) {
    const auto t0 = Clock::now();
    Status s = mr->model->sd ? openai_->Warmup(mr.get()) : kserve_->Warmup(mr.get());
    // The step's own code decides: a failed run is UNAVAILABLE (3), a warm-up shape of the
    // model's config.yaml that the model refuses INVALID_ARG (2).
    if (!s.ok()) return s.WithPrefix("warm-up of model " + name);
    Log("warm-up " + name + ": " + std::to_string(static_cast<int>(MsSince(t0))) + " ms");
  }
  return GateMemory();
}

CanaryResult Server::RunTimedCanary(const CanaryResult* baseline) {
  CanaryResult c;
  c.ran = true;
  c.at_unix = static_cast<std::int64_t>(std::time(nullptr));
  const std::string fault = ReadFault(config_.fault_file);
  if (fault == "canary-fail") {
    c.message = "injected fault (" + config_.fault_file + "): canary-fail";
    return c;
  }
  std::string summary;
  for (auto& [name, mr] : models_.all()) {
    ModelCanary& mc = c.models[name];
    const bool sd = mr->model->sd != nullptr;
    for (int i = 0; i < (sd ? 3 : 5); ++i) {
      auto ms = sd ? openai_->TimeCanaryRun(mr.get(), i) : kserve_->TimeCanaryRun(mr.get());
      if (!ms.ok()) {
        c.message = "model " + name + ": " + ms.status().message();
        return c;
      }
      mc.samples_ms.push_back(*ms + (fault == "canary-slow" ? 1e6 : 0.0));
    }
    mc.p50_ms = common::Percentile(mc.samples_ms, 50);
    mc.p95_ms = common::Percentile(mc.samples_ms, 95);
    char buf[200];
    std::snprintf(buf, sizeof(buf), "%s%s P50 %.2f ms P95 %.2f ms", summary.empty() ? "" : "; ",
                  name.c_str(), mc.p50_ms, mc.p95_ms);
    summary += buf;
    const ModelSpec& spec = mr->model->spec;
    // A ceiling <= 0 means "not gated".
    auto pick = [sd](const std::optional<double>& own, const std::optional<double>& flag) {
      return own ? *own : (sd && flag) ? *flag : -1.0;
    };
    auto over = [&](const char* what, double got, double ceiling) {
      if (ceiling <= 0 || got <= ceiling || c.slow) return;
      std::snprintf(buf, sizeof(buf), "model %s: canary %s %.2f ms is above the ceiling %.2f ms",
                    name.c_str(), what, got, ceiling);
      c.slow = true;
      c.message = buf;
    };
    over("P50", mc.p50_ms, pick(spec.canary_p50_ms, config_.canary.p50_ms));
    over("P95", mc.p95_ms, pick(spec.canary_p95_ms, config_.canary.p95_ms));
    if (baseline && baseline->models.count(name)) {
      const double limit = baseline->models.at(name).p50_ms * config_.canary.drift_tolerance;
      if (!c.slow && mc.p50_ms > limit) {
        std::snprintf(buf, sizeof(buf),
                      "model %s: latency drift: P50 %.2f ms is above %.1f x the start-up P50 "
                      "%.2f ms",
                      name.c_str(), mc.p50_ms, config_.canary.drift_tolerance,
                      baseline->models.at(name).p50_ms);
        c.slow = true;
        c.message = buf;
      }
    }
  }
  c.ok = !c.slow;
  if (c.ok) c.message = summary;
  return c;
}

void Server::RecordCanary(const CanaryResult& c) {
  for (const auto& [name, mc] : c.models) {
    if (mc.samples_ms.empty()) continue;
    metrics_.Set("truegreen_canary_latency_seconds", {{"model", name}, {"stat", "p50"}},
                 mc.p50_ms / 1e3);
    metrics_.Set("truegreen_canary_latency_seconds", {{"model", name}, {"stat", "p95"}},
                 mc.p95_ms / 1e3);
  }
  metrics_.Set("truegreen_canary_ok", {}, c.ok ? 1 : 0);
  metrics_.Add("truegreen_canary_runs_total", {{"outcome", c.ok ? "pass" : "fail"}});
}

Status Server::GateCanary() {
  CanaryResult c = RunCanary(nullptr);
  RecordCanary(c);
  readiness_.SetStartupCanary(c);
  const bool gated = config_.canary.p50_ms || config_.canary.p95_ms;
  if (c.ok) {
    return Status(
        common::StatusCode::kOk,
        c.message + (gated ? "" : "; no ceiling set for image models, latency not gated"));
  }
  // A run that failed is a broken fast path (3); runs that completed too slowly are 5
  // (ExitCode, from the canary result Readiness holds).
  return Status::Unavailable("canary: " + c.message);
}

int Server::ExitCode(const Status& s) const {
  // A start-up canary that completed too slowly is a result, not an error: it leaves through the
  // result mapping. Readiness holds that canary only when every gate before it passed, so a slow
  // one means the canary gate is the one that failed.
  if (!s.ok() && readiness_.StartupCanary().slow) {
    return common::ExitCodeFromOutcome(common::Outcome::kPerformanceFailed);
  }
  return common::ExitCodeFromStatus(s);
}

void Server::RunGates() {
  const std::function<Status()> gates[] = {
      [this] { return GateAdmit(); }, [this] { return GateSessions(); },
      [this] { return GateWarmup(); }, [this] { return GateCanary(); }};
  Status failed = Status::Ok();
  for (std::size_t i = 0; i < std::size(gates) && failed.ok(); ++i) failed = RunGate(i, gates[i]);
  if (failed.ok()) {
    metrics_.Set("truegreen_ready", {}, 1);
    Log(std::string("ready") + (readiness_.degraded() ? " (DEGRADED: CPU, dev policy)" : ""));
    if (config_.canary.interval_s > 0) {
      readiness_.StartBackground(std::chrono::seconds(config_.canary.interval_s),
                                 [this] { BackgroundCanary(); });
    }
    return;
  }
  if (config_.exit_on_fail) {
    std::lock_guard<std::mutex> l(failure_mu_);
    gate_failure_ = failed;
  } else {
    Log("--exit-on-fail=false: staying up, /readyz answers 503 with the reason");
  }
}

void Server::BackgroundCanary() {
  const CanaryResult baseline = readiness_.StartupCanary();
  CanaryResult c = RunCanary(&baseline);
  RecordCanary(c);
  const std::string was = readiness_.SetBackgroundCanary(c);
  metrics_.Set("truegreen_ready", {}, c.ok ? 1 : 0);
  if (c.ok && !was.empty()) Log("background canary recovered: ready again");
  if (!c.ok && was.empty()) {
    Log("background canary FAILED, /readyz now 503: " + c.message, "error");
  }
}

// ---- health and introspection ---------------------------------------------------------------

HttpResponse Server::Capabilities() const {
  Json j;
  Json models = Json::object();
  if (models_.open()) {
    // The chain's report is final once the models are open (the gate thread no longer writes it).
    j["startup"] = startup_->StartupJson();
    for (const auto& [name, mr] : models_.all()) {
      models[name] = {{"kind", std::string(ModelKindName(mr->model->spec.kind))},
                      {"degraded", mr->model->degraded()},
                      {"degraded_reason", mr->model->degraded_reason()},
                      {"placement", mr->model->Placement()}};
    }
  }
  readiness_.AddCapabilities(&j);
  j["models"] = models;
  j["memory"] = memory_.ToJson();
  j["policy"] = config_.policy;
  j["gpu"] = gpu_->ToJson();
  return JsonResponse(200, j);
}

HttpResponse Server::MetricsText() {
  if (models_.open()) {
    for (auto& [name, mr] : models_.all()) {
      int pending = 0;
      for (const auto& lane : mr->lanes) {
        Labels lb = {{"model", name}, {"lane", lane->name()}};
        metrics_.Set("truegreen_queue_depth", lb, lane->depth());
        metrics_.Set("truegreen_in_flight", lb, lane->in_flight());
        pending += lane->depth();
      }
      metrics_.Set("nv_inference_pending_request_count", {{"model", name}}, pending);
      runtime::IoStats io = mr->model->Io();
      metrics_.Set("truegreen_host_to_device_bytes_total", {{"model", name}},
                   static_cast<double>(io.h2d_bytes));
      metrics_.Set("truegreen_device_to_host_bytes_total", {{"model", name}},
                   static_cast<double>(io.d2h_bytes));
    }
  }
  memory_.Export(metrics_);
  metrics_.Set("truegreen_http_requests_in_flight", {}, in_flight_.load());
  for (int code = 0; code < kMaxStatus; ++code) {
    const std::uint64_t n = status_counts_[code].load(std::memory_order_relaxed);
    if (n != 0) {
      metrics_.Set("truegreen_http_requests_total", {{"code", std::to_string(code)}},
                   static_cast<double>(n));
    }
  }
  // Readiness also falls with the GPU liveness check, which has its own thread.
  metrics_.Set("truegreen_ready", {}, NotReadyReason().empty() ? 1 : 0);
  HttpResponse r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = metrics_.Render();
  return r;
}

void Server::DeclareMetrics() {
  Metrics& m = metrics_;
  // Triton-compatible names (same meaning as Triton's; counters without _total, as Triton has).
  m.DeclareCounter("nv_inference_request_success", "Successful inference requests per model");
  m.DeclareCounter("nv_inference_request_failure", "Failed inference requests per model, reason");
  m.DeclareCounter("nv_inference_count", "Inferences performed (images or batch rows)");
  m.DeclareCounter("nv_inference_exec_count", "Model executions (a batch counts once)");
  m.DeclareGauge("nv_inference_pending_request_count", "Requests queued, not yet executing");
  m.DeclareCounter("nv_inference_request_duration_us", "Cumulative end-to-end request time (us)");
  m.DeclareCounter("nv_inference_queue_duration_us", "Cumulative time requests waited in queue");
  m.DeclareCounter("nv_inference_compute_infer_duration_us", "Cumulative model compute time (us)");
  const auto lat = Metrics::LatencyBuckets();
  m.DeclareHistogram("truegreen_request_duration_seconds", "End-to-end request latency", lat);
  m.DeclareHistogram("truegreen_queue_duration_seconds", "Time spent queued", lat);
  m.DeclareHistogram("truegreen_compute_duration_seconds", "Model compute time", lat);
  m.DeclareHistogram("truegreen_denoise_step_duration_seconds", "UNet time per denoising step",
                     lat);
  m.DeclareHistogram("truegreen_batch_size", "Requests per model execution",
                     Metrics::CountBuckets());
  m.DeclareGauge("truegreen_queue_depth", "Queued requests per model lane");
  m.DeclareGauge("truegreen_in_flight", "Executions running per model lane");
  m.DeclareGauge("truegreen_http_requests_in_flight", "HTTP requests accepted, not yet answered");
  m.DeclareCounter("truegreen_images_generated_total", "Images generated per model");
  m.DeclareCounter("truegreen_http_requests_total", "HTTP responses by status code");
  m.DeclareCounter("truegreen_http_rejections_total", "Requests refused by the transport");
  m.DeclareGauge("truegreen_canary_latency_seconds", "Latest canary latency quantiles");
  m.DeclareGauge("truegreen_canary_ok", "1 when the latest canary passed");
  m.DeclareCounter("truegreen_canary_runs_total", "Canary runs by outcome");
  m.DeclareGauge("truegreen_gate_status", "1 when the start-up gate passed, 0 otherwise");
  m.DeclareGauge("truegreen_session_nodes", "Graph nodes per provider per model session");
  m.DeclareGauge("truegreen_degraded", "1 when any model runs degraded (dev policy, CPU)");
  m.DeclareGauge("truegreen_ready", "1 when /readyz answers 200");
  m.DeclareCounter("truegreen_host_to_device_bytes_total", "Host to device bytes (IO binding)");
  m.DeclareCounter("truegreen_device_to_host_bytes_total", "Device to host bytes (IO binding)");
  MemoryAdmission::Declare(m);
  for (std::size_t i = 0; i < readiness_.gate_count(); ++i) {
    m.Set("truegreen_gate_status", {{"gate", readiness_.gate_name(i)}}, 0);
  }
  m.Set("truegreen_ready", {}, 0);
  m.Set("truegreen_canary_ok", {}, 0);
}

// ---- routing ----------------------------------------------------------------------------------

bool Server::Authorized(const HttpRequest& req) const {
  if (config_.token.empty()) return true;
  const std::string got = req.Header("authorization");
  const std::string want = "Bearer " + config_.token;
  // Compare digests in constant time, so neither content nor length leaks through timing.
  unsigned char a[SHA256_DIGEST_LENGTH], b[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(got.data()), got.size(), a);
  SHA256(reinterpret_cast<const unsigned char*>(want.data()), want.size(), b);
  return CRYPTO_memcmp(a, b, sizeof(a)) == 0;
}

void Server::Finish(const std::shared_ptr<RequestCtx>& ctx, const Responder& respond,
                    HttpResponse r) {
  const double total_ms = MsSince(ctx->start);
  if (r.status >= 0 && r.status < kMaxStatus) {
    status_counts_[r.status].fetch_add(1, std::memory_order_relaxed);
  }
  if (!ctx->model.empty()) {
    Labels lb = {{"model", ctx->model}};
    if (r.status == 200) {
      metrics_.Add("nv_inference_request_success", lb);
    } else {
      metrics_.Add("nv_inference_request_failure",
                   {{"model", ctx->model}, {"reason", std::to_string(r.status)}});
    }
    metrics_.Add("nv_inference_request_duration_us", lb, total_ms * 1e3);
    metrics_.Add("nv_inference_queue_duration_us", lb, ctx->queue_ms * 1e3);
    metrics_.Add("nv_inference_compute_infer_duration_us", lb, ctx->compute_ms * 1e3);
    metrics_.Observe("truegreen_request_duration_seconds", lb, total_ms / 1e3);
    metrics_.Observe("truegreen_queue_duration_seconds", lb, ctx->queue_ms / 1e3);
    if (ctx->compute_ms > 0) {
      metrics_.Observe("truegreen_compute_duration_seconds", lb, ctx->compute_ms / 1e3);
    }
  }
  r.headers.emplace_back("X-Request-Id", ctx->id);
  if (readiness_.draining()) r.close = true;
  if (access_log_) {
    Json line = {{"ts", static_cast<std::int64_t>(std::time(nullptr))},
                 {"id", ctx->id},
                 {"method", ctx->method},
                 {"path", ctx->path},
                 {"model", ctx->model},
                 {"status", r.status},
                 {"outcome", r.status < 400 ? "ok" : "error"},
                 {"queue_ms", ctx->queue_ms},
                 {"compute_ms", ctx->compute_ms},
                 {"total_ms", total_ms},
                 {"items", ctx->items}};
    const std::string s = common::WriteJson(line, -1, common::JsonNotice::kNone) + "\n";
    std::lock_guard<std::mutex> l(log_mu_);
    std::fwrite(s.data(), 1, s.size(), access_log_.get());
    std::fflush(access_log_.get());
  }
  respond(std::move(r));
  in_flight_.fetch_sub(1);
}

void Server::AddRoutes() {
  using Access = RouteTable::Access;
  auto live = [](Call&) -> ApiResult<Reply> {
    static const auto kLive = std::make_shared<const std::string>(R"({"live":true})");
    HttpResponse r;
    r.shared_body = kLive;
    return Reply(std::move(r));
  };
  auto ready = [this](Call&) -> ApiResult<Reply> { return Reply(readiness_.Readyz()); };
  for (const char* path : {"/healthz", "/v2/health/live"}) {
    routes_.Add("GET", path, Access::kPublic, live);
  }
  for (const char* path : {"/readyz", "/v2/health/ready"}) {
    routes_.Add("GET", path, Access::kPublic, ready);
  }
  routes_.Add("GET", "/metrics", Access::kToken,
              [this](Call&) -> ApiResult<Reply> { return Reply(MetricsText()); });
  routes_.Add("GET", "/v1/capabilities", Access::kToken,
              [this](Call&) -> ApiResult<Reply> { return Reply(Capabilities()); });
  openai_->AddRoutes(&routes_);
  kserve_->AddRoutes(&routes_);
}

ApiResult<Reply> Server::Dispatch(Call& call) {
  RouteTable::Match m = routes_.Find(call.req.method, call.path);
  if (m.access != RouteTable::Access::kPublic && !Authorized(call.req)) {
    return ApiError::Of(ErrorKind::kUnauthenticated,
                        "missing or wrong bearer token (Authorization: Bearer <token>)");
  }
  if (!m.route) {
    if (!m.allow.empty()) return ApiError::MethodNotAllowed(m.allow);
    return Status::NotFound("no such endpoint: " + call.ctx->path);
  }
  if (m.access == RouteTable::Access::kWork && readiness_.draining()) {
    return Status::Unavailable("server is draining (SIGTERM): not accepting work");
  }
  call.params = std::move(m.params);
  return m.route->handler(call);
}

void Server::Handle(HttpRequest req, Responder respond) {
  in_flight_.fetch_add(1);
  auto ctx = std::make_shared<RequestCtx>();
  ctx->id = req.Header("x-request-id");
  if (ctx->id.empty() || ctx->id.size() > 64) ctx->id = "r" + std::to_string(next_id_++);
  ctx->start = Clock::now();
  ctx->method = req.method;
  std::string path = req.target.substr(0, req.target.find('?'));
  ctx->path = path.size() > 256 ? path.substr(0, 256) : path;
  if (path == "/v2/") path = "/v2";  // the spelling of open_inference_rest.yaml
  Call call{req, std::move(path), ctx, respond, {}};
  ApiResult<Reply> r = Dispatch(call);
  // The one place a handler's error becomes its API's error answer.
  if (!r.ok()) return Finish(ctx, respond, ErrorFor(*ctx, r.error()));
  if (!r.value().queued()) Finish(ctx, respond, std::move(r.value().response()));
}

void Server::StartLanes(ModelRuntime* mr) {
  const ModelSpec& spec = mr->model->spec;
  const Limits& l = config_.limits;
  auto expire = [this](const std::shared_ptr<Job>& j) {
    auto* job = static_cast<ServerJob*>(j.get());
    job->ctx->queue_ms = MsSince(job->enqueued);
    Finish(job->ctx, job->respond,
           ErrorFor(*job->ctx,
                    ApiError::Of(ErrorKind::kDeadline,
                                 "deadline of " + std::to_string(config_.limits.deadline_ms) +
                                     " ms passed while the request was queued")));
  };
  if (mr->model->sd) {
    // Two lanes so one large job (big image or many steps) never holds small ones behind it.
    // Each batches compatible requests up to max_batch images (api_images.cc).
    for (const char* lane : {"small", "large"}) {
      mr->lanes.push_back(std::make_unique<Lane>(
          lane, l.queue_size, l.concurrency, spec.max_batch,
          std::chrono::milliseconds(spec.batch_delay_ms),
          [this, mr](std::vector<std::shared_ptr<Job>>& jobs) { openai_->RunJobs(mr, jobs); },
          expire));
    }
  } else {
    mr->lanes.push_back(std::make_unique<Lane>(
        "default", l.queue_size, l.concurrency, spec.max_batch,
        std::chrono::milliseconds(spec.batch_delay_ms),
        [this, mr](std::vector<std::shared_ptr<Job>>& jobs) { kserve_->RunJobs(mr, jobs); },
        expire));
  }
}

// ---- lifecycle --------------------------------------------------------------------------------

void Server::Shutdown(bool drain) {
  if (drain) {
    readiness_.SetDraining();
    metrics_.Set("truegreen_ready", {}, 0);
    http_->StopAccepting();
    Log("draining: no new connections; finishing " + std::to_string(in_flight_.load()) +
        " accepted request(s)");
    // Accepted requests are in lanes or being answered; wait until every one has its response.
    while (in_flight_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    // Give the I/O threads a moment to write the last responses before they stop.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (gate_thread_.joinable()) gate_thread_.join();
  readiness_.StopBackground();
  gpu_->Stop();
  for (auto& [name, mr] : models_.all()) {
    for (auto& lane : mr->lanes) lane->Drain();
  }
  http_->Stop();
}

Status Server::Run() {
  // SIGTERM/SIGINT are taken synchronously by this thread; every thread started from here on
  // (I/O, lanes, ORT's pools) inherits the blocked mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  http_ = std::make_unique<HttpServer>(
      config_.limits, [this](HttpRequest r, Responder w) { Handle(std::move(r), std::move(w)); },
      [this](int status, const std::string& reason) {
        metrics_.Add("truegreen_http_rejections_total", {{"code", std::to_string(status)}});
      });
  auto port = http_->Listen(config_.host, config_.port);
  if (!port.ok()) return port.status();  // reported by the caller's error path
  port_ = *port;
  http_->Start(config_.io_threads);
  Log("listening on " + config_.host + ":" + std::to_string(*port) + " (port " +
      std::to_string(*port) + "), policy " + config_.policy);
  if (!config_.port_file.empty()) {
    Status s = common::WriteFileAtomic(config_.port_file, std::to_string(*port) + "\n");
    if (!s.ok()) Log("cannot write --port-file: " + s.message());
  }
  gpu_->Start(config_.gpu_sample_interval_ms);
  if (!gpu_->present()) Log("nv_gpu_* metrics and GPU liveness off: " + gpu_->absent_reason());
  gate_thread_ = std::thread([this] { RunGates(); });

  while (true) {
    timespec ts{0, 100 * 1000 * 1000};
    const int sig = sigtimedwait(&set, nullptr, &ts);
    if (sig == SIGTERM || sig == SIGINT) {
      Log(std::string("received ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT"));
      Shutdown(/*drain=*/true);
      Log("stopped");
      return Status::Ok();
    }
    std::optional<Status> failed;
    {
      std::lock_guard<std::mutex> l(failure_mu_);
      failed = gate_failure_;
    }
    if (failed) {
      Shutdown(/*drain=*/false);
      return *failed;
    }
  }
}

ServeResult RunServer(const ServeConfig& config, const std::vector<ModelSpec>& models,
                      const common::LibraryLoader& loader) {
  Server s(config, models, loader);
  ServeResult r;
  r.status = s.Run();
  // The one place serve turns its outcome into the process exit code.
  r.exit_code = s.ExitCode(r.status);
  r.performance_failed = !r.status.ok() && r.exit_code != common::ExitCodeFromStatus(r.status);
  r.summary = s.Summary(r.exit_code);
  return r;
}

Json Server::Summary(int exit_code) const {
  return {{"ok", exit_code == 0},
          {"exit_code", exit_code},
          {"port", port_},
          {"degraded", readiness_.degraded()},
          {"gates", readiness_.GatesJson()}};
}

}  // namespace tg::server
