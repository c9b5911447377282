#include "bench/nvml_sampler.h"

#include <fmt/format.h>

namespace tg::bench {
namespace {

// NVML's C signatures (nvmlReturn_t is an int enum; device handles are opaque pointers).
struct NvmlUtilization {
  unsigned gpu, memory;
};
struct NvmlMemory {
  unsigned long long total, free, used;
};
using InitFn = int (*)();
using CountFn = int (*)(unsigned*);
using HandleFn = int (*)(unsigned, void**);
using UtilFn = int (*)(void*, NvmlUtilization*);
using MemFn = int (*)(void*, NvmlMemory*);

}  // namespace

common::Result<std::unique_ptr<NvmlSampler>> NvmlSampler::Open(
    const common::LibraryLoader& loader) {
  TG_ASSIGN_OR_RETURN(common::DynamicLibrary lib, loader.Load("libnvidia-ml.so.1"));
  auto init = lib.Function<InitFn>("nvmlInit_v2");
  auto count = lib.Function<CountFn>("nvmlDeviceGetCount_v2");
  auto handle = lib.Function<HandleFn>("nvmlDeviceGetHandleByIndex_v2");
  if (init == nullptr || count == nullptr || handle == nullptr) {
    return common::Status::Unavailable(lib.resolved_path() + ": NVML entry points missing");
  }
  if (int rc = init(); rc != 0) {
    return common::Status::Unavailable(fmt::format("nvmlInit_v2 failed with code {}", rc));
  }
  std::unique_ptr<NvmlSampler> s(new NvmlSampler(std::move(lib)));
  unsigned n = 0;
  if (count(&n) != 0 || n == 0) return common::Status::Unavailable("NVML reports no device");
  for (unsigned i = 0; i < n && i < 64; ++i) {
    void* h = nullptr;
    if (handle(i, &h) == 0) s->devices_.push_back(h);
  }
  if (s->lib_.Function<UtilFn>("nvmlDeviceGetUtilizationRates") == nullptr) {
    s->utilization_error_ =
        "nvmlDeviceGetUtilizationRates not exported by " + s->lib_.resolved_path();
  }
  return s;
}

NvmlSampler::~NvmlSampler() {
  Stop();
  if (auto shutdown = lib_.Function<InitFn>("nvmlShutdown")) shutdown();
}

NvmlSample NvmlSampler::SampleOnce() const {
  NvmlSample out;
  out.t = std::chrono::steady_clock::now();
  auto util = lib_.Function<UtilFn>("nvmlDeviceGetUtilizationRates");
  auto mem = lib_.Function<MemFn>("nvmlDeviceGetMemoryInfo");
  double sum = 0;
  int n = 0;
  for (void* d : devices_) {
    NvmlUtilization u{};
    if (util != nullptr && util(d, &u) == 0) {
      sum += u.gpu / 100.0;
      ++n;
    }
    NvmlMemory m{};
    if (mem != nullptr && mem(d, &m) == 0) out.memory_used_bytes += static_cast<double>(m.used);
  }
  if (n > 0) out.utilization = sum / n;
  return out;
}

void NvmlSampler::Start(double interval_s) {
  thread_ = std::thread([this, interval_s] {
    while (!stop_.load()) {
      samples_.push_back(SampleOnce());
      for (int i = 0; i < static_cast<int>(interval_s * 50) && !stop_.load(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  });
}

void NvmlSampler::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

GpuSide AggregateNvml(const std::vector<NvmlSample>& samples,
                      std::chrono::steady_clock::time_point begin,
                      std::chrono::steady_clock::time_point end,
                      std::chrono::steady_clock::time_point origin) {
  GpuSide g;
  double sum = 0;
  int n = 0;
  for (const auto& s : samples) {
    if (s.t < begin || s.t > end) continue;
    g.source = "nvml (local)";
    g.memory_used_bytes = std::max(g.memory_used_bytes.value_or(0), s.memory_used_bytes);
    if (!s.utilization) continue;
    sum += *s.utilization;
    ++n;
    g.utilization_series.emplace_back(std::chrono::duration<double>(s.t - origin).count(),
                                      *s.utilization);
  }
  if (n > 0) g.utilization = sum / n;
  return g;
}

}  // namespace tg::bench
