#include "probe/nvml_reader.h"

#include "probe/nvml_internal.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace tg::probe {
namespace {

using internal::NvmlApi;
using internal::NvmlMemory;
using internal::NvmlProcessFn;
using internal::NvmlProcessInfo;
using internal::NvmlProcessInfoV1;
using internal::NvmlUtilization;

constexpr unsigned long long kValueNotAvailable = std::numeric_limits<unsigned long long>::max();
// A GPU runs at most a few hundred contexts; more is a broken answer, not a reason to allocate.
constexpr unsigned kMaxProcesses = 4096;

// Reads the process list with one versioned call: the count first, then the entries (the list
// may grow between the two calls, so INSUFFICIENT_SIZE is retried a few times).
template <typename Info>
int ReadProcessList(NvmlProcessFn<Info> fn, void* handle, std::vector<NvmlProcess>* out) {
  unsigned n = 0;
  int rc = fn(handle, &n, nullptr);
  for (int attempt = 0; attempt < 4; ++attempt) {
    if (rc == kNvmlSuccess && n == 0) return kNvmlSuccess;
    if (rc != kNvmlSuccess && rc != kNvmlErrorInsufficientSize) return rc;
    if (n > kMaxProcesses) return kNvmlErrorInsufficientSize;
    n += 8;  // room for processes that start between the calls
    std::vector<Info> buf(n);
    rc = fn(handle, &n, buf.data());
    if (rc == kNvmlSuccess) {
      for (unsigned i = 0; i < n && i < buf.size(); ++i) {
        NvmlProcess p;
        p.pid = buf[i].pid;
        if (buf[i].used_gpu_memory != kValueNotAvailable) {
          p.used_memory_bytes = buf[i].used_gpu_memory;
        }
        out->push_back(p);
      }
      return kNvmlSuccess;
    }
  }
  return rc;
}

}  // namespace

common::Result<std::unique_ptr<NvmlReader>> NvmlReader::Open(const common::LibraryLoader& loader) {
  TG_ASSIGN_OR_RETURN(common::DynamicLibrary lib, loader.Load("libnvidia-ml.so.1"));
  auto api = std::make_unique<const NvmlApi>(lib);
  if (api->init == nullptr || api->device_count == nullptr || api->device_handle == nullptr) {
    return common::Status::Unavailable(lib.resolved_path() +
                                       ": NVML entry points missing (nvmlInit_v2, "
                                       "nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2)");
  }
  if (int rc = api->init(); rc != kNvmlSuccess) {
    return common::Status::Unavailable(
        fmt::format("nvmlInit_v2 failed with {} ({})", rc,
                    api->error_string ? api->error_string(rc) : "no error string"));
  }
  // From here the destructor pairs the successful init with nvmlShutdown.
  std::unique_ptr<NvmlReader> r(new NvmlReader(std::move(lib), std::move(api)));
  unsigned n = 0;
  if (int rc = r->api_->device_count(&n); rc != kNvmlSuccess) {
    return common::Status::Unavailable("nvmlDeviceGetCount_v2 failed with " + r->ErrorText(rc));
  }
  if (n == 0) return common::Status::Unavailable("NVML reports no device");
  for (unsigned i = 0; i < n && i < 64; ++i) {
    Device d;
    d.index = i;
    if (r->api_->device_handle(i, &d.handle) != kNvmlSuccess) continue;
    char buf[96] = {};
    if (r->api_->device_uuid != nullptr &&
        r->api_->device_uuid(d.handle, buf, sizeof(buf)) == kNvmlSuccess) {
      d.uuid = buf;
    }
    if (d.uuid.empty()) d.uuid = "index-" + std::to_string(i);
    r->devices_.push_back(std::move(d));
  }
  if (r->devices_.empty()) return common::Status::Unavailable("NVML returned no device handle");
  return r;
}

NvmlReader::NvmlReader(common::DynamicLibrary lib, std::unique_ptr<const NvmlApi> api)
    : lib_(std::move(lib)), api_(std::move(api)) {}

NvmlReader::~NvmlReader() {
  if (api_->shutdown != nullptr) api_->shutdown();
}

std::string NvmlReader::ErrorText(int rc) const {
  const char* s = api_->error_string ? api_->error_string(rc) : nullptr;
  return fmt::format("{} ({})", rc, s ? s : "unknown");
}

void NvmlReader::ReadProcesses(void* handle, NvmlDeviceSample* s) const {
  std::vector<NvmlProcess> procs;
  int rc = kNvmlErrorNotSupported;
  std::string fn = "nvmlDeviceGetComputeRunningProcesses_v3";
  if (api_->processes_v3 != nullptr) {
    rc = ReadProcessList(api_->processes_v3, handle, &procs);
  } else if (api_->processes_v2 != nullptr) {
    fn = "nvmlDeviceGetComputeRunningProcesses_v2";
    rc = ReadProcessList(api_->processes_v2, handle, &procs);
  } else if (api_->processes_v1 != nullptr) {
    fn = "nvmlDeviceGetComputeRunningProcesses";
    rc = ReadProcessList(api_->processes_v1, handle, &procs);
  } else {
    s->unavailable["processes"] =
        "nvmlDeviceGetComputeRunningProcesses not exported by " + lib_.resolved_path();
    return;
  }
  if (rc == kNvmlSuccess) {
    s->processes = std::move(procs);
    return;
  }
  s->lost = s->lost || rc == kNvmlErrorGpuIsLost;
  s->unavailable["processes"] = fn + " failed with " + ErrorText(rc);
}

NvmlDeviceSample NvmlReader::Sample(std::size_t i, const NvmlFields& fields) const {
  const Device& d = devices_.at(i);
  NvmlDeviceSample s;
  s.index = d.index;
  s.uuid = d.uuid;
  // Records why a field is absent; a lost GPU marks the whole sample.
  auto failed = [&](const char* field, const char* fn, int rc) {
    s.lost = s.lost || rc == kNvmlErrorGpuIsLost;
    s.unavailable[field] = std::string(fn) + " failed with " + ErrorText(rc);
  };
  auto missing = [&](const char* field, const char* fn) {
    s.unavailable[field] = std::string(fn) + " not exported by " + lib_.resolved_path();
  };
  if (fields.utilization) {
    if (auto f = api_->device_utilization) {
      NvmlUtilization u{};
      if (int rc = f(d.handle, &u); rc == kNvmlSuccess) {
        s.utilization = std::min(u.gpu, 100u) / 100.0;
      } else {
        failed("utilization", "nvmlDeviceGetUtilizationRates", rc);
      }
    } else {
      missing("utilization", "nvmlDeviceGetUtilizationRates");
    }
  }
  if (fields.memory) {
    if (auto f = api_->device_memory) {
      NvmlMemory m{};
      if (int rc = f(d.handle, &m); rc == kNvmlSuccess) {
        s.memory_total_bytes = m.total;
        s.memory_used_bytes = m.used;
      } else {
        failed("memory", "nvmlDeviceGetMemoryInfo", rc);
      }
    } else {
      missing("memory", "nvmlDeviceGetMemoryInfo");
    }
  }
  if (fields.pcie) {
    if (auto f = api_->device_pcie_throughput) {
      unsigned tx = 0, rx = 0;
      int rc = f(d.handle, 0, &tx);
      if (rc == kNvmlSuccess) rc = f(d.handle, 1, &rx);
      if (rc == kNvmlSuccess) {
        s.pcie_tx_bytes_per_second = tx * 1024.0;  // NVML reports KB/s
        s.pcie_rx_bytes_per_second = rx * 1024.0;
      } else {
        failed("pcie", "nvmlDeviceGetPcieThroughput", rc);
      }
    } else {
      missing("pcie", "nvmlDeviceGetPcieThroughput");
    }
  }
  if (fields.power) {
    if (auto f = api_->device_power) {
      unsigned mw = 0;
      if (int rc = f(d.handle, &mw); rc == kNvmlSuccess) {
        s.power_watts = mw / 1000.0;
      } else {
        failed("power", "nvmlDeviceGetPowerUsage", rc);
      }
    } else {
      missing("power", "nvmlDeviceGetPowerUsage");
    }
  }
  if (fields.processes) ReadProcesses(d.handle, &s);
  return s;
}

std::vector<NvmlDeviceSample> NvmlReader::SampleAll(const NvmlFields& fields) const {
  std::vector<NvmlDeviceSample> out;
  out.reserve(devices_.size());
  for (std::size_t i = 0; i < devices_.size(); ++i) out.push_back(Sample(i, fields));
  return out;
}

common::Status NvmlReader::CheckLive() const {
  const auto handle = api_->device_handle;
  const auto mem = api_->device_memory;
  for (const Device& d : devices_) {
    void* h = nullptr;
    int rc = handle(d.index, &h);
    const char* what = "nvmlDeviceGetHandleByIndex_v2";
    if (rc == kNvmlSuccess && mem != nullptr) {
      NvmlMemory m{};
      rc = mem(h, &m);
      what = "nvmlDeviceGetMemoryInfo";
    }
    if (rc != kNvmlSuccess) {
      return common::Status::Unavailable(
          fmt::format("GPU {} ({}): {} failed with {}", d.index, d.uuid, what, ErrorText(rc)));
    }
  }
  return common::Status::Ok();
}

bool HasProcess(const NvmlDeviceSample& s, unsigned pid) {
  if (!s.processes) return false;
  return std::any_of(s.processes->begin(), s.processes->end(),
                     [pid](const NvmlProcess& p) { return p.pid == pid; });
}

}  // namespace tg::probe
