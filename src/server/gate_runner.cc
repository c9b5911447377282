#include "server/gate_runner.h"

#include <chrono>
#include <cstdio>

#include "common/outcome.h"

namespace tg::server {

using common::Json;
using common::Status;

const std::vector<std::string>& GateRunner::GateNames() {
  static const std::vector<std::string> kNames = {"admit", "sessions", "warmup", "canary"};
  return kNames;
}

GateRunner::GateRunner(Parts p)
    : config_(p.config),
      specs_(p.specs),
      loader_(p.loader),
      startup_(&p.startup),
      metrics_(p.metrics),
      gpu_(&p.gpu),
      readiness_(p.readiness),
      models_(p.models),
      memory_(p.memory),
      openai_(&p.openai),
      kserve_(&p.kserve),
      start_lanes_(std::move(p.start_lanes)),
      log_(std::move(p.log)) {}

Status GateRunner::RunAll() {
  const std::function<Status()> gates[] = {
      [this] { return GateAdmit(); }, [this] { return GateSessions(); },
      [this] { return GateWarmup(); }, [this] { return GateCanary(); }};
  static_assert(std::size(gates) == 4, "GateNames lists the gates in this order");
  for (std::size_t i = 0; i < std::size(gates); ++i) {
    if (Status s = RunGate(i, gates[i]); !s.ok()) return s;
  }
  Log(std::string("ready") + (readiness_.degraded() ? " (DEGRADED: CPU, dev policy)" : ""));
  if (config_.canary.interval_s > 0) {
    readiness_.StartBackground(std::chrono::seconds(config_.canary.interval_s),
                               [this] { BackgroundCanary(); });
  }
  return Status::Ok();
}

Status GateRunner::RunGate(std::size_t index, const std::function<Status()>& step) {
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

Status GateRunner::GateAdmit() {
  NodeAdmission a;
  Status s = startup_->SnapshotAndAdmit(&a);
  readiness_.SetAdmission(a);
  if (s.ok()) return s;
  // The refusing step's code (no GPU path 3, drift 4, configuration 2), led by the verdict.
  return Status(s.code(), a.verdict + ": " + s.message());
}

Status GateRunner::GateSessions() {
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
    start_lanes_(mr.get());
    models_.Add(spec.name, std::move(mr));
  }
  // The shared chain's op canary over every opened model: a GPU that crashes or miscomputes one
  // of their ops never serves (a CPU-only dev run skips it, saying so).
  TG_RETURN_IF_ERROR(startup_->OpCanary(specs_));
  metrics_.Set("truegreen_degraded", {}, readiness_.degraded() ? 1 : 0);
  models_.Open();
  return Status::Ok();
}

Status GateRunner::GateWarmup() {
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
Status GateRunner::GateCanary() {
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

int GateRunner::ExitCode(const Status& s) const {
  // A start-up canary that completed too slowly is a result, not an error: it leaves through the
  // result mapping. Readiness holds that canary only when every gate before it passed, so a slow
  // one means the canary gate is the one that failed.
  if (!s.ok() && readiness_.StartupCanary().slow) {
    return common::ExitCodeFromOutcome(common::Outcome::kPerformanceFailed);
  }
  return common::ExitCodeFromStatus(s);
}

}  // namespace tg::server
