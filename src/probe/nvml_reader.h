// The one live NVML reader (libnvidia-ml.so.1, loaded only through common::LibraryLoader) shared by
// `truegreen serve` (nv_gpu_* metrics, the canary's GPU-utilisation floor and process proof, the
// liveness check) and `truegreen bench` (local GPU sampling). The snapshot's static NVML facts
// (driver version, MIG, PCIe link) stay in host_gpu_libs.cc; both call NVML through the one
// binding, nvml_internal.h's NvmlApi (each entry point resolved once).
//
// Per device and per call it reads, each field absent (with the reason in `unavailable`) when the
// entry point is missing or returns an error, never reported as 0:
//   utilisation      nvmlDeviceGetUtilizationRates (duty cycle over the driver's 1/6..1 s window)
//   memory           nvmlDeviceGetMemoryInfo (total / used bytes)
//   PCIe throughput  nvmlDeviceGetPcieThroughput (TX = 0, RX = 1; KB/s over 20 ms)
//   power            nvmlDeviceGetPowerUsage (mW)
//   processes        nvmlDeviceGetComputeRunningProcesses_v3, else _v2, else the v1 call
//
// Ownership: NvmlReader owns the library reference and one nvmlInit_v2 (nvmlShutdown in the
// destructor). Failure: Open is NOT_FOUND when the library is absent, UNAVAILABLE when it lacks
// the init entry points, nvmlInit fails or no device exists. Thread safety: immutable after Open;
// every const method may be called from several threads at once (NVML itself is thread-safe).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/dynlib.h"
#include "common/status.h"

namespace tg::probe {
namespace internal {
struct NvmlApi;  // nvml_internal.h: NVML's entry points, resolved once
}  // namespace internal

// nvmlReturn_t codes truegreen names.
inline constexpr int kNvmlSuccess = 0;
inline constexpr int kNvmlErrorNotSupported = 3;
inline constexpr int kNvmlErrorInsufficientSize = 7;
inline constexpr int kNvmlErrorGpuIsLost = 15;

struct NvmlProcess {
  unsigned pid = 0;
  std::optional<std::uint64_t> used_memory_bytes;  // absent: NVML_VALUE_NOT_AVAILABLE
};

struct NvmlDeviceSample {
  unsigned index = 0;
  std::string uuid;                   // "GPU-..." (read once at Open)
  std::optional<double> utilization;  // 0..1
  std::optional<std::uint64_t> memory_total_bytes;
  std::optional<std::uint64_t> memory_used_bytes;
  std::optional<double> pcie_tx_bytes_per_second;
  std::optional<double> pcie_rx_bytes_per_second;
  std::optional<double> power_watts;
  std::optional<std::vector<NvmlProcess>> processes;  // compute processes; absent: cannot say
  // Field name ("utilization", "memory", "pcie", "power", "processes") -> why it is absent.
  std::map<std::string, std::string> unavailable;
  bool lost = false;  // a call answered NVML_ERROR_GPU_IS_LOST
};

// What to read in one Sample (processes and PCIe cost more than the rest).
struct NvmlFields {
  bool utilization = true;
  bool memory = true;
  bool pcie = true;
  bool power = true;
  bool processes = true;
};

class NvmlReader {
 public:
  // Loads NVML through `loader`, initialises it and reads each device's handle and UUID; the
  // caller owns the reader. Errors: see the file comment.
  static common::Result<std::unique_ptr<NvmlReader>> Open(const common::LibraryLoader& loader);
  ~NvmlReader();
  NvmlReader(const NvmlReader&) = delete;
  NvmlReader& operator=(const NvmlReader&) = delete;
  // Devices found by Open, and the loaded library's resolved path (valid while the reader lives).
  std::size_t device_count() const { return devices_.size(); }
  const std::string& library_path() const { return lib_.resolved_path(); }

  // Reads device `i` (< device_count(); std::out_of_range otherwise). Never fails: a field that
  // cannot be read is absent, with its reason in `unavailable`.
  NvmlDeviceSample Sample(std::size_t i, const NvmlFields& fields = {}) const;
  // Sample for every device, in index order.
  std::vector<NvmlDeviceSample> SampleAll(const NvmlFields& fields = {}) const;

  // The cheap liveness check: per device nvmlDeviceGetHandleByIndex_v2 and a memory read.
  // UNAVAILABLE naming the device (index and UUID) and NVML's error (e.g. 15 "GPU is lost").
  [[nodiscard]] common::Status CheckLive() const;

  // nvmlErrorString(rc) with the code, e.g. "15 (GPU is lost)".
  std::string ErrorText(int rc) const;

 private:
  struct Device {
    void* handle = nullptr;
    unsigned index = 0;
    std::string uuid;
  };
  NvmlReader(common::DynamicLibrary lib, std::unique_ptr<const internal::NvmlApi> api);
  void ReadProcesses(void* handle, NvmlDeviceSample* s) const;

  common::DynamicLibrary lib_;
  std::unique_ptr<const internal::NvmlApi> api_;  // resolved from lib_ once, at Open
  std::vector<Device> devices_;
};

// True when `pid` is among the sample's compute processes (false when the list is absent).
bool HasProcess(const NvmlDeviceSample& s, unsigned pid);

}  // namespace tg::probe
