#include "bench/nvml_sampler.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/support/test_util.h"

namespace tg::bench {
namespace {

using testing::ScopedEnv;

TEST(NvmlSamplerTest, AbsentLibraryIsNotFound) {
  common::LibraryLoader loader({testing::SourceDir() + "/no-such-dir"});
  auto s = NvmlSampler::Open(loader);
  if (s.ok()) GTEST_SKIP() << "a real libnvidia-ml.so.1 is installed on this machine";
  EXPECT_EQ(s.status().code(), common::StatusCode::kNotFound) << s.status().ToString();
}

// The fake NVML (tests/fakegpu) reads its knobs at call time. Utilisation NOT_SUPPORTED: memory is
// sampled, utilisation is absent with the reason, never reported as 0.
TEST(NvmlSamplerTest, FakeNvmlSamplesMemoryAndSaysWhyUtilisationIsMissing) {
  ScopedEnv util("TG_FAKE_NVML_UTIL", "-1");
  ScopedEnv used("TG_FAKE_NVML_MEM_USED_MB", "3");
  common::LibraryLoader loader({testing::FakeGpuDir()});
  auto s = NvmlSampler::Open(loader);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  NvmlSample one = (*s)->SampleOnce();
  EXPECT_FALSE(one.utilization.has_value());
  EXPECT_DOUBLE_EQ(one.memory_used_bytes, 3.0 * (1 << 20));
  EXPECT_NE((*s)->utilization_error().find("nvmlDeviceGetUtilizationRates"), std::string::npos);
  EXPECT_NE((*s)->utilization_error().find("Not Supported"), std::string::npos);
  // Stopped at once: the first reading is taken anyway (no sleep needed, none is timed).
  (*s)->Start(0.02);
  (*s)->Stop();
  ASSERT_FALSE((*s)->Samples().empty());
  auto t0 = (*s)->Samples().front().t;
  GpuSide g = AggregateNvml((*s)->Samples(), t0, std::chrono::steady_clock::now(), t0);
  EXPECT_EQ(g.source, "nvml (local)");
  EXPECT_FALSE(g.utilization.has_value());
  EXPECT_TRUE(g.memory_used_bytes.has_value());
}

TEST(NvmlSamplerTest, FakeNvmlUtilisationIsAFraction) {
  ScopedEnv util("TG_FAKE_NVML_UTIL", "40");
  common::LibraryLoader loader({testing::FakeGpuDir()});
  auto s = NvmlSampler::Open(loader);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  NvmlSample one = (*s)->SampleOnce();
  ASSERT_TRUE(one.utilization.has_value());
  EXPECT_DOUBLE_EQ(*one.utilization, 0.4);
  EXPECT_EQ((*s)->utilization_error(), "");
}

TEST(NvmlSamplerTest, AggregatesOnlyTheMeasuredWindow) {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<NvmlSample> v;
  for (int i = 0; i < 10; ++i) {
    v.push_back({t0 + std::chrono::seconds(i), i < 5 ? 0.0 : 0.8, 100.0 * i});
  }
  GpuSide g = AggregateNvml(v, t0 + std::chrono::seconds(5), t0 + std::chrono::seconds(9), t0);
  ASSERT_TRUE(g.utilization.has_value());
  EXPECT_DOUBLE_EQ(*g.utilization, 0.8);  // the idle warm-up samples are excluded
  EXPECT_DOUBLE_EQ(*g.memory_used_bytes, 900);
  EXPECT_EQ(g.utilization_series.size(), 5u);
}

}  // namespace
}  // namespace tg::bench
