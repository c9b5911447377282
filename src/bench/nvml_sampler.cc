#include "bench/nvml_sampler.h"

#include <algorithm>

namespace tg::bench {

common::Result<std::unique_ptr<NvmlSampler>> NvmlSampler::Open(
    const common::LibraryLoader& loader) {
  TG_ASSIGN_OR_RETURN(std::unique_ptr<probe::NvmlReader> reader, probe::NvmlReader::Open(loader));
  std::unique_ptr<NvmlSampler> s(new NvmlSampler(std::move(reader)));
  s->SampleOnce();  // fills utilization_error() before the first Start
  return s;
}

NvmlSampler::~NvmlSampler() { Stop(); }

std::string NvmlSampler::utilization_error() const {
  std::lock_guard<std::mutex> l(error_mu_);
  return utilization_error_;
}

NvmlSample NvmlSampler::SampleOnce() const {
  NvmlSample out;
  out.t = std::chrono::steady_clock::now();
  probe::NvmlFields fields;
  fields.pcie = fields.power = fields.processes = false;  // bench plots utilisation and memory
  double sum = 0;
  int n = 0;
  std::string why;
  for (const probe::NvmlDeviceSample& d : reader_->SampleAll(fields)) {
    if (d.utilization) {
      sum += *d.utilization;
      ++n;
    } else if (why.empty() && d.unavailable.count("utilization")) {
      why = d.unavailable.at("utilization");
    }
    if (d.memory_used_bytes) out.memory_used_bytes += static_cast<double>(*d.memory_used_bytes);
  }
  if (n > 0) out.utilization = sum / n;
  std::lock_guard<std::mutex> l(error_mu_);
  utilization_error_ = n > 0 ? "" : why;
  return out;
}

void NvmlSampler::Start(double interval_s) {
  thread_ = std::thread([this, interval_s] {
    // The first sample is taken before stop_ is looked at, so a sampler stopped at once still has
    // one reading, however late the thread was scheduled.
    do {
      samples_.push_back(SampleOnce());
      for (int i = 0; i < static_cast<int>(interval_s * 50) && !stop_.load(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    } while (!stop_.load());
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
