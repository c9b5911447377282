#include "bench/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "common/percentile.h"

namespace tg::bench {
namespace {

std::int64_t ExactPercentile(std::vector<std::int64_t> v, double p) {
  std::sort(v.begin(), v.end());
  return v[common::NearestRank(p, v.size()) - 1];
}

TEST(HistogramTest, PercentilesMatchSortedSamplesWithinThreeDigits) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(10.0, 1.5);  // median ~22 ms, long tail
  std::vector<std::int64_t> samples;
  Histogram h;
  for (int i = 0; i < 20000; ++i) {
    auto v =
        std::clamp<std::int64_t>(static_cast<std::int64_t>(dist(rng)), 1, Histogram::kHighestUs);
    samples.push_back(v);
    h.Record(v);
  }
  for (double p : {1.0, 50.0, 90.0, 95.0, 99.0, 99.9, 100.0}) {
    std::int64_t exact = ExactPercentile(samples, p);
    std::int64_t got = h.ValueAtPercentile(p);
    // Highest equivalent value: never below the exact sample, above it by < 1/1024 relative.
    EXPECT_GE(got, exact) << "p" << p;
    EXPECT_LE(static_cast<double>(got - exact), static_cast<double>(exact) / 1024.0 + 1)
        << "p" << p;
    EXPECT_EQ(got, h.HighestEquivalent(exact)) << "p" << p;
  }
  EXPECT_EQ(h.count(), samples.size());
  double exact_mean = 0;
  for (auto v : samples) exact_mean += static_cast<double>(v);
  exact_mean /= static_cast<double>(samples.size());
  EXPECT_NEAR(h.Mean(), exact_mean, exact_mean * 1e-3);
}

TEST(HistogramTest, SmallValuesAreExactAndRangeIsClamped) {
  Histogram h;
  for (int v = 1; v <= 2047; ++v) EXPECT_EQ(h.HighestEquivalent(v), v);
  EXPECT_EQ(h.HighestEquivalent(2048), 2049);  // 2 µs resolution from 2048
  h.Record(0);
  h.Record(Histogram::kHighestUs * 2);
  EXPECT_EQ(h.count(), 2u);
  EXPECT_EQ(h.saturated(), 1u);
  EXPECT_EQ(h.min(), 1);
  EXPECT_GE(h.max(), Histogram::kHighestUs);
  EXPECT_LE(h.max(), Histogram::kHighestUs + Histogram::kHighestUs / 1000);
}

TEST(HistogramTest, MergeEqualsRecordingEverythingInOne) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::int64_t> d(1, 5'000'000);
  Histogram a, b, all;
  for (int i = 0; i < 5000; ++i) {
    auto v = d(rng);
    (i % 3 == 0 ? a : b).Record(v);
    all.Record(v);
  }
  Histogram merged = a;
  merged.Merge(b);
  ASSERT_EQ(merged.count(), all.count());
  for (std::size_t i = 0; i < all.bucket_count(); ++i) {
    ASSERT_EQ(merged.count_at_index(i), all.count_at_index(i)) << i;
  }
  EXPECT_EQ(merged.ValueAtPercentile(99), all.ValueAtPercentile(99));
}

TEST(HistogramTest, JsonRoundTripAndErrors) {
  Histogram h;
  for (int i = 1; i < 100000; i += 37) h.Record(i * 13);
  auto back = Histogram::FromJson(h.ToJson(), "run.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->count(), h.count());
  EXPECT_EQ(back->ValueAtPercentile(95), h.ValueAtPercentile(95));
  common::Json bad = h.ToJson();
  bad["significant_digits"] = 2;
  EXPECT_FALSE(Histogram::FromJson(bad, "x").ok());
  bad = h.ToJson();
  bad["buckets"][0] = {-5, 1};
  auto r = Histogram::FromJson(bad, "run.json: points[0].latency");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("points[0].latency.buckets[0]"), std::string::npos);
}

}  // namespace
}  // namespace tg::bench
