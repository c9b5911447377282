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

// Kolmogorov-Smirnov distance: max |F_a - F_b| over bucket boundaries. The empirical CDFs of the
// raw samples rounded to the histogram's 3 digits, so it does not depend on the sample count.
double KsDistance(const Histogram& a, const Histogram& b);
// Overlap coefficient: sum over bins of min(p_a, p_b), in 0..1 (1 = identical distributions). The
// bins are not the 3-digit buckets (where a few samples a side never share one, so two draws of
// one distribution would score 0) but k = floor(sqrt(min(n_a, n_b))) bins (at least 1, at most
// 64) with edges at the pooled samples' k-quantiles, each bin whole buckets (ties never split).
double OverlapCoefficient(const Histogram& a, const Histogram& b);
// The number of bins OverlapCoefficient uses for these sample counts (0 when a side is empty).
int OverlapBins(std::uint64_t n_a, std::uint64_t n_b);

struct Interval {
  double lo = 0, hi = 0;
};
// Distribution-free 95 % confidence interval of the `q` quantile (0..1) from order statistics
// (binomial ranks by the normal approximation), as values.
Interval QuantileInterval(const Histogram& h, double q);
// The fewest samples for which QuantileInterval's ranks for `q` both fall inside the sample (below
// that the interval is clamped to the extremes and is not a 95 % interval): 8 for the median, 110
// for P95.
std::uint64_t MinSamplesForInterval(double q);
// Conservative 95 % interval of quantile(b)/quantile(a): [lo_b/hi_a, hi_b/lo_a].
Interval QuantileRatioInterval(const Histogram& a, const Histogram& b, double q);

}  // namespace tg::bench
