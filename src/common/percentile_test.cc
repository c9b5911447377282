#include "common/percentile.h"

#include <gtest/gtest.h>

#include <vector>

namespace tg::common {
namespace {

TEST(PercentileTest, NearestRankIsTheCeilingOfTheShare) {
  EXPECT_EQ(NearestRank(50, 0), 0u);
  // Ten samples: p50 is rank 5, p90 rank 9, p94, p95 and p99 rank 10: the ceiling, where
  // rounding to nearest would put p94 (9.4) on rank 9.
  EXPECT_EQ(NearestRank(50, 10), 5u);
  EXPECT_EQ(NearestRank(51, 10), 6u);
  EXPECT_EQ(NearestRank(90, 10), 9u);
  EXPECT_EQ(NearestRank(94, 10), 10u);
  EXPECT_EQ(NearestRank(95, 10), 10u);
  EXPECT_EQ(NearestRank(99, 10), 10u);
  EXPECT_EQ(NearestRank(100, 10), 10u);
  // Edges: p <= 0 (and NaN) is the smallest sample, above 100 the largest.
  EXPECT_EQ(NearestRank(0, 10), 1u);
  EXPECT_EQ(NearestRank(-5, 10), 1u);
  EXPECT_EQ(NearestRank(0.01, 10), 1u);
  EXPECT_EQ(NearestRank(250, 10), 10u);
  // Products the double misses by rounding stay on their whole rank.
  EXPECT_EQ(NearestRank(29, 100), 29u);  // 0.29 * 100 = 28.999999999999996
  EXPECT_EQ(NearestRank(99.9, 1000), 999u);
  EXPECT_EQ(NearestRank(57, 100), 57u);  // 0.57 * 100 = 56.99999999999999
}

TEST(PercentileTest, PicksAMeasuredSampleNeverAnInterpolation) {
  std::vector<double> v = {40, 10, 30, 20};  // sorted: 10 20 30 40
  EXPECT_EQ(Percentile(v, 50), 20);          // rank 2
  EXPECT_EQ(Percentile(v, 51), 30);          // rank ceil(2.04) = 3
  EXPECT_EQ(Percentile(v, 75), 30);          // rank 3
  EXPECT_EQ(Percentile(v, 95), 40);          // rank 4
  EXPECT_EQ(Percentile(v, 25), 10);          // rank 1
  EXPECT_EQ(Percentile({}, 50), 0);
  EXPECT_EQ(Percentile({7}, 99), 7);
  std::vector<double> sorted = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  // Where the two old copies disagreed (run rounded the share to nearest): p94 of 10 is the 10th
  // sample, not the 9th; p41 the 5th, not the 4th.
  EXPECT_EQ(PercentileOfSorted(sorted, 94), 10);
  EXPECT_EQ(PercentileOfSorted(sorted, 41), 5);
  EXPECT_EQ(PercentileOfSorted(sorted, 40), 4);
}

}  // namespace
}  // namespace tg::common
