// The timed canary of the gates and of the background check: fixed prompts and seeds through each
// model's own API, P50/P95 against the ceilings and the start-up baseline, inside an NVML window
// of the GPU monitor that EvaluateGpuUse (gpu_monitor.h) judges, so the start-up gate and the
// background canary apply the same floor and process proof.
#include <unistd.h>

#include <cstdio>
#include <ctime>

#include "common/file_util.h"
#include "common/percentile.h"
#include "server/gate_runner.h"

namespace tg::server {

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

CanaryResult GateRunner::RunTimedCanary(const CanaryResult* baseline) {
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

void GateRunner::RecordCanary(const CanaryResult& c) {
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

void GateRunner::BackgroundCanary() {
  const CanaryResult baseline = readiness_.StartupCanary();
  CanaryResult c = RunCanary(&baseline);
  RecordCanary(c);
  const std::string was = readiness_.SetBackgroundCanary(c);
  if (c.ok && !was.empty()) Log("background canary recovered: ready again");
  if (!c.ok && was.empty()) {
    Log("background canary FAILED, /readyz now 503: " + c.message, "error");
  }
}

bool GateRunner::AnyGpuSession() const {
  for (const auto& [name, mr] : models_.all()) {
    const common::Json placement = mr->model->Placement();  // items() must not outlive it
    for (const auto& [part, p] : placement.items()) {
      if (p.is_object() && p.value("gpu_active", false)) return true;
    }
  }
  return false;
}

CanaryResult GateRunner::RunCanary(const CanaryResult* baseline) {
  gpu_->BeginWindow();
  CanaryResult c = RunTimedCanary(baseline);
  const GpuWindow w = gpu_->EndWindow();
  GpuUsePolicy policy;
  policy.min_utilization = config_.canary.min_gpu_utilization;
  policy.gpu_sessions = AnyGpuSession();
  const GpuUseVerdict v =
      EvaluateGpuUse(w, policy, ReadSelfProcess(static_cast<unsigned>(getpid())));
  c.gpu = v.ToJson();
  if (v.utilization) metrics_.Set("truegreen_canary_gpu_utilization", {}, *v.utilization);
  // A run that already failed keeps its own reason; the GPU verdict is still reported.
  if (!c.ok) return c;
  switch (v.outcome) {
    case GpuUseVerdict::Outcome::kBelowFloor:
      c.ok = false;
      c.slow = true;  // the performance gate: exit 5 at start-up
      c.message = v.message;
      return c;
    case GpuUseVerdict::Outcome::kNotOnGpu:
      c.ok = false;  // no usable GPU path: exit 3 at start-up
      c.message = v.message;
      return c;
    case GpuUseVerdict::Outcome::kPass:
      break;
  }
  std::string gpu = "GPU use by this process: " + v.process_proof;
  if (v.utilization) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), ", utilisation %.2f", *v.utilization);
    gpu += buf;
  }
  if (v.floor_check != "not gated") gpu += ", floor " + v.floor_check;
  if (!v.message.empty()) gpu += " (" + v.message + ")";
  c.message += "; " + gpu;
  return c;
}

}  // namespace tg::server
