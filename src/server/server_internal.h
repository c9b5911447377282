// Internals of the server (server/ only). Server (server.cc) wires the parts together and owns the
// lifecycle (Run, Shutdown): the transport (http.h), the request front end (front_end.h: token,
// access log, the finish path), the route table (router.h), the OpenAI and KServe adapters
// (api_adapters.h), the gate runner (gate_runner.h: start-up gates and canaries), readiness and
// the one ServerState (readiness.h), the metrics families (serve_metrics.h), the model registry
// (model_registry.h), memory admission, the image store and the GPU monitor. It answers health
// and /v1/capabilities itself.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/config.h"
#include "common/file_util.h"
#include "server/api_adapters.h"
#include "server/front_end.h"
#include "server/gate_runner.h"
#include "server/gates.h"
#include "server/gpu_monitor.h"
#include "server/http.h"
#include "server/image_store.h"
#include "server/lanes.h"
#include "server/memory_admission.h"
#include "server/metrics.h"
#include "server/model_registry.h"
#include "server/readiness.h"
#include "server/router.h"
#include "server/serve_config.h"
#include "server/serve_metrics.h"

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
  // What `serve --json` prints at exit: ok, exit_code, state, reason, port, degraded, gates.
  common::Json Summary(int exit_code) const;

 private:
  // The gate thread: the gates (GateRunner::RunAll); a failure with exit_on_fail wakes Run.
  void RunGates();
  void StartLanes(ModelRuntime* mr);
  void AddRoutes();
  HttpResponse Capabilities() const;
  void Shutdown(bool drain);
  // One operational line on stderr ("truegreen serve: <line>"), JSON under --log-format json.
  void Log(const std::string& line, std::string_view level = "info") const;

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
  std::unique_ptr<GateRunner> gates_;  // the start-up gates and the canaries (after the APIs)
  int port_ = 0;

  std::mutex failure_mu_;
  std::optional<common::Status> gate_failure_;  // a failed gate with exit_on_fail (failure_mu_)
  common::UniqueFd wake_;  // eventfd: the gate thread wakes Run with a failed gate (Run creates it)

  std::unique_ptr<FrontEnd> front_;  // authentication, access log, the finish path (after routes_)

  std::unique_ptr<HttpServer> http_;
  std::thread gate_thread_;
};

}  // namespace tg::server
