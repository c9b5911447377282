#include "probe/nvml_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "tests/support/test_util.h"

namespace tg::probe {
namespace {

using testing::ScopedEnv;

std::unique_ptr<NvmlReader> OpenFake() {
  common::LibraryLoader loader({testing::FakeGpuDir()});
  auto r = NvmlReader::Open(loader);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : nullptr;
}

TEST(NvmlReaderTest, AbsentLibraryIsNotFound) {
  common::LibraryLoader loader({testing::SourceDir() + "/no-such-dir"});
  auto r = NvmlReader::Open(loader);
  if (r.ok()) GTEST_SKIP() << "a real libnvidia-ml.so.1 is installed on this machine";
  EXPECT_EQ(r.status().code(), common::StatusCode::kNotFound) << r.status().ToString();
}

TEST(NvmlReaderTest, InitFailureIsUnavailableWithNvmlsText) {
  ScopedEnv init("TG_FAKE_NVML_INIT_RESULT", "18");
  common::LibraryLoader loader({testing::FakeGpuDir()});
  auto r = NvmlReader::Open(loader);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), common::StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("Driver/library version mismatch"), std::string::npos)
      << r.status().message();
}

TEST(NvmlReaderTest, ReadsEveryFieldFromTheFake) {
  ScopedEnv devices("TG_FAKE_DEVICE_COUNT", "2");
  ScopedEnv util("TG_FAKE_NVML_UTIL", "73");
  ScopedEnv total("TG_FAKE_MEM_MB", "1024");
  ScopedEnv used("TG_FAKE_NVML_MEM_USED_MB", "300");
  ScopedEnv tx("TG_FAKE_NVML_PCIE_TX_KBPS", "2000");
  ScopedEnv rx("TG_FAKE_NVML_PCIE_RX_KBPS", "500");
  ScopedEnv power("TG_FAKE_NVML_POWER_MW", "123500");
  ScopedEnv procs("TG_FAKE_NVML_PROCS", "4242,self");
  auto r = OpenFake();
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->device_count(), 2u);
  auto all = r->SampleAll();
  ASSERT_EQ(all.size(), 2u);
  const NvmlDeviceSample& s = all[1];
  EXPECT_EQ(s.index, 1u);
  EXPECT_EQ(s.uuid, "GPU-fa4e0000-0000-4000-8000-000000000001");
  ASSERT_TRUE(s.utilization);
  EXPECT_DOUBLE_EQ(*s.utilization, 0.73);
  EXPECT_EQ(s.memory_total_bytes.value_or(0), 1024ull << 20);
  EXPECT_EQ(s.memory_used_bytes.value_or(0), 300ull << 20);
  EXPECT_DOUBLE_EQ(s.pcie_tx_bytes_per_second.value_or(0), 2000.0 * 1024);
  EXPECT_DOUBLE_EQ(s.pcie_rx_bytes_per_second.value_or(0), 500.0 * 1024);
  EXPECT_DOUBLE_EQ(s.power_watts.value_or(0), 123.5);
  ASSERT_TRUE(s.processes);
  ASSERT_EQ(s.processes->size(), 2u);
  EXPECT_EQ((*s.processes)[0].pid, 4242u);
  EXPECT_EQ((*s.processes)[0].used_memory_bytes.value_or(0), 256ull << 20);
  EXPECT_TRUE(HasProcess(s, static_cast<unsigned>(getpid())));
  EXPECT_FALSE(HasProcess(s, 1u));
  EXPECT_TRUE(s.unavailable.empty());
  EXPECT_FALSE(s.lost);
  EXPECT_TRUE(r->CheckLive().ok());
}

TEST(NvmlReaderTest, EmptyProcessListIsReadNotAbsent) {
  auto r = OpenFake();
  ASSERT_NE(r, nullptr);
  NvmlDeviceSample s = r->Sample(0);
  ASSERT_TRUE(s.processes);  // the GPU answered: nobody holds a context
  EXPECT_TRUE(s.processes->empty());
  EXPECT_FALSE(HasProcess(s, static_cast<unsigned>(getpid())));
}

TEST(NvmlReaderTest, UnsupportedUtilisationIsAbsentWithTheReason) {
  ScopedEnv util("TG_FAKE_NVML_UTIL", "-1");
  auto r = OpenFake();
  ASSERT_NE(r, nullptr);
  NvmlDeviceSample s = r->Sample(0);
  EXPECT_FALSE(s.utilization);
  ASSERT_TRUE(s.unavailable.count("utilization"));
  EXPECT_NE(s.unavailable.at("utilization").find("3 (Not Supported)"), std::string::npos);
  EXPECT_TRUE(s.memory_total_bytes);  // the other fields are still read
}

TEST(NvmlReaderTest, LostGpuFailsLivenessAndMarksTheSample) {
  auto r = OpenFake();
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(r->CheckLive().ok());
  testing::TempDir dir;
  const std::string flag = dir / "lost";
  ScopedEnv lost("TG_FAKE_NVML_LOST_FILE", flag.c_str());
  EXPECT_TRUE(r->CheckLive().ok());  // the file does not exist yet
  testing::WriteFile(flag, "");
  common::Status live = r->CheckLive();
  ASSERT_FALSE(live.ok());
  EXPECT_EQ(live.code(), common::StatusCode::kUnavailable);
  EXPECT_NE(live.message().find("GPU is lost"), std::string::npos) << live.message();
  EXPECT_NE(live.message().find("GPU-fa4e0000"), std::string::npos) << live.message();
  NvmlDeviceSample s = r->Sample(0);
  EXPECT_TRUE(s.lost);
  EXPECT_FALSE(s.utilization);
  EXPECT_FALSE(s.processes);
  std::remove(flag.c_str());
  EXPECT_TRUE(r->CheckLive().ok());  // recovery
}

}  // namespace
}  // namespace tg::probe
