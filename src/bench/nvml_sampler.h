// Local GPU sampling through NVML (libnvidia-ml.so.1, loaded only through common::LibraryLoader),
// used by `truegreen bench` when the server's /metrics gives no GPU utilisation and the GPU is on
// this host. Samples utilisation (nvmlDeviceGetUtilizationRates, mean over devices, 0..1) and used
// memory (nvmlDeviceGetMemoryInfo, summed) on a background thread.
//
// NvmlSampler owns the library handle, the NVML initialisation (nvmlShutdown in the destructor)
// and its thread. Start/Stop/Samples from one thread; Samples() after Stop().
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/result.h"
#include "common/dynlib.h"
#include "common/status.h"

namespace tg::bench {

struct NvmlSample {
  std::chrono::steady_clock::time_point t;
  std::optional<double> utilization;  // 0..1, mean over devices; absent when NVML cannot say
  double memory_used_bytes = 0;
};

class NvmlSampler {
 public:
  // NOT_FOUND when libnvidia-ml is absent, UNAVAILABLE when nvmlInit fails or no device exists.
  static common::Result<std::unique_ptr<NvmlSampler>> Open(const common::LibraryLoader& loader);
  ~NvmlSampler();
  NvmlSampler(const NvmlSampler&) = delete;
  NvmlSampler& operator=(const NvmlSampler&) = delete;

  NvmlSample SampleOnce() const;
  void Start(double interval_s);
  void Stop();
  const std::vector<NvmlSample>& Samples() const { return samples_; }
  // Why utilisation is absent ("" when it was read), e.g. the missing symbol.
  const std::string& utilization_error() const { return utilization_error_; }

 private:
  explicit NvmlSampler(common::DynamicLibrary lib) : lib_(std::move(lib)) {}
  common::DynamicLibrary lib_;
  std::vector<void*> devices_;
  std::string utilization_error_;
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
