#include "common/cpu_features.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace tg::common {
namespace {

constexpr unsigned kOsxsave = 1u << 27, kAvx = 1u << 28, kF16c = 1u << 29, kAvx2 = 1u << 5;

TEST(CpuFeaturesTest, VexFeaturesNeedAvxXsaveAndTheOsSavingYmm) {
  CpuidRegisters full;
  full.leaf1_ecx = kOsxsave | kAvx | kF16c;
  full.leaf7_ebx = kAvx2;
  full.xcr0 = 0x7;
  EXPECT_TRUE(CpuFeaturesFrom(full).avx2);
  EXPECT_TRUE(CpuFeaturesFrom(full).f16c);

  CpuidRegisters r = full;
  r.xcr0 = 0x3;  // the OS does not save YMM: no VEX instruction may run
  EXPECT_FALSE(CpuFeaturesFrom(r).avx2);
  EXPECT_FALSE(CpuFeaturesFrom(r).f16c);
  r = full;
  r.leaf1_ecx &= ~kOsxsave;
  EXPECT_FALSE(CpuFeaturesFrom(r).avx2);
  EXPECT_FALSE(CpuFeaturesFrom(r).f16c);
  r = full;
  r.leaf1_ecx &= ~kAvx;
  EXPECT_FALSE(CpuFeaturesFrom(r).avx2);
  EXPECT_FALSE(CpuFeaturesFrom(r).f16c);
  // Each feature's own bit decides it alone.
  r = full;
  r.leaf7_ebx = 0;
  EXPECT_FALSE(CpuFeaturesFrom(r).avx2);
  EXPECT_TRUE(CpuFeaturesFrom(r).f16c);
  r = full;
  r.leaf1_ecx &= ~kF16c;
  EXPECT_TRUE(CpuFeaturesFrom(r).avx2);
  EXPECT_FALSE(CpuFeaturesFrom(r).f16c);
  EXPECT_FALSE(CpuFeaturesFrom(CpuidRegisters{}).avx2);
}

// The flags the kernel lists for the first CPU in /proc/cpuinfo ("" when it cannot be read).
std::string KernelCpuFlags() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("flags", 0) == 0) return line.substr(line.find(':') + 1) + " ";
  }
  return "";
}

// Each feature agrees with two sources that do not go through this code: the compiler's own
// probe (libgcc's __builtin_cpu_supports, which also checks the OS's XSAVE state) and the flags
// the kernel lists (it clears AVX-family flags when it does not save the YMM state).
TEST(CpuFeaturesTest, ThisCpuAgreesWithTheCompilerAndTheKernel) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  EXPECT_EQ(CpuHasAvx2(), __builtin_cpu_supports("avx2") != 0);
  EXPECT_EQ(CpuHasF16c(), __builtin_cpu_supports("f16c") != 0);
  const std::string flags = KernelCpuFlags();
  ASSERT_FALSE(flags.empty()) << "/proc/cpuinfo has no flags line";
  EXPECT_EQ(ThisCpu().avx2, flags.find(" avx2 ") != std::string::npos) << flags;
  EXPECT_EQ(ThisCpu().f16c, flags.find(" f16c ") != std::string::npos) << flags;
#else
  EXPECT_FALSE(CpuHasAvx2());
  EXPECT_FALSE(CpuHasF16c());
#endif
}

}  // namespace
}  // namespace tg::common
