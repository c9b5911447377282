// Per-GPU monitoring of `truegreen serve` through the shared probe::NvmlReader:
//   - the nv_gpu_* metrics (Triton's names, label gpu_uuid) and PCIe throughput, refreshed on a
//     background thread every --gpu-sample-interval-ms, declared only when NVML is present;
//   - the liveness check on the same tick (nvmlDeviceGetHandleByIndex_v2 + a memory read per
//     device): a failure (e.g. NVML_ERROR_GPU_IS_LOST) is a liveness fault that /readyz reports
//     until a later tick succeeds again;
//   - the canary window: utilisation sampled while the timed canary runs, plus the compute
//     process list at its end, judged by EvaluateGpuUse (floor and "this process used the GPU").
//
// Ownership: GpuMonitor owns its reader (NVML initialisation) and its thread; Metrics is borrowed
// and must outlive it. Failure: NVML being absent is not an error: present() is false and
// absent_reason() says why (the library's loader error or nvmlInit's code). Thread safety: every
// method may be called from any thread; Start/Stop from one thread.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/config.h"
#include "common/dynlib.h"
#include "probe/nvml_reader.h"
#include "server/metrics.h"

namespace tg::server {

// What NVML saw of one GPU during a canary window.
struct GpuWindowDevice {
  std::string uuid;
  std::optional<double> utilization;  // mean of the samples in the window, 0..1
  std::string utilization_unavailable;
  std::optional<std::vector<unsigned>> pids;  // compute processes at the window's end
  std::string processes_unavailable;
};

struct GpuWindow {
  bool nvml = false;          // NVML present
  std::string absent_reason;  // why not, when !nvml
  std::vector<GpuWindowDevice> devices;
};

// Who "this process" is to NVML. The NVIDIA driver does not support PID namespaces: it reports
// every compute process by its pid in the initial (host) namespace, so in a container with its
// own PID namespace (every Kubernetes pod without hostPID) getpid() is never in NVML's list, even
// while this process runs on the GPU.
struct SelfProcess {
  unsigned pid = 0;
  bool own_pid_namespace = false;  // not the initial PID namespace: NVML's pids are not ours
  std::vector<std::string> gpu_device_files;  // the /dev/nvidiaN this process holds open
};

// Reads it for process `pid` from `proc_dir` (its /proc/<pid> or /proc/self): ns/pid against the
// initial namespace's inode (PROC_PID_INIT_INO), fd/* for GPU device nodes. A namespace link that
// cannot be read counts as an own namespace (NVML's pids are then not taken as comparable).
SelfProcess ReadSelfProcess(unsigned pid, const std::string& proc_dir = "/proc/self");

struct GpuUsePolicy {
  std::optional<double> min_utilization;  // --canary-min-gpu-utilization; unset = not gated
  bool gpu_sessions = false;              // some model session has a GPU provider attached
};

struct GpuUseVerdict {
  enum class Outcome { kPass, kBelowFloor, kNotOnGpu };
  Outcome outcome = Outcome::kPass;
  // "proven" | "proven indirectly" (own PID namespace, see SelfProcess) | "not proven" |
  // "not measured" | "not required"
  std::string process_proof;
  // "passed" | "below floor" | "not measured" | "not gated"
  std::string floor_check;
  std::optional<double> utilization;  // the busiest considered GPU's mean during the canary
  std::string message;                // why it failed, or what could not be measured
  common::Json ToJson() const;
};

// The decision (docs/POLICY.md, "GPU use during the canary"). GPU work is expected when a session
// has a GPU provider or a floor is set. Then: the process list read and this process's pid absent
// from every GPU -> kNotOnGpu (exit 3), unless it runs in its own PID namespace, holds a GPU
// device node open, and a GPU listing a compute process was busy during the canary ("proven
// indirectly"); a floor set and utilisation unmeasurable or below it -> kBelowFloor (exit 5).
// What cannot be measured is reported "not measured", never "proven"/"passed".
GpuUseVerdict EvaluateGpuUse(const GpuWindow& w, const GpuUsePolicy& p, const SelfProcess& self);

class GpuMonitor {
 public:
  using LogFn = std::function<void(const std::string&)>;
  GpuMonitor(const common::LibraryLoader& loader, Metrics* metrics, LogFn log);
  ~GpuMonitor();
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  bool present() const { return reader_ != nullptr; }
  const std::string& absent_reason() const { return absent_reason_; }

  // Samples now, then every `interval_ms` until Stop (no thread when NVML is absent).
  void Start(int interval_ms);
  void Stop();

  // The canary window: samples taken between the two calls, plus one at EndWindow with the
  // compute process list (NVML's utilisation looks back up to 1 s, covering a short canary).
  void BeginWindow();
  GpuWindow EndWindow();

  // "" while every GPU answers the liveness check, else the failure (device, call, NVML error).
  std::string LivenessFault() const;
  // For /v1/capabilities: nvml present or why not, the latest sample per GPU, liveness.
  common::Json ToJson() const;

 private:
  void Tick();
  void Publish(const std::vector<probe::NvmlDeviceSample>& samples);
  void Unpublish();

  std::unique_ptr<probe::NvmlReader> reader_;
  std::string absent_reason_;
  Metrics* metrics_;
  LogFn log_;

  mutable std::mutex mu_;  // guards everything below
  std::vector<probe::NvmlDeviceSample> latest_;
  std::string live_fault_;
  bool window_open_ = false;
  std::vector<std::vector<double>> window_util_;  // per device index

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tg::server
