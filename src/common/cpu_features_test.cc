#include "common/cpu_features.h"

#include <gtest/gtest.h>

namespace tg::common {
namespace {

TEST(CpuFeaturesTest, Avx2AnswerMatchesTheCompilerBuiltinAndIsStable) {
#if defined(__x86_64__) || defined(__i386__)
  EXPECT_EQ(CpuHasAvx2(), __builtin_cpu_supports("avx2") != 0);
#else
  EXPECT_FALSE(CpuHasAvx2());
#endif
  EXPECT_EQ(CpuHasAvx2(), CpuHasAvx2());
}

}  // namespace
}  // namespace tg::common
