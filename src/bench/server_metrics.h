// The GPU side of a run: the server's Prometheus /metrics, scraped on a background thread during
// the run and aggregated over the measured window only, and a small synchronous HTTP GET used for
// /metrics and /v1/capabilities.
//
// Metric names (Triton's where the meaning matches, truegreen's server otherwise):
// nv_gpu_utilization (0..1, averaged over GPUs), nv_gpu_memory_used_bytes (summed over GPUs),
// truegreen_gpu_pcie_{tx,rx}_bytes_per_second (summed over GPUs, averaged over the window),
// nv_inference_queue_duration_us and nv_inference_compute_infer_duration_us (cumulative, divided
// by the delta of nv_inference_count), truegreen_gate_status (1/0 per gate).
//
// MetricsScraper owns its thread; Start/Stop from one thread only. Samples() after Stop().
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/loadgen.h"
#include "bench/result.h"
#include "common/status.h"

namespace tg::bench {

struct HttpResponse {
  int status = 0;
  std::string body;
};
// One GET with a connect+read deadline; connection failures are UNAVAILABLE. Body limit 64 MiB.
common::Result<HttpResponse> HttpGet(const Target& target, const std::string& path,
                                     double timeout_s);

// Sums (or averages) of the series of each metric name in a Prometheus text exposition.
struct MetricValues {
  std::map<std::string, double> sum;
  std::map<std::string, double> min;
  std::map<std::string, int> series;
};
MetricValues ParsePrometheus(const std::string& text);  // malformed lines skipped; pure

struct MetricsSample {
  std::chrono::steady_clock::time_point t;
  MetricValues v;
};

// Aggregates the samples taken within [begin, end] (plus the last sample before begin as the
// counter baseline). `origin` is the run's start, for the utilisation time series. Pure.
GpuSide AggregateGpu(const std::vector<MetricsSample>& samples,
                     std::chrono::steady_clock::time_point begin,
                     std::chrono::steady_clock::time_point end,
                     std::chrono::steady_clock::time_point origin);
// Scrapes `target`'s /metrics on its own thread (owned); Start/Stop/Samples from one thread.
class MetricsScraper {
 public:
  MetricsScraper(Target target, double interval_s)
      : target_(std::move(target)), interval_s_(interval_s) {}
  ~MetricsScraper() { Stop(); }
  MetricsScraper(const MetricsScraper&) = delete;
  MetricsScraper& operator=(const MetricsScraper&) = delete;

  // Starts the scraping thread (GET /metrics every interval_s; failed scrapes are skipped).
  void Start();
  // Stops and joins it; idempotent (the destructor calls it).
  void Stop();
  // The samples, in time order; read only after Stop.
  const std::vector<MetricsSample>& Samples() const { return samples_; }

 private:
  Target target_;
  double interval_s_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<MetricsSample> samples_;  // written by thread_ only until Stop() joins it
};

}  // namespace tg::bench
