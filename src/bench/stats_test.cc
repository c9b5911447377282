#include "bench/stats.h"

#include <gtest/gtest.h>

#include <random>

namespace tg::bench {
namespace {

Histogram Normal(double mean, double sd, int n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(mean, sd);
  Histogram h;
  for (int i = 0; i < n; ++i) h.Record(static_cast<std::int64_t>(std::max(1.0, d(rng))));
  return h;
}

TEST(StatsTest, IdenticalSamplesGivePValueOne) {
  Histogram a = Normal(50000, 5000, 2000, 1);
  MannWhitney mw = MannWhitneyU(a, a);
  EXPECT_NEAR(mw.p_value, 1.0, 1e-9);
  EXPECT_DOUBLE_EQ(KsDistance(a, a), 0.0);
  EXPECT_DOUBLE_EQ(OverlapCoefficient(a, a), 1.0);
}

TEST(StatsTest, SameDistributionIsNotSignificantShiftedIs) {
  Histogram a = Normal(50000, 5000, 2000, 1);
  Histogram b = Normal(50000, 5000, 2000, 2);
  EXPECT_GT(MannWhitneyU(a, b).p_value, 0.01);
  Histogram c = Normal(52000, 5000, 2000, 3);  // shifted by 0.4 sd
  MannWhitney mw = MannWhitneyU(a, c);
  EXPECT_LT(mw.p_value, 0.01);
  EXPECT_LT(mw.z, 0);  // a's values are smaller
}

TEST(StatsTest, KsAndOverlapExactOnConstructedHistograms) {
  // a: 100 at 10 µs, 100 at 20 µs. b: 50 at 20 µs, 150 at 30 µs.
  Histogram a, b;
  a.Record(10, 100);
  a.Record(20, 100);
  b.Record(20, 50);
  b.Record(30, 150);
  // F_a: 0.5 at 10, 1 at 20. F_b: 0 at 10, 0.25 at 20, 1 at 30. Max gap 0.75 at 20.
  EXPECT_DOUBLE_EQ(KsDistance(a, b), 0.75);
  // Overlap: only the 20 µs bucket is shared: min(0.5, 0.25) = 0.25.
  EXPECT_DOUBLE_EQ(OverlapCoefficient(a, b), 0.25);
  // Disjoint histograms: KS 1, overlap 0, and a decisive U test.
  Histogram c;
  c.Record(1000, 200);
  EXPECT_DOUBLE_EQ(KsDistance(a, c), 1.0);
  EXPECT_DOUBLE_EQ(OverlapCoefficient(a, c), 0.0);
  MannWhitney mw = MannWhitneyU(a, c);
  EXPECT_DOUBLE_EQ(mw.u, 0.0);
  EXPECT_LT(mw.p_value, 1e-10);
}

TEST(StatsTest, QuantileIntervalContainsTheQuantile) {
  Histogram a = Normal(50000, 5000, 4000, 9);
  Interval i = QuantileInterval(a, 0.5);
  auto med = static_cast<double>(a.ValueAtPercentile(50));
  EXPECT_LE(i.lo, med);
  EXPECT_GE(i.hi, med);
  EXPECT_LT(i.hi - i.lo, 2000);  // ~ +-1.96 * sd * sqrt(pi/2/n) ~ +-245 µs, bucketed
  Interval r = QuantileRatioInterval(a, a, 0.95);
  EXPECT_LE(r.lo, 1.0);
  EXPECT_GE(r.hi, 1.0);
}

}  // namespace
}  // namespace tg::bench
