#include "server/server.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include "common/file_util.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/outcome.h"
#include "server/server_internal.h"

namespace tg::server {

using common::Json;
using common::Status;

Server::Server(ServeConfig config, std::vector<ModelSpec> specs, common::LibraryLoader loader)
    : config_(std::move(config)),
      specs_(std::move(specs)),
      loader_(std::move(loader)),
      readiness_(GateRunner::GateNames(),
                 [this] { return gpu_ ? gpu_->LivenessFault() : std::string(); }) {
  startup_ = MakeChainStartup(config_, loader_);
  gpu_ = std::make_unique<GpuMonitor>(loader_, &metrics_, [this](const std::string& l) { Log(l); });
  images_ = std::make_unique<ImageStore>(config_.image_store_bytes,
                                         std::chrono::seconds(config_.image_ttl_s));
  started_unix_ = static_cast<std::int64_t>(std::time(nullptr));
  openai_ = std::make_unique<OpenAiApi>(Parts());
  kserve_ = std::make_unique<KserveApi>(Parts());
  AddRoutes();
  DeclareServerMetrics(metrics_, GateRunner::GateNames());
  front_ = std::make_unique<FrontEnd>(config_, routes_, readiness_, metrics_,
                                      [this](const std::string& l) { Log(l); });
  gates_ = std::make_unique<GateRunner>(GateRunner::Parts{
      config_, specs_, loader_, *startup_, metrics_, *gpu_, readiness_, models_, memory_, *openai_,
      *kserve_, [this](ModelRuntime* mr) { StartLanes(mr); },
      [this](const std::string& line, std::string_view level) { Log(line, level); }});
}

int Server::ExitCode(const Status& s) const { return gates_->ExitCode(s); }

void Server::RunGates() {
  const Status failed = gates_->RunAll();
  if (failed.ok()) return;
  if (!config_.exit_on_fail) {
    Log("--exit-on-fail=false: staying up, /readyz answers 503 with the reason");
    return;
  }
  {
    std::lock_guard<std::mutex> l(failure_mu_);
    gate_failure_ = failed;
  }
  const std::uint64_t one = 1;  // wakes Run (an eventfd write of 8 bytes cannot be short)
  if (::write(wake_.get(), &one, sizeof(one)) != sizeof(one)) {
    Log("cannot wake the main thread: " + std::string(std::strerror(errno)), "error");
  }
}

Server::~Server() {
  // The background canary runs through gates_, which goes before readiness_ does.
  readiness_.StopBackground();
}

void Server::Log(const std::string& line, std::string_view level) const {
  // Operational log lines go to stderr whatever the --log-level (tests and operators read them),
  // through the shared writer so --log-format json makes each one a JSON object.
  common::WriteStderrLine(level, "truegreen serve: " + line);
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
                            HttpResponse r) { front_->Finish(ctx, respond, std::move(r)); }};
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

// ---- routing ----------------------------------------------------------------------------------

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
  routes_.Add("GET", "/metrics", Access::kToken, [this](Call&) -> ApiResult<Reply> {
    return Reply(RenderServerMetrics(metrics_, models_, memory_, *front_, readiness_));
  });
  routes_.Add("GET", "/v1/capabilities", Access::kToken,
              [this](Call&) -> ApiResult<Reply> { return Reply(Capabilities()); });
  openai_->AddRoutes(&routes_);
  kserve_->AddRoutes(&routes_);
}

void Server::StartLanes(ModelRuntime* mr) {
  const ModelSpec& spec = mr->model->spec;
  const Limits& l = config_.limits;
  auto expire = [this](const std::shared_ptr<Job>& j) {
    auto* job = static_cast<ServerJob*>(j.get());
    job->ctx->queue_ms = MsSince(job->enqueued);
    front_->Finish(
        job->ctx, job->respond,
        ErrorFor(*job->ctx,
                 ApiError::Of(ErrorKind::kDeadline,
                              "deadline of " + std::to_string(config_.limits.deadline_ms) +
                                  " ms passed while the request was queued")));
  };
  if (mr->model->sd) {
    // Two lanes so one large job (big image or many steps) never holds small ones behind it.
    // Each batches compatible requests up to max_batch images (api_adapters_openai.cc).
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
    http_->StopAccepting();
    Log("draining: no new connections; finishing " + std::to_string(front_->in_flight()) +
        " accepted request(s)");
    // Accepted requests are in lanes or being answered: the transport wakes this thread when the
    // last response is written. A queued request ends by its deadline at the latest, and a write
    // to a client that stopped reading by the body timeout, so the wait is bounded by both.
    const std::chrono::milliseconds limit(static_cast<std::int64_t>(config_.limits.deadline_ms) +
                                          config_.limits.body_timeout_ms);
    if (!http_->WaitForResponses(limit)) {
      Log("drain: responses still unwritten after " + std::to_string(limit.count()) +
              " ms; stopping",
          "warn");
    }
  }
  if (gate_thread_.joinable()) gate_thread_.join();
  readiness_.StopBackground();
  gpu_->Stop();
  for (auto& [name, mr] : models_.all()) {
    for (auto& lane : mr->lanes) lane->Drain();
  }
  http_->Stop();
}

// Run sleeps in poll() on two descriptors: a signalfd for SIGTERM/SIGINT (blocked in every thread,
// so only this one takes them) and an eventfd the gate thread writes when a gate fails with
// exit_on_fail. It wakes for one of those and nothing else.
Status Server::Run() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  common::UniqueFd signals(::signalfd(-1, &set, SFD_CLOEXEC));
  wake_ = common::UniqueFd(::eventfd(0, EFD_CLOEXEC));
  if (signals.get() < 0 || wake_.get() < 0) {
    return Status::Unavailable(std::string("cannot create the signal and wake-up descriptors: ") +
                               std::strerror(errno));
  }

  http_ = std::make_unique<HttpServer>(
      config_.limits,
      [this](HttpRequest r, Responder w) { front_->Handle(std::move(r), std::move(w)); },
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
    pollfd fds[2] = {{signals.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) continue;  // EINTR (a signal outside the set)
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info{};
      if (::read(signals.get(), &info, sizeof(info)) != sizeof(info)) continue;
      Log(std::string("received ") + (info.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT"));
      Shutdown(/*drain=*/true);
      Log("stopped");
      return Status::Ok();
    }
    if (fds[1].revents & POLLIN) {
      std::uint64_t n = 0;
      if (::read(wake_.get(), &n, sizeof(n)) != sizeof(n)) continue;
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
  const ServerState state = readiness_.State();
  return {{"ok", exit_code == 0},
          {"exit_code", exit_code},
          {"state", std::string(ServerPhaseName(state.phase))},
          {"reason", state.reason},
          {"port", port_},
          {"degraded", readiness_.degraded()},
          {"gates", readiness_.GatesJson()}};
}

}  // namespace tg::server
