// Taking a capability snapshot of the node truegreen runs on.
//
// TakeSnapshot enumerates, in this order: host facts, device nodes and /proc/driver/nvidia/version
// (under options.root, so tests can point them at a fake tree), the NVIDIA_* / CUDA_VISIBLE_DEVICES
// environment, NVML, the CUDA driver (libcuda), the CUDA runtime, cuBLAS/cuBLASLt, cuDNN and its
// sub-libraries, TensorRT, NCCL, and finally ONNX Runtime and its GPU provider libraries
// (runtime/ort_probe.h). The CUDA libraries are loaded through the LibraryLoader (RTLD_GLOBAL)
// *before* the provider libraries, so a provider's DT_NEEDED entries resolve to the copies the
// loader found (--lib-path first) rather than to whatever the system search would pick.
//
// Failure behaviour: TakeSnapshot never fails and never throws; every missing library, failing
// call or unreadable file becomes an error text in the snapshot. It does call nvmlInit/cuInit (and
// nvmlShutdown), and the libraries it loads stay in the process (RTLD_NODELETE).
// Thread safety: call from one thread at a time (NVML/CUDA initialisation is process-global).
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

Snapshot TakeSnapshot(const common::LibraryLoader& loader, const ProbeOptions& options = {});

// Symbolic names of NVIDIA result codes ("CUDA_ERROR_NO_DEVICE", "NVML_ERROR_DRIVER_NOT_LOADED",
// "cudaErrorInsufficientDriver"); "UNKNOWN_<code>" for codes not in the table. Used instead of the
// libraries' own name functions because the stub libcuda cannot name its own errors.
std::string CudaErrorName(int code);
std::string CudaRuntimeErrorName(int code);
std::string NvmlErrorName(int code);

}  // namespace tg::probe
