// `truegreen serve` with the fake NVML (tests/fakegpu, knobs read at call time): the nv_gpu_*
// metrics carry the fake's values and pass promtool; the canary's GPU-utilisation floor fails
// with exit 5; a process list without this process fails the GPU-use proof with exit 3; a lost
// GPU flips /readyz to 503 and back; without NVML the metrics are absent and a floor is "not
// measured" (exit 5), never passed.
//
// Each server runs in the dev profile (CPU sessions) over one generic ONNX model, with a
// --lib-path holding only the fake libnvidia-ml.so.1, so the rest of the stack is the real one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/server_harness.h"

namespace tg::testing {
namespace {

using Json = nlohmann::json;

class ServerGpuMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(dir_ / "models");
    std::filesystem::create_directories(dir_ / "nvml");
    std::filesystem::create_symlink(BinaryDir() + "/models/runtime/matmul_softmax.onnx",
                                    dir_ / "models/mm.onnx");
    std::filesystem::create_symlink(FakeGpuDir() + "/libnvidia-ml.so.1",
                                    dir_ / "nvml/libnvidia-ml.so.1");
  }
  // A dev server over the one model; `nvml` false leaves the fake NVML out of --lib-path.
  std::unique_ptr<ServerProcess> Start(const std::vector<std::string>& args,
                                       const std::map<std::string, std::string>& env,
                                       bool nvml = true) {
    std::vector<std::string> global = {"--policy", "dev"};
    if (nvml) global.insert(global.begin(), {"--lib-path", dir_ / "nvml"});
    std::vector<std::string> a = {"--models", dir_ / "models", "--access-log", "off"};
    a.insert(a.end(), args.begin(), args.end());
    return std::make_unique<ServerProcess>(global, a, env);
  }
  TempDir dir_;
};

// Polls /readyz until its status is `want` (false after ~60 s).
bool WaitReadyz(int port, int want, HttpResult* last) {
  for (int i = 0; i < 1200; ++i) {
    *last = Request(port, "GET", "/readyz");
    if (last->status == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST_F(ServerGpuMetricsTest, MetricsCarryTheFakesValuesAndPassPromtool) {
  auto s = Start({"--canary-min-gpu-utilization", "0.3"}, {{"TG_FAKE_NVML_UTIL", "37"},
                                                           {"TG_FAKE_NVML_PROCS", "self"},
                                                           {"TG_FAKE_MEM_MB", "2048"},
                                                           {"TG_FAKE_NVML_MEM_USED_MB", "512"},
                                                           {"TG_FAKE_NVML_POWER_MW", "251500"},
                                                           {"TG_FAKE_NVML_PCIE_TX_KBPS", "100"},
                                                           {"TG_FAKE_NVML_PCIE_RX_KBPS", "300"}});
  const int port = s->WaitPort();
  ASSERT_GT(port, 0) << s->Log();
  ASSERT_TRUE(s->WaitReady()) << s->Log();
  auto r = Request(port, "GET", "/metrics");
  ASSERT_EQ(r.status, 200);
  const std::string uuid = "{gpu_uuid=\"GPU-fa4e0000-0000-4000-8000-000000000000\"}";
  for (const std::string& line : {"nv_gpu_utilization" + uuid + " 0.37\n",
                                  "nv_gpu_memory_total_bytes" + uuid + " 2147483648\n",
                                  "nv_gpu_memory_used_bytes" + uuid + " 536870912\n",
                                  "nv_gpu_power_usage" + uuid + " 251.5\n",
                                  "truegreen_gpu_pcie_tx_bytes_per_second" + uuid + " 102400\n",
                                  "truegreen_gpu_pcie_rx_bytes_per_second" + uuid + " 307200\n",
                                  std::string("truegreen_canary_gpu_utilization 0.37\n"),
                                  std::string("truegreen_gpu_live 1\n")}) {
    EXPECT_NE(r.body.find(line), std::string::npos) << line << r.body;
  }
  auto caps = Json::parse(Request(port, "GET", "/v1/capabilities").body);
  EXPECT_EQ(caps["gpu"]["nvml"], true);
  EXPECT_EQ(caps["gpu"]["liveness"], "ok");
  EXPECT_EQ(caps["canary"]["gpu"]["process_proof"], "proven");
  EXPECT_EQ(caps["canary"]["gpu"]["floor_check"], "passed");
  if (access("/usr/bin/promtool", X_OK) != 0) GTEST_SKIP() << "promtool not installed";
  TempDir d;
  WriteFile(d / "m.txt", r.body);
  auto p = RunProcess({"/bin/sh", "-c", "/usr/bin/promtool check metrics < " + (d / "m.txt")});
  // Exit 3 is lint only; lint may name Triton's nv_* families, never a truegreen_* one.
  ASSERT_TRUE(p.exit_code == 0 || p.exit_code == 3) << p.out << p.err;
  EXPECT_EQ((p.out + p.err).find("truegreen_"), std::string::npos) << p.out << p.err;
}

TEST_F(ServerGpuMetricsTest, UtilisationBelowTheFloorExits5WithTheReason) {
  auto s = Start({"--canary-min-gpu-utilization", "0.5"},
                 {{"TG_FAKE_NVML_UTIL", "10"}, {"TG_FAKE_NVML_PROCS", "self"}});
  EXPECT_EQ(s->Wait(), 5) << s->Log();
  EXPECT_NE(s->Log().find("GPU utilisation 0.10 during the canary is below the floor 0.50"),
            std::string::npos)
      << s->Log();
}

TEST_F(ServerGpuMetricsTest, FloorFailureKeepsTheServerUpWith503WhenAsked) {
  auto s = Start({"--canary-min-gpu-utilization", "0.5", "--exit-on-fail=false"},
                 {{"TG_FAKE_NVML_UTIL", "10"}, {"TG_FAKE_NVML_PROCS", "self"}});
  const int port = s->WaitPort();
  ASSERT_GT(port, 0) << s->Log();
  HttpResult r;
  for (int i = 0; i < 1200; ++i) {
    r = Request(port, "GET", "/readyz");
    if (r.body.find("gate canary failed") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(r.body.find("below the floor 0.50"), std::string::npos) << r.body;
}

// At runtime the background canary applies the same floor: 503 with the reason, then back.
TEST_F(ServerGpuMetricsTest, BackgroundCanaryBelowTheFloorFlipsReadinessAndBack) {
  const std::string util = dir_ / "util";
  // A huge drift tolerance: only the floor may fail the background canary of this tiny model.
  auto s = Start({"--canary-min-gpu-utilization", "0.3", "--canary-interval-s", "1",
                  "--canary-drift-tolerance", "1000000"},
                 {{"TG_FAKE_NVML_UTIL", "50"},
                  {"TG_FAKE_NVML_UTIL_FILE", util},
                  {"TG_FAKE_NVML_PROCS", "self"}});
  const int port = s->WaitPort();
  ASSERT_GT(port, 0) << s->Log();
  ASSERT_TRUE(s->WaitReady()) << s->Log();
  WriteFile(util, "5\n");
  HttpResult r;
  ASSERT_TRUE(WaitReadyz(port, 503, &r)) << s->Log();
  EXPECT_NE(r.body.find("background canary failed: GPU utilisation 0.05 during the canary is "
                        "below the floor 0.30"),
            std::string::npos)
      << r.body;
  std::remove(util.c_str());
  ASSERT_TRUE(WaitReadyz(port, 200, &r)) << s->Log();
}

TEST_F(ServerGpuMetricsTest, ProcessNotOnTheGpuFailsTheProofWithExit3) {
  // The GPU is busy (90 %), but with someone else's context (pid 1), not this server's.
  auto s = Start({"--canary-min-gpu-utilization", "0.5"},
                 {{"TG_FAKE_NVML_UTIL", "90"}, {"TG_FAKE_NVML_PROCS", "1"}});
  EXPECT_EQ(s->Wait(), 3) << s->Log();
  EXPECT_NE(s->Log().find("holds no compute context on any GPU"), std::string::npos) << s->Log();
  EXPECT_NE(s->Log().find("lists pid 1)"), std::string::npos) << s->Log();
}

// In its own PID namespace (a pod without hostPID) the driver lists this process by its host pid,
// never by getpid(). The server must see that it is namespaced and fall back to the indirect
// proof; the fake driver opens no /dev/nvidiaN, so the proof fails with exit 3, naming the
// namespace and what is missing. Needs unshare(1) and the right to make a PID namespace (root).
TEST_F(ServerGpuMetricsTest, OwnPidNamespaceWithoutADeviceNodeFailsTheProofWithExit3) {
  if (!std::filesystem::exists("/usr/bin/unshare") ||
      RunProcess({"/usr/bin/unshare", "--pid", "--fork", "/bin/true"}).exit_code != 0) {
    GTEST_SKIP() << "cannot make a PID namespace here (unshare --pid needs root or user "
                    "namespaces)";
  }
  ProcessResult r = RunProcess(
      {"/usr/bin/timeout", "120", "/usr/bin/unshare", "--pid", "--fork", TruegreenPath(),
       "--lib-path", dir_ / "nvml", "--policy", "dev", "serve", "--models", dir_ / "models",
       "--port", "0", "--access-log", "off", "--canary-min-gpu-utilization", "0.5"},
      {{"TG_FAKE_NVML_UTIL", "90"}, {"TG_FAKE_NVML_PROCS", "hostself"}});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("runs in its own PID namespace and the driver reports host pids"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("holds no GPU device node (/dev/nvidiaN) open"), std::string::npos) << r.err;
}

TEST_F(ServerGpuMetricsTest, UnmeasurableUtilisationNeverPassesTheFloor) {
  auto s = Start({"--canary-min-gpu-utilization", "0.2"},
                 {{"TG_FAKE_NVML_UTIL", "-1"}, {"TG_FAKE_NVML_PROCS", "self"}});
  EXPECT_EQ(s->Wait(), 5) << s->Log();
  EXPECT_NE(s->Log().find("floor 0.20 set but not measured"), std::string::npos) << s->Log();
  EXPECT_NE(s->Log().find("Not Supported"), std::string::npos) << s->Log();
}

TEST_F(ServerGpuMetricsTest, WithoutNvmlMetricsAreAbsentAndTheFloorIsNotMeasured) {
  {
    auto s = Start({}, {}, /*nvml=*/false);
    const int port = s->WaitPort();
    ASSERT_GT(port, 0) << s->Log();
    ASSERT_TRUE(s->WaitReady()) << s->Log();
    auto r = Request(port, "GET", "/metrics");
    EXPECT_EQ(r.body.find("nv_gpu_"), std::string::npos) << r.body;
    auto caps = Json::parse(Request(port, "GET", "/v1/capabilities").body);
    EXPECT_EQ(caps["gpu"]["nvml"], false);
    EXPECT_NE(caps["gpu"]["reason"].get<std::string>().find("libnvidia-ml.so.1"),
              std::string::npos);
    // CPU sessions and no floor: GPU work is not expected, and the result says so.
    EXPECT_EQ(caps["canary"]["gpu"]["process_proof"], "not required");
  }
  auto s = Start({"--canary-min-gpu-utilization", "0.2"}, {}, /*nvml=*/false);
  EXPECT_EQ(s->Wait(), 5) << s->Log();
  EXPECT_NE(s->Log().find("floor 0.20 set but not measured: NVML not available"), std::string::npos)
      << s->Log();
}

TEST_F(ServerGpuMetricsTest, LostGpuFlipsReadinessAndRecovers) {
  const std::string lost = dir_ / "gpu-lost";
  auto s = Start({"--gpu-sample-interval-ms", "100"},
                 {{"TG_FAKE_NVML_LOST_FILE", lost}, {"TG_FAKE_NVML_UTIL", "50"}});
  const int port = s->WaitPort();
  ASSERT_GT(port, 0) << s->Log();
  ASSERT_TRUE(s->WaitReady()) << s->Log();
  WriteFile(lost, "");
  HttpResult r;
  ASSERT_TRUE(WaitReadyz(port, 503, &r)) << s->Log();
  EXPECT_NE(r.body.find("GPU liveness"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("15 (GPU is lost)"), std::string::npos) << r.body;
  auto m = Request(port, "GET", "/metrics").body;
  EXPECT_NE(m.find("truegreen_gpu_live 0\n"), std::string::npos) << m;
  EXPECT_EQ(m.find("truegreen_gpu_liveness_failures_total 0\n"), std::string::npos) << m;
  EXPECT_NE(m.find("truegreen_ready 0\n"), std::string::npos) << m;
  EXPECT_EQ(m.find("nv_gpu_utilization{"), std::string::npos) << "a lost GPU's values are stale";
  std::remove(lost.c_str());
  ASSERT_TRUE(WaitReadyz(port, 200, &r)) << s->Log();
  m = Request(port, "GET", "/metrics").body;
  EXPECT_NE(m.find("truegreen_gpu_live 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("nv_gpu_utilization{"), std::string::npos) << m;
  EXPECT_NE(s->Log().find("GPU liveness recovered"), std::string::npos) << s->Log();
}

}  // namespace
}  // namespace tg::testing
