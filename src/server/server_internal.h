// Internals of the server (server/ only): the Server object (server.cc) composes the parts:
// the transport (http.h), the route table (router.h), the OpenAI and KServe adapters
// (api_adapters.h), readiness with the background canary (readiness.h), the model registry
// (model_registry.h), metrics, the image store and the GPU monitor. It runs the start-up gates
// and answers health, /metrics and /v1/capabilities itself.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/config.h"
#include "common/file_handles.h"
#include "server/api_adapters.h"
#include "server/api_errors.h"
#include "server/config.h"
#include "server/gpu_monitor.h"
#include "server/http.h"
#include "server/image_store.h"
#include "server/memory_admission.h"
#include "server/metrics.h"
#include "server/model_registry.h"
#include "server/readiness.h"
#include "server/router.h"
#include "server/scheduler.h"
#include "server/startup.h"

namespace tg::server {

class Server {
 public:
  Server(ServeConfig config, std::vector<ModelSpec> specs, common::LibraryLoader loader);
  ~Server();
  // Serves until SIGTERM/SIGINT (OK after the drain) or a failed gate with exit_on_fail (that
  // gate's Status); INVALID_ARG when the port cannot be bound.
  common::Status Run();
  // serve's exit code for Run's outcome: common::ExitCodeFromStatus, except a start-up canary
  // that completed above a ceiling or below the GPU floor, a result that leaves through
  // common::ExitCodeFromOutcome (performance failed, 5).
  int ExitCode(const common::Status& s) const;
  // What `serve --json` prints at exit: ok, exit_code, port, degraded, gates.
  common::Json Summary(int exit_code) const;

  // The HTTP handler: routes the request and answers it, an error in its API's shape.
  void Handle(HttpRequest req, Responder respond);

 private:
  // server.cc
  void RunGates();
  // Each gate returns OK or why it failed; ExitCode turns that into serve's exit code.
  common::Status RunGate(std::size_t index, const std::function<common::Status()>& step);
  common::Status GateAdmit();
  common::Status GateSessions();
  common::Status GateWarmup();
  // server_memory.cc: calibrates the image models' memory models, resolves the budget, keeps the
  // generic models' graphs for their estimates.
  common::Status GateMemory();
  // A shape-only copy of each generic model's graph for its KServe estimates (onnx_memory.h),
  // read when twice the file fits in `available` bytes.
  void KeepOnnxGraphs(std::int64_t available);
  common::Status GateCanary();
  // `baseline`: the start-up result, for the drift check (nullptr at start-up).
  CanaryResult RunTimedCanary(const CanaryResult* baseline);
  void RecordCanary(const CanaryResult& c);
  // One background canary run (Readiness runs it every --canary-interval-s).
  void BackgroundCanary();
  void StartLanes(ModelRuntime* mr);
  void AddRoutes();
  // Access (token, draining), then the route's handler; a path no route takes is 404 or 405.
  ApiResult<Reply> Dispatch(Call& call);
  std::string NotReadyReason() const { return readiness_.NotReadyReason(); }
  HttpResponse Capabilities() const;
  HttpResponse MetricsText();
  void DeclareMetrics();
  bool Authorized(const HttpRequest& req) const;
  void Finish(const std::shared_ptr<RequestCtx>& ctx, const Responder& respond, HttpResponse r);
  void Shutdown(bool drain);
  // One operational line on stderr ("truegreen serve: <line>"), JSON under --log-format json.
  void Log(const std::string& line, std::string_view level = "info") const;

  // server_gpu.cc: the timed canary inside an NVML window, judged by EvaluateGpuUse.
  CanaryResult RunCanary(const CanaryResult* baseline);
  bool AnyGpuSession() const;

  ServerParts Parts();

  ServeConfig config_;
  std::vector<ModelSpec> specs_;
  common::LibraryLoader loader_;
  std::unique_ptr<Startup> startup_;
  Metrics metrics_;
  std::unique_ptr<GpuMonitor> gpu_;     // NVML metrics, liveness, canary window (after metrics_)
  std::unique_ptr<ImageStore> images_;  // response_format "url"
  std::int64_t started_unix_ = 0;       // process start (Model.created of /v1/models)

  MemoryAdmission memory_;  // budget, memory models, running jobs' reservations
  Readiness readiness_;     // gates, canaries, faults, draining/degraded, /readyz (after gpu_)
  ModelRegistry models_;    // filled by the sessions gate, then opened
  RouteTable routes_;
  std::unique_ptr<OpenAiApi> openai_;
  std::unique_ptr<KserveApi> kserve_;
  std::atomic<int> in_flight_{0};  // requests accepted and not yet answered
  std::atomic<std::uint64_t> next_id_{1};
  int port_ = 0;

  std::mutex failure_mu_;
  std::optional<common::Status> gate_failure_;  // a failed gate with exit_on_fail (failure_mu_)

  // Responses per HTTP status code, lock-free on the request path; folded into
  // truegreen_http_requests_total when /metrics renders.
  static constexpr int kMaxStatus = 600;
  std::array<std::atomic<std::uint64_t>, kMaxStatus> status_counts_{};

  common::UniqueFile access_log_;  // none with --access-log off
  std::mutex log_mu_;

  std::unique_ptr<HttpServer> http_;
  std::thread gate_thread_;
};

}  // namespace tg::server
