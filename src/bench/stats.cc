#include "bench/stats.h"

#include <algorithm>
#include <cmath>

namespace tg::bench {

MannWhitney MannWhitneyU(const Histogram& a, const Histogram& b) {
  MannWhitney r;
  double n1 = static_cast<double>(a.count());
  double n2 = static_cast<double>(b.count());
  if (n1 == 0 || n2 == 0) return r;
  double n = n1 + n2;
  double rank_sum_a = 0, seen = 0, tie_term = 0;
  for (std::size_t i = 0; i < a.bucket_count(); ++i) {
    double ca = static_cast<double>(a.count_at_index(i));
    double cb = static_cast<double>(b.count_at_index(i));
    double t = ca + cb;
    if (t == 0) continue;
    // Every sample of a tie group gets the group's mean rank.
    rank_sum_a += ca * (seen + (t + 1) / 2);
    tie_term += t * t * t - t;
    seen += t;
  }
  r.u = rank_sum_a - n1 * (n1 + 1) / 2;
  double mean = n1 * n2 / 2;
  double var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)));
  if (var <= 0) return r;  // every sample tied: no evidence of a difference
  double diff = std::fabs(r.u - mean);
  diff = std::max(0.0, diff - 0.5);
  r.z = (r.u >= mean ? 1 : -1) * diff / std::sqrt(var);
  r.p_value = std::erfc(std::fabs(r.z) / std::sqrt(2.0));
  return r;
}

// Both use integer cross-multiplication (count_a * n_b against count_b * n_a) so identical or
// constructed histograms give exact results, not sums of rounded fractions.
double KsDistance(const Histogram& a, const Histogram& b) {
  if (a.count() == 0 || b.count() == 0) return a.count() == b.count() ? 0 : 1;
  using Wide = unsigned __int128;
  Wide na = a.count(), nb = b.count(), ca = 0, cb = 0, d = 0;
  for (std::size_t i = 0; i < a.bucket_count(); ++i) {
    ca += a.count_at_index(i);
    cb += b.count_at_index(i);
    Wide x = ca * nb, y = cb * na;
    d = std::max(d, x > y ? x - y : y - x);
  }
  return static_cast<double>(static_cast<long double>(d) / static_cast<long double>(na * nb));
}

double OverlapCoefficient(const Histogram& a, const Histogram& b) {
  if (a.count() == 0 || b.count() == 0) return a.count() == b.count() ? 1 : 0;
  using Wide = unsigned __int128;
  Wide na = a.count(), nb = b.count(), s = 0;
  for (std::size_t i = 0; i < a.bucket_count(); ++i) {
    s += std::min(Wide{a.count_at_index(i)} * nb, Wide{b.count_at_index(i)} * na);
  }
  return static_cast<double>(static_cast<long double>(s) / static_cast<long double>(na * nb));
}

std::int64_t ValueAtRank(const Histogram& h, std::uint64_t rank) {
  if (h.count() == 0) return 0;
  rank = std::clamp<std::uint64_t>(rank, 1, h.count());
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < h.bucket_count(); ++i) {
    seen += h.count_at_index(i);
    if (seen >= rank) return h.HighestEquivalent(h.ValueAtIndex(i));
  }
  return h.max();
}

Interval QuantileInterval(const Histogram& h, double q) {
  double n = static_cast<double>(h.count());
  if (n == 0) return {};
  double half = 1.96 * std::sqrt(n * q * (1 - q));
  auto lo = static_cast<std::uint64_t>(std::max(1.0, std::floor(n * q - half)));
  auto hi = static_cast<std::uint64_t>(std::min(n, std::ceil(n * q + half) + 1));
  return {static_cast<double>(ValueAtRank(h, lo)), static_cast<double>(ValueAtRank(h, hi))};
}

Interval QuantileRatioInterval(const Histogram& a, const Histogram& b, double q) {
  Interval ia = QuantileInterval(a, q), ib = QuantileInterval(b, q);
  if (ia.lo <= 0 || ia.hi <= 0) return {};
  return {ib.lo / ia.hi, ib.hi / ia.lo};
}

}  // namespace tg::bench
