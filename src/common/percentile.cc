#include "common/percentile.h"

#include <algorithm>
#include <cmath>

namespace tg::common {

std::size_t NearestRank(double p, std::size_t n) {
  if (n == 0) return 0;
  if (!(p > 0.0)) return 1;  // NaN and p <= 0: the smallest sample
  if (p >= 100.0) return n;
  const double exact = p / 100.0 * static_cast<double>(n);
  // p/100 is rarely exact in binary (0.29 * 100 is 28.999999999999996): a product that only
  // misses a whole number by rounding is that number, so ceil does not move it one rank up.
  const double whole = std::round(exact);
  const double rank =
      std::fabs(exact - whole) <= 1e-9 * std::max(1.0, whole) ? whole : std::ceil(exact);
  return std::clamp<std::size_t>(static_cast<std::size_t>(rank), 1, n);
}

double PercentileOfSorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0.0;
  return sorted[NearestRank(p, sorted.size()) - 1];
}

double Percentile(std::vector<double> samples, double p) {
  std::sort(samples.begin(), samples.end());
  return PercentileOfSorted(samples, p);
}

}  // namespace tg::common
