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

int OverlapBins(std::uint64_t n_a, std::uint64_t n_b) {
  std::uint64_t n = std::min(n_a, n_b);
  if (n == 0) return 0;
  auto k = static_cast<int>(std::floor(std::sqrt(static_cast<double>(n))));
  return std::clamp(k, 1, 64);
}

double OverlapCoefficient(const Histogram& a, const Histogram& b) {
  if (a.count() == 0 || b.count() == 0) return a.count() == b.count() ? 1 : 0;
  using Wide = unsigned __int128;
  const Wide na = a.count(), nb = b.count(), pooled = na + nb;
  const Wide k = static_cast<Wide>(OverlapBins(a.count(), b.count()));
  Wide s = 0, ca = 0, cb = 0, seen = 0, closed = 0;
  for (std::size_t i = 0; i < a.bucket_count(); ++i) {
    ca += a.count_at_index(i);
    cb += b.count_at_index(i);
    seen += a.count_at_index(i) + b.count_at_index(i);
    // Close the bin once the pooled count reaches its quantile: seen / pooled >= (closed + 1) / k.
    if (seen * k >= (closed + 1) * pooled || seen == pooled) {
      s += std::min(ca * nb, cb * na);
      ca = cb = 0;
      while (closed < k && seen * k >= (closed + 1) * pooled) ++closed;
    }
  }
  return static_cast<double>(static_cast<long double>(s) / static_cast<long double>(na * nb));
}

Interval QuantileInterval(const Histogram& h, double q) {
  double n = static_cast<double>(h.count());
  if (n == 0) return {};
  double half = 1.96 * std::sqrt(n * q * (1 - q));
  auto lo = static_cast<std::uint64_t>(std::max(1.0, std::floor(n * q - half)));
  auto hi = static_cast<std::uint64_t>(std::min(n, std::ceil(n * q + half) + 1));
  return {static_cast<double>(h.ValueAtRank(lo)), static_cast<double>(h.ValueAtRank(hi))};
}

std::uint64_t MinSamplesForInterval(double q) {
  for (std::uint64_t n = 1; n < 100000; ++n) {
    double dn = static_cast<double>(n);
    double half = 1.96 * std::sqrt(dn * q * (1 - q));
    if (std::floor(dn * q - half) >= 1 && std::ceil(dn * q + half) + 1 <= dn) return n;
  }
  return 100000;
}

Interval QuantileRatioInterval(const Histogram& a, const Histogram& b, double q) {
  Interval ia = QuantileInterval(a, q), ib = QuantileInterval(b, q);
  if (ia.lo <= 0 || ia.hi <= 0) return {};
  return {ib.lo / ia.hi, ib.hi / ia.lo};
}

}  // namespace tg::bench
