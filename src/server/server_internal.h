// Internals of the server (server/ only): the Server object shared by server.cc (start-up gates,
// routing, health, metrics), api_images.cc (OpenAI images) and api_kserve.cc (KServe v2).
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/config.h"
#include "server/api_errors.h"
#include "server/config.h"
#include "server/gpu_monitor.h"
#include "server/http.h"
#include "server/image_store.h"
#include "server/metrics.h"
#include "server/model_registry.h"
#include "server/readiness.h"
#include "server/scheduler.h"
#include "server/startup.h"

namespace tg::server {

// Per-request bookkeeping for metrics and the access log.
struct RequestCtx {
  std::string id;
  std::string method;
  std::string path;
  std::string model;
  Clock::time_point start;
  double queue_ms = 0.0;
  double compute_ms = 0.0;
  int items = 0;  // images or batch rows produced
};

// A queued request: its bookkeeping and how to answer it.
struct ServerJob : Job {
  std::shared_ptr<RequestCtx> ctx;
  Responder respond;
};

class Server {
 public:
  Server(ServeConfig config, std::vector<ModelSpec> specs, common::LibraryLoader loader);
  ~Server();
  int Run();
  // What `serve --json` prints at exit: ok, exit_code, port, degraded, gates.
  common::Json Summary(int exit_code) const;

  // Routing entry (HTTP handler).
  void Handle(HttpRequest req, Responder respond);

  // The error answer of `e` in the shape of the API `ctx.path` addresses (server/api_errors.h).
  static HttpResponse Error(const RequestCtx& ctx, const ApiError& e);
  static HttpResponse JsonResponse(int status, const common::Json& body);

 private:
  // server.cc
  void RunGates();
  bool RunGate(std::size_t index, const std::function<common::Status()>& step, int* exit_code);
  common::Status GateAdmit(int* exit_code);
  common::Status GateSessions(int* exit_code);
  common::Status GateWarmup();
  common::Status GateCanary(int* exit_code);
  // `baseline`: the start-up result, for the drift check (nullptr at start-up).
  CanaryResult RunTimedCanary(const CanaryResult* baseline);
  void RecordCanary(const CanaryResult& c);
  void BackgroundCanary();
  void StartLanes(ModelRuntime* mr);
  std::string NotReadyReason() const { return readiness_.NotReadyReason(); }
  HttpResponse Capabilities() const;
  HttpResponse MetricsText();
  void DeclareMetrics();
  bool Authorized(const HttpRequest& req) const;
  void Finish(const std::shared_ptr<RequestCtx>& ctx, const Responder& respond, HttpResponse r);
  void Shutdown(bool drain);
  void Log(const std::string& line) const;

  // server_gpu.cc: the timed canary inside an NVML window, judged by EvaluateGpuUse.
  CanaryResult RunCanary(const CanaryResult* baseline);
  bool AnyGpuSession() const;

  // api_images.cc
  HttpResponse ModelsList(const std::string& path, const RequestCtx& ctx) const;
  HttpResponse StoredImage(const std::string& path, const RequestCtx& ctx) const;
  void HandleImages(const HttpRequest& req, std::shared_ptr<RequestCtx> ctx, Responder respond);
  void RunSdJobs(ModelRuntime* mr, std::vector<std::shared_ptr<Job>>& jobs);
  common::Result<double> TimeSdCanaryRun(ModelRuntime* mr, int index);
  common::Status WarmupSd(ModelRuntime* mr);

  // api_kserve.cc
  void HandleKserve(const HttpRequest& req, const std::string& path,
                    std::shared_ptr<RequestCtx> ctx, Responder respond);
  void RunInferJobs(ModelRuntime* mr, std::vector<std::shared_ptr<Job>>& jobs);
  common::Status WarmupOnnx(ModelRuntime* mr);
  common::Result<double> TimeOnnxCanaryRun(ModelRuntime* mr);
  common::Json ModelMetadata(const ModelRuntime& mr) const;

  ServeConfig config_;
  std::vector<ModelSpec> specs_;
  common::LibraryLoader loader_;
  std::unique_ptr<Startup> startup_;
  Metrics metrics_;
  std::unique_ptr<GpuMonitor> gpu_;     // NVML metrics, liveness, canary window (after metrics_)
  std::unique_ptr<ImageStore> images_;  // response_format "url"
  std::int64_t started_unix_ = 0;       // process start (Model.created of /v1/models)

  Readiness readiness_;   // gates, canaries, faults, draining/degraded, /readyz (after gpu_)
  ModelRegistry models_;  // filled by the sessions gate, then opened
  std::atomic<bool> started_{false};  // every gate passed
  std::atomic<int> exit_code_{-1};    // set by a failed gate with exit_on_fail
  std::atomic<int> in_flight_{0};     // requests accepted and not yet answered
  std::atomic<std::uint64_t> next_id_{1};
  int port_ = 0;

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;

  // Responses per HTTP status code, lock-free on the request path; folded into
  // truegreen_http_requests_total when /metrics renders.
  static constexpr int kMaxStatus = 600;
  std::array<std::atomic<std::uint64_t>, kMaxStatus> status_counts_{};

  FILE* access_log_ = nullptr;
  bool own_access_log_ = false;
  std::mutex log_mu_;

  std::unique_ptr<HttpServer> http_;
  std::thread gate_thread_;
  std::thread bg_thread_;
};

inline double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

}  // namespace tg::server
