// The start-up gates and the timed canary of the server (server/ only). RunAll runs the gates in
// order on the calling thread (serve's gate thread): admit (snapshot + admission + the provider
// factory), sessions (placement proof per model, lanes started, then the op canary over their
// ops), warm-up (per model and shape, then the memory model and budget), canary (fixed prompts and
// seeds, timed against the P50/P95 ceilings; with NVML also the GPU-utilisation floor and the proof
// that this process used the GPU). Each gate's state goes to Readiness, its result to the metrics
// and the log. Once all pass it starts the background canary, which repeats the timed canary with
// the start-up run as its drift baseline.
//
// Ownership: GateRunner owns nothing but its references (Parts), which must outlive it; the
// sessions it opens go to the ModelRegistry. Failure: RunAll returns the failed gate's Status
// (UNAVAILABLE no fast path, FAILED_PRECONDITION drift, INVALID_ARG/NOT_FOUND model files);
// ExitCode turns it into serve's exit code (a canary that completed too slowly is the performance
// result, 5). Thread safety: RunAll runs once, on one thread; ExitCode may be called from any
// thread after it returned; the background canary runs on Readiness's thread.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/dynlib.h"
#include "common/status.h"
#include "server/api_adapters.h"
#include "server/gates.h"
#include "server/gpu_monitor.h"
#include "server/memory_admission.h"
#include "server/metrics.h"
#include "server/model_registry.h"
#include "server/readiness.h"
#include "server/serve_config.h"

namespace tg::server {

class GateRunner {
 public:
  struct Parts {
    const ServeConfig& config;
    const std::vector<ModelSpec>& specs;
    const common::LibraryLoader& loader;
    Startup& startup;
    Metrics& metrics;
    GpuMonitor& gpu;
    Readiness& readiness;
    ModelRegistry& models;
    MemoryAdmission& memory;
    OpenAiApi& openai;
    KserveApi& kserve;
    std::function<void(ModelRuntime*)> start_lanes;  // a model's scheduler lanes (sessions gate)
    std::function<void(const std::string& line, std::string_view level)> log;
  };

  // The gates in the order RunAll runs them (Readiness is built with these names).
  static const std::vector<std::string>& GateNames();

  explicit GateRunner(Parts parts);
  // See the file comment.
  [[nodiscard]] common::Status RunAll();
  // serve's exit code for `s`: common::ExitCodeFromStatus, except a start-up canary that completed
  // above a ceiling or below the GPU floor, which leaves through common::ExitCodeFromOutcome.
  int ExitCode(const common::Status& s) const;

 private:
  // Each gate returns OK or why it failed.
  common::Status RunGate(std::size_t index, const std::function<common::Status()>& step);
  common::Status GateAdmit();
  common::Status GateSessions();
  common::Status GateWarmup();
  // gate_runner_memory.cc: calibrates the image models' memory models, resolves the budget, keeps
  // the generic models' graphs for their estimates.
  common::Status GateMemory();
  // A shape-only copy of each generic model's graph for its KServe estimates (onnx_memory.h),
  // read when twice the file fits in `available` bytes.
  void KeepOnnxGraphs(std::int64_t available);
  common::Status GateCanary();

  // gate_runner_canary.cc. `baseline`: the start-up result, for the drift check (nullptr at
  // start-up).
  CanaryResult RunTimedCanary(const CanaryResult* baseline);
  // The timed canary inside an NVML window of the GPU monitor, judged by EvaluateGpuUse.
  CanaryResult RunCanary(const CanaryResult* baseline);
  bool AnyGpuSession() const;
  void RecordCanary(const CanaryResult& c);
  // One background canary run (Readiness runs it every --canary-interval-s).
  void BackgroundCanary();

  void Log(const std::string& line, std::string_view level = "info") const { log_(line, level); }

  const ServeConfig& config_;
  const std::vector<ModelSpec>& specs_;
  const common::LibraryLoader& loader_;
  Startup* startup_;
  Metrics& metrics_;
  GpuMonitor* gpu_;
  Readiness& readiness_;
  ModelRegistry& models_;
  MemoryAdmission& memory_;
  OpenAiApi* openai_;
  KserveApi* kserve_;
  std::function<void(ModelRuntime*)> start_lanes_;
  std::function<void(const std::string&, std::string_view)> log_;
};

}  // namespace tg::server
