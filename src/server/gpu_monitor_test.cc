#include "server/gpu_monitor.h"

#include <gtest/gtest.h>

namespace tg::server {
namespace {

constexpr unsigned kPid = 4242;

GpuWindow OneGpu(std::optional<double> util, std::optional<std::vector<unsigned>> pids) {
  GpuWindow w;
  w.nvml = true;
  GpuWindowDevice d;
  d.uuid = "GPU-a";
  d.utilization = util;
  if (!util) d.utilization_unavailable = "nvmlDeviceGetUtilizationRates failed with 3";
  d.pids = std::move(pids);
  if (!d.pids) d.processes_unavailable = "nvmlDeviceGetComputeRunningProcesses_v3 failed with 3";
  w.devices.push_back(d);
  return w;
}

GpuUsePolicy Policy(std::optional<double> floor, bool gpu_sessions) {
  GpuUsePolicy p;
  p.min_utilization = floor;
  p.gpu_sessions = gpu_sessions;
  return p;
}

TEST(EvaluateGpuUseTest, CpuSessionsWithoutAFloorRequireNothing) {
  GpuUseVerdict v = EvaluateGpuUse(OneGpu(0.0, std::vector<unsigned>{}), Policy({}, false), kPid);
  EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kPass);
  EXPECT_EQ(v.process_proof, "not required");
  EXPECT_EQ(v.floor_check, "not gated");
}

TEST(EvaluateGpuUseTest, ListedProcessAndUtilisationAboveTheFloorPass) {
  GpuUseVerdict v =
      EvaluateGpuUse(OneGpu(0.6, std::vector<unsigned>{7, kPid}), Policy(0.5, true), kPid);
  EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kPass);
  EXPECT_EQ(v.process_proof, "proven");
  EXPECT_EQ(v.floor_check, "passed");
  EXPECT_DOUBLE_EQ(v.utilization.value_or(-1), 0.6);
}

TEST(EvaluateGpuUseTest, BelowTheFloorIsThePerformanceGate) {
  GpuUseVerdict v =
      EvaluateGpuUse(OneGpu(0.1, std::vector<unsigned>{kPid}), Policy(0.5, true), kPid);
  EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kBelowFloor);
  EXPECT_EQ(v.floor_check, "below floor");
  EXPECT_NE(v.message.find("0.10"), std::string::npos) << v.message;
}

TEST(EvaluateGpuUseTest, ProcessMissingFromTheListIsNotOnTheGpu) {
  GpuUseVerdict v =
      EvaluateGpuUse(OneGpu(0.9, std::vector<unsigned>{1, 2}), Policy({}, true), kPid);
  EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kNotOnGpu);
  EXPECT_EQ(v.process_proof, "not proven");
  EXPECT_NE(v.message.find("pid 4242"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("GPU-a lists pid 1,2"), std::string::npos) << v.message;
  // An empty list (nobody holds a context) is the same finding.
  v = EvaluateGpuUse(OneGpu(0.0, std::vector<unsigned>{}), Policy({}, true), kPid);
  EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kNotOnGpu);
  EXPECT_NE(v.message.find("lists pid none"), std::string::npos) << v.message;
}

TEST(EvaluateGpuUseTest, ProcessOnAnyOfSeveralGpusIsProven) {
  GpuWindow w = OneGpu(0.0, std::vector<unsigned>{});
  GpuWindowDevice second;
  second.uuid = "GPU-b";
  second.utilization = 0.7;
  second.pids = std::vector<unsigned>{kPid};
  w.devices.push_back(second);
  GpuUseVerdict v = EvaluateGpuUse(w, Policy(0.5, true), kPid);
  EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kPass);
  EXPECT_EQ(v.process_proof, "proven");
  EXPECT_DOUBLE_EQ(v.utilization.value_or(-1), 0.7);  // the busiest GPU
}

// Green means proven: what NVML cannot say is "not measured", and a floor that cannot be
// measured fails rather than passes.
TEST(EvaluateGpuUseTest, UnreadableProcessListIsNotMeasuredNeverProven) {
  GpuUseVerdict v = EvaluateGpuUse(OneGpu(0.9, std::nullopt), Policy({}, true), kPid);
  EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kPass);
  EXPECT_EQ(v.process_proof, "not measured");
  EXPECT_NE(v.message.find("not measured"), std::string::npos);
  EXPECT_NE(v.message.find("GPU-a"), std::string::npos) << v.message;
}

TEST(EvaluateGpuUseTest, UnmeasurableUtilisationFailsAFloor) {
  GpuUseVerdict v =
      EvaluateGpuUse(OneGpu(std::nullopt, std::vector<unsigned>{kPid}), Policy(0.3, true), kPid);
  EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kBelowFloor);
  EXPECT_EQ(v.floor_check, "not measured");
  EXPECT_NE(v.message.find("set but not measured"), std::string::npos) << v.message;
}

TEST(EvaluateGpuUseTest, WithoutNvmlGpuSessionsAreNotMeasuredAndAFloorFails) {
  GpuWindow w;
  w.absent_reason = "NVML not available: libnvidia-ml.so.1: cannot open shared object file";
  GpuUseVerdict v = EvaluateGpuUse(w, Policy({}, true), kPid);
  EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kPass);
  EXPECT_EQ(v.process_proof, "not measured");
  EXPECT_NE(v.message.find("libnvidia-ml.so.1"), std::string::npos) << v.message;
  v = EvaluateGpuUse(w, Policy(0.2, true), kPid);
  EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kBelowFloor);
  EXPECT_EQ(v.floor_check, "not measured");
}

}  // namespace
}  // namespace tg::server
