#include "server/gpu_monitor.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "tests/support/test_util.h"

namespace tg::server {
namespace {

constexpr unsigned kPid = 4242;
const SelfProcess kSelf{kPid, false, {}};  // the initial PID namespace: NVML's pids are ours

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
  GpuUseVerdict v = EvaluateGpuUse(OneGpu(0.0, std::vector<unsigned>{}), Policy({}, false), kSelf);
  EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kPass);
  EXPECT_EQ(v.process_proof, "not required");
  EXPECT_EQ(v.floor_check, "not gated");
}

TEST(EvaluateGpuUseTest, ListedProcessAndUtilisationAboveTheFloorPass) {
  GpuUseVerdict v =
      EvaluateGpuUse(OneGpu(0.6, std::vector<unsigned>{7, kPid}), Policy(0.5, true), kSelf);
  EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kPass);
  EXPECT_EQ(v.process_proof, "proven");
  EXPECT_EQ(v.floor_check, "passed");
  EXPECT_DOUBLE_EQ(v.utilization.value_or(-1), 0.6);
}

TEST(EvaluateGpuUseTest, BelowTheFloorIsThePerformanceGate) {
  GpuUseVerdict v =
      EvaluateGpuUse(OneGpu(0.1, std::vector<unsigned>{kPid}), Policy(0.5, true), kSelf);
  EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kBelowFloor);
  EXPECT_EQ(v.floor_check, "below floor");
  EXPECT_NE(v.message.find("0.10"), std::string::npos) << v.message;
}

TEST(EvaluateGpuUseTest, ProcessMissingFromTheListIsNotOnTheGpu) {
  GpuUseVerdict v =
      EvaluateGpuUse(OneGpu(0.9, std::vector<unsigned>{1, 2}), Policy({}, true), kSelf);
  EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kNotOnGpu);
  EXPECT_EQ(v.process_proof, "not proven");
  EXPECT_NE(v.message.find("pid 4242"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("GPU-a lists pid 1,2"), std::string::npos) << v.message;
  // An empty list (nobody holds a context) is the same finding.
  v = EvaluateGpuUse(OneGpu(0.0, std::vector<unsigned>{}), Policy({}, true), kSelf);
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
  GpuUseVerdict v = EvaluateGpuUse(w, Policy(0.5, true), kSelf);
  EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kPass);
  EXPECT_EQ(v.process_proof, "proven");
  EXPECT_DOUBLE_EQ(v.utilization.value_or(-1), 0.7);  // the busiest GPU
}

// Green means proven: what NVML cannot say is "not measured", and a floor that cannot be
// measured fails rather than passes.
TEST(EvaluateGpuUseTest, UnreadableProcessListIsNotMeasuredNeverProven) {
  GpuUseVerdict v = EvaluateGpuUse(OneGpu(0.9, std::nullopt), Policy({}, true), kSelf);
  EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kPass);
  EXPECT_EQ(v.process_proof, "not measured");
  EXPECT_NE(v.message.find("not measured"), std::string::npos);
  EXPECT_NE(v.message.find("GPU-a"), std::string::npos) << v.message;
}

TEST(EvaluateGpuUseTest, UnmeasurableUtilisationFailsAFloor) {
  GpuUseVerdict v =
      EvaluateGpuUse(OneGpu(std::nullopt, std::vector<unsigned>{kPid}), Policy(0.3, true), kSelf);
  EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kBelowFloor);
  EXPECT_EQ(v.floor_check, "not measured");
  EXPECT_NE(v.message.find("set but not measured"), std::string::npos) << v.message;
}

TEST(EvaluateGpuUseTest, WithoutNvmlGpuSessionsAreNotMeasuredAndAFloorFails) {
  GpuWindow w;
  w.absent_reason = "NVML not available: libnvidia-ml.so.1: cannot open shared object file";
  GpuUseVerdict v = EvaluateGpuUse(w, Policy({}, true), kSelf);
  EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kPass);
  EXPECT_EQ(v.process_proof, "not measured");
  EXPECT_NE(v.message.find("libnvidia-ml.so.1"), std::string::npos) << v.message;
  v = EvaluateGpuUse(w, Policy(0.2, true), kSelf);
  EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kBelowFloor);
  EXPECT_EQ(v.floor_check, "not measured");
}

// In its own PID namespace (a pod without hostPID) the driver's host pids never match getpid().
TEST(EvaluateGpuUseTest, OwnPidNamespaceWithItsDeviceOpenAndABusyGpuIsProvenIndirectly) {
  const SelfProcess self{17, true, {"/dev/nvidia0"}};
  GpuUseVerdict v =
      EvaluateGpuUse(OneGpu(0.7, std::vector<unsigned>{98765}), Policy(0.5, true), self);
  EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kPass) << v.message;
  EXPECT_EQ(v.process_proof, "proven indirectly");
  EXPECT_EQ(v.floor_check, "passed");
  EXPECT_NE(v.message.find("own PID namespace"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("holds /dev/nvidia0 open"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("GPU-a ran a compute process at 0.70"), std::string::npos) << v.message;
  // The floor still applies on top.
  v = EvaluateGpuUse(OneGpu(0.2, std::vector<unsigned>{98765}), Policy(0.5, true), self);
  EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kBelowFloor);
}

TEST(EvaluateGpuUseTest, OwnPidNamespaceWithoutEvidenceIsNotOnTheGpu) {
  // No GPU device node open: no CUDA context in this process.
  GpuUseVerdict v = EvaluateGpuUse(OneGpu(0.9, std::vector<unsigned>{98765}), Policy({}, true),
                                   SelfProcess{17, true, {}});
  EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kNotOnGpu);
  EXPECT_EQ(v.process_proof, "not proven");
  EXPECT_NE(v.message.find("holds no GPU device node"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("across PID namespaces"), std::string::npos) << v.message;
  // A device open, but the GPU idle through the canary, or nobody listed on it.
  const SelfProcess open{17, true, {"/dev/nvidia0"}};
  for (const GpuWindow& w : {OneGpu(0.0, std::vector<unsigned>{98765}),
                             OneGpu(0.9, std::vector<unsigned>{}), OneGpu(std::nullopt, {{1}})}) {
    v = EvaluateGpuUse(w, Policy({}, true), open);
    EXPECT_EQ(v.outcome, GpuUseVerdict::Outcome::kNotOnGpu) << v.message;
    EXPECT_NE(v.message.find("no GPU that lists a compute process was busy"), std::string::npos)
        << v.message;
  }
  // Listed by its own pid (hostPID, or a driver that translates): proven outright.
  v = EvaluateGpuUse(OneGpu(0.9, std::vector<unsigned>{17}), Policy({}, true),
                     SelfProcess{17, true, {}});
  EXPECT_EQ(v.process_proof, "proven");
}

TEST(ReadSelfProcessTest, ReadsTheNamespaceAndTheGpuDeviceNodesFromProc) {
  namespace fs = std::filesystem;
  tg::testing::TempDir d;
  const std::string proc = d.path() + "/proc";
  fs::create_directories(proc + "/ns");
  fs::create_directories(proc + "/fd");
  fs::create_symlink("pid:[4026531836]", proc + "/ns/pid");  // the initial namespace
  int n = 0;
  for (const char* t : {"/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/null",
                        "/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia"}) {
    fs::create_symlink(t, proc + "/fd/" + std::to_string(n++));
  }
  SelfProcess s = ReadSelfProcess(99, proc);
  EXPECT_EQ(s.pid, 99u);
  EXPECT_FALSE(s.own_pid_namespace);
  EXPECT_EQ(s.gpu_device_files, (std::vector<std::string>{"/dev/nvidia0", "/dev/nvidia1"}));
  fs::remove(proc + "/ns/pid");
  fs::create_symlink("pid:[4026532999]", proc + "/ns/pid");  // a container's
  EXPECT_TRUE(ReadSelfProcess(99, proc).own_pid_namespace);
  fs::remove(proc + "/ns/pid");  // unreadable: not taken as the initial namespace
  EXPECT_TRUE(ReadSelfProcess(99, proc).own_pid_namespace);
  // This process: its real namespace link, and no GPU device on this machine.
  std::error_code ec;
  const bool initial = fs::read_symlink("/proc/self/ns/pid", ec).string() == "pid:[4026531836]";
  s = ReadSelfProcess(static_cast<unsigned>(getpid()));
  EXPECT_EQ(s.own_pid_namespace, !initial);
  if (!fs::exists("/dev/nvidia0")) {
    EXPECT_TRUE(s.gpu_device_files.empty());
  }
}

}  // namespace
}  // namespace tg::server
