// The capability snapshot of the node truegreen runs on, without ONNX Runtime: the ORT section is
// filled by runtime::TakeSnapshot (runtime/ort_probe.h), which calls this first.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/dynlib.h"
#include "probe/snapshot.h"

namespace tg::probe {

struct ProbeOptions {
  // Prefix for /dev, /proc/driver/nvidia, /etc/os-release and container hints ("/" = the real
  // node). Kernel, CPU and cgroup facts always come from the running kernel.
  std::string root = "/";
  // Environment to record; nullopt = the process environment.
  std::optional<std::map<std::string, std::string>> env;
  // Skip NVML / CUDA initialisation calls (only load libraries and read versions).
  bool skip_init = false;
};

// The environment variables recorded in Snapshot::env, in this order.
inline constexpr const char* kProbedEnvVars[] = {
    "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_REQUIRE_CUDA",
    "NVIDIA_DISABLE_REQUIRE", "CUDA_VISIBLE_DEVICES"};

// Records, in this order: host facts, device nodes and /proc/driver/nvidia/version (under
// options.root, so tests can point them at a fake tree), the NVIDIA_* / CUDA_VISIBLE_DEVICES
// environment, the GPU provider libraries' ELF facts (read from their files, not loaded: they
// choose which CUDA/cuDNN/TensorRT majors to look for), then NVML, the CUDA driver (libcuda), the
// CUDA runtime, cuBLAS/cuBLASLt, cuDNN and its sub-libraries, TensorRT and NCCL, loaded through
// `loader` (RTLD_GLOBAL), so provider libraries loaded later bind to these copies. The ORT
// section holds only the provider libraries' ELF facts.
//
// Never fails and never throws: a missing library, failing call or unreadable file becomes an
// error text in the snapshot. Calls nvmlInit/cuInit (and nvmlShutdown) unless
// options.skip_init; the libraries it loads stay in the process (RTLD_NODELETE). Not thread-safe:
// call from one thread at a time (NVML/CUDA initialisation is process-global).
Snapshot TakeSnapshot(const common::LibraryLoader& loader, const ProbeOptions& options = {});

}  // namespace tg::probe
