// Distribution statistics over two latency histograms with equal bucketing (compare's evidence).
// Samples that share a bucket are ties, which is what 3-digit resolution means. Pure functions;
// thread-safe.
#pragma once

#include <cstdint>

#include "bench/histogram.h"

namespace tg::bench {

struct MannWhitney {
  double u = 0;        // U statistic of the first sample
  double z = 0;        // normal approximation with tie and continuity correction
  double p_value = 1;  // two-sided; 1 when either side is empty
};
MannWhitney MannWhitneyU(const Histogram& a, const Histogram& b);  // a's U; never fails

// Kolmogorov-Smirnov distance: max |F_a - F_b| over bucket boundaries (exact for the histograms).
double KsDistance(const Histogram& a, const Histogram& b);
// Overlap coefficient: sum over buckets of min(p_a, p_b), in 0..1 (1 = identical distributions).
double OverlapCoefficient(const Histogram& a, const Histogram& b);

// Highest equivalent value of the sample of 1-based `rank` (clamped to 1..count).
std::int64_t ValueAtRank(const Histogram& h, std::uint64_t rank);

struct Interval {
  double lo = 0, hi = 0;
};
// Distribution-free 95 % confidence interval of the `q` quantile (0..1) from order statistics
// (binomial ranks by the normal approximation), as values.
Interval QuantileInterval(const Histogram& h, double q);
// Conservative 95 % interval of quantile(b)/quantile(a): [lo_b/hi_a, hi_b/lo_a].
Interval QuantileRatioInterval(const Histogram& a, const Histogram& b, double q);

}  // namespace tg::bench
