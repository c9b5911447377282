// Prometheus metrics of the server: counters, gauges and histograms with labels, rendered in the
// text exposition format (version 0.0.4). Triton's nv_inference_* / nv_gpu_* names are used where
// the meaning matches (docs/SERVER.md lists every family).
//
// A family must be declared (Declare*) before use; using an undeclared name is a programming error
// and is ignored (never a crash). Label values are escaped on render. Thread-safe: every method
// takes one internal mutex (a few hundred ns; the server records a handful per request).
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace tg::server {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Metrics {
 public:
  void DeclareCounter(const std::string& name, const std::string& help);
  void DeclareGauge(const std::string& name, const std::string& help);
  // `buckets`: ascending upper bounds (+Inf is implicit).
  void DeclareHistogram(const std::string& name, const std::string& help,
                        std::vector<double> buckets);

  void Add(const std::string& name, const Labels& labels, double delta = 1.0);  // counter/gauge
  // Gauge, or a counter mirrored from a monotonic source (session byte counters).
  void Set(const std::string& name, const Labels& labels, double value);
  void Observe(const std::string& name, const Labels& labels, double value);  // histogram
  // Drops one series (a gauge whose source stopped answering is absent, never stale).
  void Remove(const std::string& name, const Labels& labels);
  // Current value of a counter or gauge series (0 when absent); for tests and /readyz.
  double Value(const std::string& name, const Labels& labels) const;

  std::string Render() const;

  // Buckets for latencies in seconds (100 us .. 600 s) and for small counts (1 .. 64).
  static std::vector<double> LatencyBuckets();
  static std::vector<double> CountBuckets();

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Series {
    double value = 0.0;  // counter / gauge
    std::vector<std::uint64_t> bucket_counts;
    double sum = 0.0;
    std::uint64_t count = 0;
  };
  struct Family {
    Type type;
    std::string help;
    std::vector<double> buckets;
    std::map<std::string, Series> series;  // rendered label set -> series
  };
  static std::string LabelString(const Labels& labels);

  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
};

}  // namespace tg::server
