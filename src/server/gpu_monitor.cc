#include "server/gpu_monitor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string_view>
#include <system_error>

namespace tg::server {

using common::Json;

namespace {

// Per-GPU gauge families (label gpu_uuid). Triton's names where the meaning matches.
constexpr const char* kUtil = "nv_gpu_utilization";
constexpr const char* kMemTotal = "nv_gpu_memory_total_bytes";
constexpr const char* kMemUsed = "nv_gpu_memory_used_bytes";
constexpr const char* kPower = "nv_gpu_power_usage";
constexpr const char* kPcieTx = "truegreen_gpu_pcie_tx_bytes_per_second";
constexpr const char* kPcieRx = "truegreen_gpu_pcie_rx_bytes_per_second";
constexpr const char* kLive = "truegreen_gpu_live";
constexpr const char* kLivenessFailures = "truegreen_gpu_liveness_failures_total";

Json Optional(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

Json SampleJson(const probe::NvmlDeviceSample& s) {
  Json unavailable = Json::object();
  for (const auto& [field, why] : s.unavailable) unavailable[field] = why;
  auto bytes = [](const std::optional<std::uint64_t>& v) { return v ? Json(*v) : Json(nullptr); };
  return {{"index", s.index},
          {"uuid", s.uuid},
          {"utilization", Optional(s.utilization)},
          {"memory_total_bytes", bytes(s.memory_total_bytes)},
          {"memory_used_bytes", bytes(s.memory_used_bytes)},
          {"pcie_tx_bytes_per_second", Optional(s.pcie_tx_bytes_per_second)},
          {"pcie_rx_bytes_per_second", Optional(s.pcie_rx_bytes_per_second)},
          {"power_watts", Optional(s.power_watts)},
          {"unavailable", unavailable}};
}

std::string PidList(const std::vector<unsigned>& pids) {
  if (pids.empty()) return "none";
  std::string s;
  for (unsigned p : pids) {
    if (!s.empty()) s += ',';
    s += std::to_string(p);
  }
  return s;
}

// In its own PID namespace this process cannot find itself in NVML's list of host pids. It takes
// the next best evidence: it holds a GPU device node open (its CUDA context) and a GPU that lists
// a compute process was busy during the canary. Sets the verdict; false on kNotOnGpu.
bool ProveAcrossNamespace(const GpuWindow& w, const SelfProcess& self, const std::string& lists,
                          GpuUseVerdict* v) {
  const GpuWindowDevice* busy = nullptr;
  for (const GpuWindowDevice& d : w.devices) {
    if (!d.pids || d.pids->empty() || !d.utilization || *d.utilization <= 0) continue;
    if (!busy || *d.utilization > *busy->utilization) busy = &d;
  }
  std::string files;
  for (const std::string& f : self.gpu_device_files) files += (files.empty() ? "" : ", ") + f;
  const std::string ns = fmt::format(
      "this process (pid {}) runs in its own PID namespace and the driver reports host pids ({})",
      self.pid, lists);
  if (busy && !files.empty()) {
    v->process_proof = "proven indirectly";
    v->message = fmt::format(
        "{}; it holds {} open and {} ran a compute process at {:.2f} utilisation during the canary",
        ns, files, busy->uuid, *busy->utilization);
    return true;
  }
  v->process_proof = "not proven";
  v->outcome = GpuUseVerdict::Outcome::kNotOnGpu;
  v->message = fmt::format(
      "{}, and {}: its sessions did not run on the GPU during the canary (NVML cannot name a "
      "process across PID namespaces, so the proof rests on those two)",
      ns,
      files.empty() ? "it holds no GPU device node (/dev/nvidiaN) open"
                    : "no GPU that lists a compute process was busy during the canary");
  return false;
}

// The process proof over the window's devices; sets verdict fields, returns false on kNotOnGpu.
bool ProveProcess(const GpuWindow& w, const SelfProcess& self, GpuUseVerdict* v) {
  const unsigned pid = self.pid;
  std::string lists, why_unread;
  bool any_read = false;
  for (const GpuWindowDevice& d : w.devices) {
    if (!d.pids) {
      if (why_unread.empty()) why_unread = d.uuid + ": " + d.processes_unavailable;
      continue;
    }
    any_read = true;
    if (std::find(d.pids->begin(), d.pids->end(), pid) != d.pids->end()) {
      v->process_proof = "proven";
      return true;
    }
    if (!lists.empty()) lists += "; ";
    lists += d.uuid + " lists pid " + PidList(*d.pids);
  }
  if (!any_read) {
    v->process_proof = "not measured";
    v->message = "GPU use by this process not measured: " + why_unread;
    return true;
  }
  if (self.own_pid_namespace) return ProveAcrossNamespace(w, self, lists, v);
  v->process_proof = "not proven";
  v->outcome = GpuUseVerdict::Outcome::kNotOnGpu;
  v->message = fmt::format(
      "this process (pid {}) holds no compute context on any GPU ({}): its sessions did not run "
      "on the GPU during the canary (in a container, the driver must report the container's pids)",
      pid, lists);
  return false;
}

}  // namespace

SelfProcess ReadSelfProcess(unsigned pid, const std::string& proc_dir) {
  namespace fs = std::filesystem;
  SelfProcess s;
  s.pid = pid;
  std::error_code ec;
  // PROC_PID_INIT_INO (include/linux/proc_ns.h): the initial PID namespace's inode, fixed.
  const fs::path ns = fs::read_symlink(proc_dir + "/ns/pid", ec);
  s.own_pid_namespace = ec || ns.string() != "pid:[4026531836]";
  for (fs::directory_iterator it(proc_dir + "/fd", ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code lec;
    const std::string target = fs::read_symlink(it->path(), lec).string();
    const std::string_view prefix = "/dev/nvidia";
    if (lec || target.size() <= prefix.size() || target.compare(0, prefix.size(), prefix) != 0) {
      continue;
    }
    const std::string rest = target.substr(prefix.size());  // "0", "ctl", "-uvm", ...
    if (rest.find_first_not_of("0123456789") == std::string::npos) {
      s.gpu_device_files.push_back(target);
    }
  }
  std::vector<std::string>& f = s.gpu_device_files;  // one entry per node, however often opened
  std::sort(f.begin(), f.end());
  f.erase(std::unique(f.begin(), f.end()), f.end());
  return s;
}

Json GpuUseVerdict::ToJson() const {
  return {{"process_proof", process_proof},
          {"floor_check", floor_check},
          {"utilization", Optional(utilization)},
          {"message", message}};
}

GpuUseVerdict EvaluateGpuUse(const GpuWindow& w, const GpuUsePolicy& p, const SelfProcess& self) {
  GpuUseVerdict v;
  v.floor_check = p.min_utilization ? "not measured" : "not gated";
  // The busiest GPU's utilisation (the canary may run on any one of several).
  std::string util_why;
  for (const GpuWindowDevice& d : w.devices) {
    if (d.utilization) {
      v.utilization = std::max(v.utilization.value_or(0.0), *d.utilization);
    } else if (util_why.empty()) {
      util_why = d.uuid + ": " + d.utilization_unavailable;
    }
  }
  const bool expected = p.gpu_sessions || p.min_utilization.has_value();
  if (!expected) {
    v.process_proof = "not required";
    return v;
  }
  if (!w.nvml) {
    v.process_proof = "not measured";
    v.message = "GPU use not measured: " + w.absent_reason;
    if (p.min_utilization) {
      v.outcome = GpuUseVerdict::Outcome::kBelowFloor;
      v.message = fmt::format("GPU-utilisation floor {:.2f} set but not measured: {}",
                              *p.min_utilization, w.absent_reason);
    }
    return v;
  }
  if (!ProveProcess(w, self, &v)) return v;
  if (!p.min_utilization) return v;
  if (!v.utilization) {
    v.outcome = GpuUseVerdict::Outcome::kBelowFloor;
    v.message = fmt::format("GPU-utilisation floor {:.2f} set but not measured: {}",
                            *p.min_utilization, util_why);
    return v;
  }
  if (*v.utilization < *p.min_utilization) {
    v.floor_check = "below floor";
    v.outcome = GpuUseVerdict::Outcome::kBelowFloor;
    v.message = fmt::format("GPU utilisation {:.2f} during the canary is below the floor {:.2f}",
                            *v.utilization, *p.min_utilization);
    return v;
  }
  v.floor_check = "passed";
  return v;
}

GpuMonitor::GpuMonitor(const common::LibraryLoader& loader, Metrics* metrics, LogFn log)
    : metrics_(metrics), log_(std::move(log)) {
  auto r = probe::NvmlReader::Open(loader);
  if (!r.ok()) {
    absent_reason_ = "NVML not available: " + r.status().message();
    return;
  }
  reader_ = std::move(r).value();
  window_util_.resize(reader_->device_count());
  Metrics& m = *metrics_;
  m.DeclareGauge(kUtil, "GPU utilisation (0..1), NVML duty cycle");
  m.DeclareGauge(kMemTotal, "GPU total memory in bytes");
  m.DeclareGauge(kMemUsed, "GPU used memory in bytes");
  m.DeclareGauge(kPower, "GPU power usage in watts");
  m.DeclareGauge(kPcieTx, "GPU PCIe transmit throughput (NVML, bytes per second)");
  m.DeclareGauge(kPcieRx, "GPU PCIe receive throughput (NVML, bytes per second)");
  m.DeclareGauge(kLive, "1 while every GPU answers the NVML liveness check");
  m.DeclareCounter(kLivenessFailures, "NVML liveness checks that failed (e.g. GPU lost)");
  m.DeclareGauge("truegreen_canary_gpu_utilization",
                 "GPU utilisation (0..1) of the busiest GPU during the latest canary");
  m.Set(kLive, {}, 1);
  m.Add(kLivenessFailures, {}, 0);
}

GpuMonitor::~GpuMonitor() { Stop(); }

void GpuMonitor::Start(int interval_ms) {
  if (!present() || thread_.joinable()) return;
  Tick();
  thread_ = std::thread([this, interval_ms] {
    while (true) {
      {
        std::unique_lock<std::mutex> l(stop_mu_);
        if (stop_cv_.wait_for(l, std::chrono::milliseconds(interval_ms), [this] { return stop_; }))
          return;
      }
      Tick();
    }
  });
}

void GpuMonitor::Stop() {
  {
    std::lock_guard<std::mutex> l(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GpuMonitor::Tick() {
  common::Status live = reader_->CheckLive();
  std::string was;
  {
    std::lock_guard<std::mutex> l(mu_);
    was = live_fault_;
    live_fault_ = live.ok() ? "" : "GPU liveness: " + live.message();
  }
  metrics_->Set(kLive, {}, live.ok() ? 1 : 0);
  if (!live.ok()) {
    metrics_->Add(kLivenessFailures, {});
    // A lost GPU's last numbers are not current: drop them rather than export stale values.
    Unpublish();
    if (was.empty()) log_("GPU liveness FAILED, /readyz now 503: " + live.message());
    return;
  }
  if (!was.empty()) log_("GPU liveness recovered: " + was.substr(was.find(':') + 2));
  probe::NvmlFields fields;
  fields.processes = false;  // read at the canary's end only
  Publish(reader_->SampleAll(fields));
}

void GpuMonitor::Publish(const std::vector<probe::NvmlDeviceSample>& samples) {
  auto set = [this](const char* name, const std::string& uuid, const auto& v) {
    if (v) {
      metrics_->Set(name, {{"gpu_uuid", uuid}}, static_cast<double>(*v));
    } else {
      metrics_->Remove(name, {{"gpu_uuid", uuid}});
    }
  };
  for (const probe::NvmlDeviceSample& s : samples) {
    set(kUtil, s.uuid, s.utilization);
    set(kMemTotal, s.uuid, s.memory_total_bytes);
    set(kMemUsed, s.uuid, s.memory_used_bytes);
    set(kPower, s.uuid, s.power_watts);
    set(kPcieTx, s.uuid, s.pcie_tx_bytes_per_second);
    set(kPcieRx, s.uuid, s.pcie_rx_bytes_per_second);
  }
  std::lock_guard<std::mutex> l(mu_);
  latest_ = samples;
  if (!window_open_) return;
  for (const probe::NvmlDeviceSample& s : samples) {
    if (s.utilization && s.index < window_util_.size()) {
      window_util_[s.index].push_back(*s.utilization);
    }
  }
}

void GpuMonitor::Unpublish() {
  std::vector<std::string> uuids;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& s : latest_) uuids.push_back(s.uuid);
    latest_.clear();
  }
  for (const std::string& u : uuids) {
    for (const char* name : {kUtil, kMemTotal, kMemUsed, kPower, kPcieTx, kPcieRx}) {
      metrics_->Remove(name, {{"gpu_uuid", u}});
    }
  }
}

void GpuMonitor::BeginWindow() {
  std::lock_guard<std::mutex> l(mu_);
  window_open_ = true;
  for (auto& v : window_util_) v.clear();
}

GpuWindow GpuMonitor::EndWindow() {
  GpuWindow w;
  w.nvml = present();
  w.absent_reason = absent_reason_;
  if (!present()) return w;
  // The closing sample: NVML's utilisation looks back over the last 1/6..1 s of the canary.
  const std::vector<probe::NvmlDeviceSample> last = reader_->SampleAll();
  std::lock_guard<std::mutex> l(mu_);
  window_open_ = false;
  for (const probe::NvmlDeviceSample& s : last) {
    GpuWindowDevice d;
    d.uuid = s.uuid;
    std::vector<double>& u = window_util_.at(s.index < window_util_.size() ? s.index : 0);
    if (s.utilization) u.push_back(*s.utilization);
    if (!u.empty()) {
      double sum = 0;
      for (double x : u) sum += x;
      d.utilization = sum / static_cast<double>(u.size());
    } else {
      auto it = s.unavailable.find("utilization");
      d.utilization_unavailable = it != s.unavailable.end() ? it->second : "no sample";
    }
    if (s.processes) {
      d.pids.emplace();
      for (const probe::NvmlProcess& p : *s.processes) d.pids->push_back(p.pid);
    } else {
      auto it = s.unavailable.find("processes");
      d.processes_unavailable = it != s.unavailable.end() ? it->second : "not read";
    }
    w.devices.push_back(std::move(d));
  }
  return w;
}

std::string GpuMonitor::LivenessFault() const {
  std::lock_guard<std::mutex> l(mu_);
  return live_fault_;
}

Json GpuMonitor::ToJson() const {
  if (!present()) {
    return {{"nvml", false},
            {"reason", absent_reason_},
            {"metrics", "nv_gpu_* absent: " + absent_reason_},
            {"liveness", "not checked: " + absent_reason_}};
  }
  std::lock_guard<std::mutex> l(mu_);
  Json devices = Json::array();
  for (const auto& s : latest_) devices.push_back(SampleJson(s));
  return {{"nvml", true},
          {"library", reader_->library_path()},
          {"devices", devices},
          {"liveness", live_fault_.empty() ? "ok" : live_fault_}};
}

}  // namespace tg::server
