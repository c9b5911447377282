#include "bench/histogram.h"
#include "common/json_writer.h"
#include "common/percentile.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace tg::bench {
namespace {

// 3 significant digits need single-unit resolution up to 2 * 10^3, i.e. 2048 sub-buckets; the
// upper half of each power-of-two bucket is stored (the lower half overlaps the previous one).
constexpr int kSubBucketCountMagnitude = 11;
constexpr std::int64_t kSubBucketCount = 1LL << kSubBucketCountMagnitude;  // 2048
constexpr int kSubBucketHalfCountMagnitude = kSubBucketCountMagnitude - 1;
constexpr std::int64_t kSubBucketHalfCount = kSubBucketCount / 2;  // 1024
constexpr std::int64_t kSubBucketMask = kSubBucketCount - 1;

int BucketsNeeded() {
  std::int64_t smallest_untrackable = kSubBucketCount;
  int buckets = 1;
  while (smallest_untrackable <= Histogram::kHighestUs) {
    smallest_untrackable <<= 1;
    ++buckets;
  }
  return buckets;
}

int BucketIndex(std::int64_t v) {
  int pow2ceiling = 64 - std::countl_zero(static_cast<std::uint64_t>(v | kSubBucketMask));
  return pow2ceiling - (kSubBucketHalfCountMagnitude + 1);
}

}  // namespace

Histogram::Histogram()
    : counts_(static_cast<std::size_t>(BucketsNeeded() + 1) * kSubBucketHalfCount) {}

std::size_t Histogram::IndexFor(std::int64_t v) const {
  int bucket = BucketIndex(v);
  std::int64_t sub = v >> bucket;
  std::int64_t base = static_cast<std::int64_t>(bucket + 1) << kSubBucketHalfCountMagnitude;
  return static_cast<std::size_t>(base + (sub - kSubBucketHalfCount));
}

std::int64_t Histogram::ValueAtIndex(std::size_t i) const {
  int bucket = static_cast<int>(i >> kSubBucketHalfCountMagnitude) - 1;
  std::int64_t sub = static_cast<std::int64_t>(i & (kSubBucketHalfCount - 1)) + kSubBucketHalfCount;
  if (bucket < 0) {
    sub -= kSubBucketHalfCount;
    bucket = 0;
  }
  return sub << bucket;
}

std::int64_t Histogram::LowestEquivalent(std::int64_t v) const { return ValueAtIndex(IndexFor(v)); }

std::int64_t Histogram::HighestEquivalent(std::int64_t v) const {
  int bucket = BucketIndex(v);
  std::int64_t sub = v >> bucket;
  int size_bucket = sub >= kSubBucketCount ? bucket + 1 : bucket;
  return LowestEquivalent(v) + (1LL << size_bucket) - 1;
}

void Histogram::Record(std::int64_t value_us, std::uint64_t count) {
  if (value_us < kLowestUs) value_us = kLowestUs;
  if (value_us > kHighestUs) {
    value_us = kHighestUs;
    saturated_ += count;
  }
  counts_[IndexFor(value_us)] += count;
  total_ += count;
}

void Histogram::Merge(const Histogram& other) {
  for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  total_ += other.total_;
  saturated_ += other.saturated_;
}

void Histogram::Reset() {
  std::fill(counts_.begin(), counts_.end(), 0);
  total_ = 0;
  saturated_ = 0;
}

std::int64_t Histogram::min() const {
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    if (counts_[i] != 0) return ValueAtIndex(i);
  }
  return 0;
}

std::int64_t Histogram::max() const {
  for (std::size_t i = counts_.size(); i-- > 0;) {
    if (counts_[i] != 0) return HighestEquivalent(ValueAtIndex(i));
  }
  return 0;
}

double Histogram::Mean() const {
  if (total_ == 0) return 0;
  double sum = 0;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    if (counts_[i] == 0) continue;
    std::int64_t lo = ValueAtIndex(i);
    std::int64_t hi = HighestEquivalent(lo);
    sum += static_cast<double>(counts_[i]) * (static_cast<double>(lo + hi + 1) / 2.0);
  }
  return sum / static_cast<double>(total_);
}

std::int64_t Histogram::ValueAtPercentile(double percentile) const {
  return ValueAtRank(common::NearestRank(percentile, total_));
}

std::int64_t Histogram::ValueAtRank(std::uint64_t rank) const {
  if (total_ == 0) return 0;
  rank = std::clamp<std::uint64_t>(rank, 1, total_);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) return HighestEquivalent(ValueAtIndex(i));
  }
  return max();
}

common::Json Histogram::ToJson() const {
  common::Json buckets = common::Json::array();
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    if (counts_[i] != 0) buckets.push_back({ValueAtIndex(i), counts_[i]});
  }
  return {{"unit", "us"},
          {"lowest", kLowestUs},
          {"highest", kHighestUs},
          {"significant_digits", kSignificantDigits},
          {"count", total_},
          {"saturated", saturated_},
          {"buckets", std::move(buckets)}};
}

common::Result<Histogram> Histogram::FromJson(const common::Json& j, const std::string& where) {
  using common::Status;
  if (!j.is_object() || j.value("unit", "") != "us" || j.value("lowest", 0LL) != kLowestUs ||
      j.value("highest", 0LL) != kHighestUs ||
      j.value("significant_digits", 0) != kSignificantDigits) {
    return Status::InvalidArg(where +
                              ": histogram must have unit \"us\", lowest 1, highest 3600000000 "
                              "and significant_digits 3");
  }
  if (!j.contains("buckets") || !j["buckets"].is_array()) {
    return Status::InvalidArg(where + ".buckets: required array of [value_us, count]");
  }
  Histogram h;
  std::size_t n = 0;
  for (const auto& b : j["buckets"]) {
    if (!b.is_array() || b.size() != 2 || !b[0].is_number_integer() || !b[1].is_number_unsigned() ||
        b[0].get<std::int64_t>() < kLowestUs || b[0].get<std::int64_t>() > kHighestUs) {
      return Status::InvalidArg(where + ".buckets[" + std::to_string(n) +
                                "]: expected [value_us in 1..3600000000, count >= 0], found " +
                                common::WriteJson(b, -1, common::JsonNotice::kNone));
    }
    h.Record(b[0].get<std::int64_t>(), b[1].get<std::uint64_t>());
    ++n;
  }
  h.saturated_ = j.value("saturated", 0ULL);
  return h;
}

Percentiles Summarize(const Histogram& h) {
  Percentiles p;
  p.p50 = h.ValueAtPercentile(50);
  p.p90 = h.ValueAtPercentile(90);
  p.p95 = h.ValueAtPercentile(95);
  p.p99 = h.ValueAtPercentile(99);
  p.p999 = h.ValueAtPercentile(99.9);
  p.max = h.max();
  p.mean = h.Mean();
  p.count = h.count();
  return p;
}

common::Json PercentilesToJson(const Percentiles& p) {
  return {{"count", p.count}, {"mean_us", p.mean}, {"p50_us", p.p50},    {"p90_us", p.p90},
          {"p95_us", p.p95},  {"p99_us", p.p99},   {"p99_9_us", p.p999}, {"max_us", p.max}};
}

}  // namespace tg::bench
