// host_memory.h against fixture trees (cgroup v2, v1, no limit) and this process's /proc.
#include "probe/host_memory.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

#include "tests/support/test_util.h"

namespace tg::probe {
namespace {

using testing::TempDir;
using testing::WriteFile;

constexpr const char* kMeminfo =
    "MemTotal:       24000000 kB\nMemFree:         1000 kB\nMemAvailable:   12000000 kB\n";

TEST(HostMemory, CgroupV2LimitOfTheProcessCgroup) {
  TempDir d;
  WriteFile(d / "proc/self/cgroup", "0::/kubepods/pod1/c1\n");
  WriteFile(d / "sys/fs/cgroup/kubepods/pod1/c1/memory.max", "2147483648\n");
  WriteFile(d / "proc/meminfo", kMeminfo);
  const HostMemory m = ReadHostMemory(d.path());
  ASSERT_TRUE(m.cgroup_limit_bytes.has_value()) << m.unavailable;
  EXPECT_EQ(*m.cgroup_limit_bytes, 2147483648);
  EXPECT_EQ(m.cgroup_limit_file, "/sys/fs/cgroup/kubepods/pod1/c1/memory.max");
  EXPECT_EQ(m.mem_available_bytes.value_or(0), 12000000LL * 1024);
  EXPECT_EQ(m.mem_total_bytes.value_or(0), 24000000LL * 1024);
}

TEST(HostMemory, CgroupNamespaceRootAndMaxMeansNoLimit) {
  TempDir d;
  // In a container the own cgroup is the mount's root: the path file does not exist there.
  WriteFile(d / "proc/self/cgroup", "0::/kubepods/pod1/c1\n");
  WriteFile(d / "sys/fs/cgroup/memory.max", "max\n");
  WriteFile(d / "proc/meminfo", kMeminfo);
  const HostMemory m = ReadHostMemory(d.path());
  EXPECT_FALSE(m.cgroup_limit_bytes.has_value());
  EXPECT_NE(m.unavailable.find("\"max\" (no limit)"), std::string::npos) << m.unavailable;
  EXPECT_TRUE(m.mem_available_bytes.has_value());
}

TEST(HostMemory, CgroupV1LimitAndItsUnlimitedValue) {
  TempDir d;
  WriteFile(d / "proc/self/cgroup", "12:cpu,cpuacct:/x\n11:memory:/docker/abc\n");
  WriteFile(d / "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "1073741824\n");
  WriteFile(d / "proc/meminfo", kMeminfo);
  EXPECT_EQ(ReadHostMemory(d.path()).cgroup_limit_bytes.value_or(0), 1073741824);
  WriteFile(d / "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "9223372036854771712\n");
  const HostMemory m = ReadHostMemory(d.path());
  EXPECT_FALSE(m.cgroup_limit_bytes.has_value());
  EXPECT_NE(m.unavailable.find("no-limit"), std::string::npos) << m.unavailable;
}

TEST(HostMemory, NothingReadableSaysWhy) {
  TempDir d;
  const HostMemory m = ReadHostMemory(d.path());
  EXPECT_FALSE(m.cgroup_limit_bytes.has_value());
  EXPECT_FALSE(m.mem_available_bytes.has_value());
  EXPECT_NE(m.unavailable.find("MemAvailable"), std::string::npos) << m.unavailable;
  WriteFile(d / "proc/self/cgroup", "0::/\n");
  WriteFile(d / "sys/fs/cgroup/memory.max", "lots\n");
  EXPECT_NE(ReadHostMemory(d.path()).unavailable.find("not a number"), std::string::npos);
}

TEST(HostMemory, ResidentSetGrowsWithTouchedMemoryAndItsPeakResets) {
  const auto rss0 = CurrentRssBytes();
  ASSERT_TRUE(rss0.has_value());
  constexpr std::size_t kBytes = 64 << 20;
  {
    std::unique_ptr<char[]> big(new char[kBytes]);
    std::memset(big.get(), 1, kBytes);
    EXPECT_GE(PeakRssBytes().value_or(0), *rss0 + static_cast<std::int64_t>(kBytes) / 2);
    EXPECT_GE(CurrentRssBytes().value_or(0), *rss0 + static_cast<std::int64_t>(kBytes) / 2);
  }
  if (!ResetPeakRss()) GTEST_SKIP() << "this kernel refuses /proc/self/clear_refs";
  // After the reset the peak is the resident set now, which no longer holds the 64 MiB.
  EXPECT_LT(PeakRssBytes().value_or(0), CurrentRssBytes().value_or(0) + (kBytes / 2));
}

}  // namespace
}  // namespace tg::probe
