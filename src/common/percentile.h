// The one percentile definition behind every latency figure truegreen reports (serve's canary,
// run, bench's histograms and compare): nearest rank. Among n samples in ascending order, the
// p-th percentile (0 < p <= 100) is the sample of rank ceil(p/100 * n), ranks counted from 1;
// p <= 0 gives the smallest sample, p > 100 the largest. Every result is a sample that was
// measured, never an interpolation between two.
//
// Pure functions: no allocation beyond the copy Percentile sorts, never throw, thread-safe.
#pragma once

#include <cstddef>
#include <vector>

namespace tg::common {

// The nearest rank (1..n) of percentile `p` among `n` samples; 0 when n is 0. A product p/100*n
// within 1e-9 of a whole number counts as that number (99.9% of 1000 is rank 999, not 1000, however
// the double rounds).
std::size_t NearestRank(double p, std::size_t n);

// The nearest-rank percentile of `sorted` (ascending); 0 when empty.
double PercentileOfSorted(const std::vector<double>& sorted, double p);

// The nearest-rank percentile of `samples` in any order (a sorted copy); 0 when empty.
double Percentile(std::vector<double> samples, double p);

}  // namespace tg::common
