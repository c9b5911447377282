// The canary's GPU side: the timed canary (server.cc) runs inside an NVML window of the GPU
// monitor, and EvaluateGpuUse (gpu_monitor.h) turns what NVML saw into the verdict, so the
// start-up gate and the background canary apply the same floor and process proof.
#include <unistd.h>

#include <cstdio>

#include "server/server_internal.h"

namespace tg::server {

bool Server::AnyGpuSession() const {
  for (const auto& [name, mr] : models_.all()) {
    const common::Json placement = mr->model->Placement();  // items() must not outlive it
    for (const auto& [part, p] : placement.items()) {
      if (p.is_object() && p.value("gpu_active", false)) return true;
    }
  }
  return false;
}

CanaryResult Server::RunCanary(const CanaryResult* baseline) {
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
