// Latency histogram with HdrHistogram semantics: values are microseconds from 1 µs to 1 h, kept
// to 3 significant decimal digits in log-linear buckets (2048 sub-buckets per power of two), so a
// percentile is reported as the highest value equivalent to the bucket that holds it. Histograms
// with the same range merge exactly by adding counts, which is how per-connection, per-thread and
// per-window histograms become one point's result.
//
// A Histogram is a plain value (copyable, ~100 KiB of counts); it is not thread-safe: each
// connection thread records into its own and the owner merges them afterwards.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/status.h"

namespace tg::bench {

class Histogram {
 public:
  static constexpr std::int64_t kLowestUs = 1;
  static constexpr std::int64_t kHighestUs = 3'600'000'000LL;  // one hour
  static constexpr int kSignificantDigits = 3;

  Histogram();  // empty, over the fixed range above

  // Records `count` samples of `value_us`. Values below 1 µs count as 1 µs; values above one hour
  // are clamped to one hour and counted in saturated().
  void Record(std::int64_t value_us, std::uint64_t count = 1);
  // Adds every count of `other` (same fixed range, so the merge is exact).
  void Merge(const Histogram& other);
  void Reset();  // back to empty
  // Samples recorded, and how many of them were clamped to one hour.
  std::uint64_t count() const { return total_; }
  std::uint64_t saturated() const { return saturated_; }
  std::int64_t min() const;  // lowest equivalent value of the smallest sample; 0 when empty
  std::int64_t max() const;  // highest equivalent value of the largest sample; 0 when empty
  // Mean of the samples using each bucket's median equivalent value (HdrHistogram's convention).
  double Mean() const;
  // Highest equivalent value of the sample at `percentile` (0..100]; 0 when empty. The sample
  // rank is the nearest rank, ceil(percentile/100 * count) (common/percentile.h).
  std::int64_t ValueAtPercentile(double percentile) const;
  // Highest equivalent value of the sample of 1-based `rank` (clamped to 1..count); 0 when empty.
  std::int64_t ValueAtRank(std::uint64_t rank) const;

  // Bucket view, for statistics over two histograms with equal bucketing.
  std::size_t bucket_count() const { return counts_.size(); }
  std::uint64_t count_at_index(std::size_t i) const { return counts_[i]; }
  std::int64_t ValueAtIndex(std::size_t i) const;  // lowest equivalent value of bucket i
  // The lowest / highest value the histogram cannot tell apart from `v` (its bucket's bounds).
  std::int64_t LowestEquivalent(std::int64_t v) const;
  std::int64_t HighestEquivalent(std::int64_t v) const;

  // {"unit":"us","lowest":1,"highest":3600000000,"significant_digits":3,"count":N,
  //  "buckets":[[lowest_value, count], ...]} (non-empty buckets only).
  common::Json ToJson() const;
  // Inverse of ToJson. `where` names the document and field for error messages; a wrong unit,
  // range or a malformed bucket is INVALID_ARG.
  static common::Result<Histogram> FromJson(const common::Json& j, const std::string& where);

 private:
  std::size_t IndexFor(std::int64_t v) const;

  std::vector<std::uint64_t> counts_;
  std::uint64_t total_ = 0;
  std::uint64_t saturated_ = 0;
};

// The summary every output shows for one histogram.
struct Percentiles {
  std::int64_t p50 = 0, p90 = 0, p95 = 0, p99 = 0, p999 = 0, max = 0;
  double mean = 0;
  std::uint64_t count = 0;
};
Percentiles Summarize(const Histogram& h);             // all 0 for an empty histogram; pure
common::Json PercentilesToJson(const Percentiles& p);  // count, mean_us, p50_us .. max_us

}  // namespace tg::bench
