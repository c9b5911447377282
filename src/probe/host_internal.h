// Internal pieces of probe::TakeSnapshot, split by subject (probe/ only; not a public API).
// Each function fills its part of the snapshot and never fails (errors are recorded inside).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/dynlib.h"
#include "probe/probe.h"
#include "probe/provider_libs.h"
#include "probe/snapshot.h"

namespace tg::probe::internal {

void ProbeHost(const std::string& root, const std::map<std::string, std::string>& env, HostInfo* h);
void ProbeDeviceNodes(const std::string& root, DeviceNodes* d);
void ProbeEnv(const std::map<std::string, std::string>& env, std::vector<EnvVar>* out);
std::map<std::string, std::string> ProcessEnv();

// GPU libraries (host_gpu_libs.cc). Loaded libraries are kept alive by RTLD_NODELETE.
void ProbeNvml(const common::LibraryLoader& loader, bool init, NvmlInfo* n);
void ProbeCudaDriver(const common::LibraryLoader& loader, bool init, CudaDriverInfo* c);
void ProbeCudaRuntime(const common::LibraryLoader& loader, const std::vector<int>& majors,
                      CudaRuntimeInfo* c);
void ProbeCublas(const common::LibraryLoader& loader, const std::vector<int>& majors,
                 LibInfo* cublas, LibInfo* cublaslt);
void ProbeCudnn(const common::LibraryLoader& loader, int major, CudnnInfo* c);
void ProbeTensorRt(const common::LibraryLoader& loader, int major, TensorRtInfo* t);
void ProbeNccl(const common::LibraryLoader& loader, LibInfo* l);

// The probe-internal spelling of probe::LoadLibraryInto (provider_libs.h).
inline common::DynamicLibrary LoadInto(const common::LibraryLoader& loader,
                                       const std::string& soname, LibInfo* out) {
  return LoadLibraryInto(loader, soname, out);
}

}  // namespace tg::probe::internal

namespace tg::probe {

// Symbolic names of NVIDIA result codes ("CUDA_ERROR_NO_DEVICE", "NVML_ERROR_DRIVER_NOT_LOADED",
// "cudaErrorInsufficientDriver"); "UNKNOWN_<code>" for codes not in the table. Used instead of the
// libraries' own name functions because the stub libcuda cannot name its own errors. Pure;
// thread-safe.
std::string CudaErrorName(int code);
std::string CudaRuntimeErrorName(int code);
std::string NvmlErrorName(int code);

}  // namespace tg::probe
