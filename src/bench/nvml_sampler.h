// Local GPU sampling through NVML (libnvidia-ml.so.1, loaded only through common::LibraryLoader),
// used by `truegreen bench` when the server's /metrics gives no GPU utilisation and the GPU is on
// this host. Samples utilisation (mean over devices, 0..1) and used memory (summed) on a background
// thread, through the shared probe::NvmlReader (the same reader `truegreen serve` uses).
//
// NvmlSampler owns its NvmlReader (library handle and NVML initialisation) and its thread.
// Start/Stop/Samples from one thread; Samples() after Stop().
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/result.h"
#include "common/dynlib.h"
#include "common/status.h"
#include "probe/nvml_reader.h"

namespace tg::bench {

struct NvmlSample {
  std::chrono::steady_clock::time_point t;
  std::optional<double> utilization;  // 0..1, mean over devices; absent when NVML cannot say
  double memory_used_bytes = 0;
};

class NvmlSampler {
 public:
  // NOT_FOUND when libnvidia-ml is absent, UNAVAILABLE when nvmlInit fails or no device exists
  // (probe::NvmlReader::Open).
  static common::Result<std::unique_ptr<NvmlSampler>> Open(const common::LibraryLoader& loader);
  ~NvmlSampler();
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;
  // One reading now; never fails (what NVML cannot say is absent, see utilization_error()).
  NvmlSample SampleOnce() const;
  void Start(double interval_s);  // once: a thread samples now, then every interval_s until Stop()
  void Stop();                    // joins that thread; idempotent (the destructor calls it)
  const std::vector<NvmlSample>& Samples() const { return samples_; }  // after Stop()
  // Why utilisation is absent in the latest SampleOnce ("" when it was read), e.g. the NVML error
  // or the missing symbol.
  std::string utilization_error() const;

 private:
  explicit NvmlSampler(std::unique_ptr<probe::NvmlReader> reader) : reader_(std::move(reader)) {}
  std::unique_ptr<probe::NvmlReader> reader_;
  mutable std::mutex error_mu_;
  mutable std::string utilization_error_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<NvmlSample> samples_;
};

// Utilisation mean and series, max memory, over samples within [begin, end].
GpuSide AggregateNvml(const std::vector<NvmlSample>& samples,
                      std::chrono::steady_clock::time_point begin,
                      std::chrono::steady_clock::time_point end,
                      std::chrono::steady_clock::time_point origin);

}  // namespace tg::bench
