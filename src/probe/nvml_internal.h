// NVML's C interface as probe binds it (libnvidia-ml.so.1, loaded through common::LibraryLoader; no
// vendor header is included or needed): the nvml.h layouts truegreen reads and `NvmlApi`, every
// entry point resolved once from a loaded library. The snapshot's NVML facts (host_gpu_libs.cc) and
// the live reader (nvml_reader.cc) both call NVML through it, so each C signature is written once.
// probe/ only.
//
// Ownership: NvmlApi holds plain function pointers into the library it was built from; they stay
// valid while that library is loaded (the loader's RTLD_NODELETE keeps it for the process).
// Failure: a pointer is null when the library does not export the entry point. Thread safety:
// immutable after construction; NVML's calls are thread-safe.
#pragma once

#include "common/dynlib.h"

namespace tg::probe::internal {

// nvmlMemory_t, nvmlUtilization_t, nvmlProcessInfo_t (the _v2/_v3 process calls) and
// nvmlProcessInfo_v1_t (the unversioned call). Every call returns an nvmlReturn_t (an int enum);
// device handles are opaque pointers.
struct NvmlMemory {
  unsigned long long total, free, used;
};
struct NvmlUtilization {
  unsigned gpu, memory;
};
struct NvmlProcessInfo {
  unsigned pid;
  unsigned long long used_gpu_memory;
  unsigned gpu_instance_id, compute_instance_id;
};
struct NvmlProcessInfoV1 {
  unsigned pid;
  unsigned long long used_gpu_memory;
};
static_assert(sizeof(NvmlProcessInfo) == 24 && sizeof(NvmlProcessInfoV1) == 16);

template <typename Info>
using NvmlProcessFn = int (*)(void*, unsigned*, Info*);

struct NvmlApi {
  explicit NvmlApi(const common::DynamicLibrary& lib)
      : init(lib.Function<int (*)()>("nvmlInit_v2")),
        shutdown(lib.Function<int (*)()>("nvmlShutdown")),
        error_string(lib.Function<const char* (*)(int)>("nvmlErrorString")),
        system_driver_version(lib.Function<int (*)(char*, unsigned)>("nvmlSystemGetDriverVersion")),
        system_cuda_driver_version(FirstOf<int (*)(int*)>(lib, "nvmlSystemGetCudaDriverVersion_v2",
                                                          "nvmlSystemGetCudaDriverVersion")),
        device_count(lib.Function<int (*)(unsigned*)>("nvmlDeviceGetCount_v2")),
        device_handle(lib.Function<int (*)(unsigned, void**)>("nvmlDeviceGetHandleByIndex_v2")),
        device_name(lib.Function<int (*)(void*, char*, unsigned)>("nvmlDeviceGetName")),
        device_uuid(lib.Function<int (*)(void*, char*, unsigned)>("nvmlDeviceGetUUID")),
        device_compute_capability(
            lib.Function<int (*)(void*, int*, int*)>("nvmlDeviceGetCudaComputeCapability")),
        device_memory(lib.Function<int (*)(void*, NvmlMemory*)>("nvmlDeviceGetMemoryInfo")),
        device_mig_mode(lib.Function<int (*)(void*, unsigned*, unsigned*)>("nvmlDeviceGetMigMode")),
        device_pcie_generation(
            lib.Function<int (*)(void*, unsigned*)>("nvmlDeviceGetCurrPcieLinkGeneration")),
        device_pcie_generation_max(
            lib.Function<int (*)(void*, unsigned*)>("nvmlDeviceGetMaxPcieLinkGeneration")),
        device_pcie_width(
            lib.Function<int (*)(void*, unsigned*)>("nvmlDeviceGetCurrPcieLinkWidth")),
        device_pcie_width_max(
            lib.Function<int (*)(void*, unsigned*)>("nvmlDeviceGetMaxPcieLinkWidth")),
        device_utilization(
            lib.Function<int (*)(void*, NvmlUtilization*)>("nvmlDeviceGetUtilizationRates")),
        device_pcie_throughput(
            lib.Function<int (*)(void*, int, unsigned*)>("nvmlDeviceGetPcieThroughput")),
        device_power(lib.Function<int (*)(void*, unsigned*)>("nvmlDeviceGetPowerUsage")),
        processes_v3(lib.Function<NvmlProcessFn<NvmlProcessInfo>>(
            "nvmlDeviceGetComputeRunningProcesses_v3")),
        processes_v2(lib.Function<NvmlProcessFn<NvmlProcessInfo>>(
            "nvmlDeviceGetComputeRunningProcesses_v2")),
        processes_v1(lib.Function<NvmlProcessFn<NvmlProcessInfoV1>>(
            "nvmlDeviceGetComputeRunningProcesses")) {}

  int (*init)();      // nvmlInit_v2
  int (*shutdown)();  // nvmlShutdown
  const char* (*error_string)(int);
  int (*system_driver_version)(char*, unsigned);
  int (*system_cuda_driver_version)(int*);  // the _v2 call, else the unversioned one
  int (*device_count)(unsigned*);           // nvmlDeviceGetCount_v2
  int (*device_handle)(unsigned, void**);   // nvmlDeviceGetHandleByIndex_v2
  int (*device_name)(void*, char*, unsigned);
  int (*device_uuid)(void*, char*, unsigned);
  int (*device_compute_capability)(void*, int*, int*);
  int (*device_memory)(void*, NvmlMemory*);
  int (*device_mig_mode)(void*, unsigned*, unsigned*);  // current, pending
  int (*device_pcie_generation)(void*, unsigned*);
  int (*device_pcie_generation_max)(void*, unsigned*);
  int (*device_pcie_width)(void*, unsigned*);
  int (*device_pcie_width_max)(void*, unsigned*);
  int (*device_utilization)(void*, NvmlUtilization*);
  int (*device_pcie_throughput)(void*, int, unsigned*);  // counter: 0 TX bytes, 1 RX bytes (KB/s)
  int (*device_power)(void*, unsigned*);                 // mW
  NvmlProcessFn<NvmlProcessInfo> processes_v3;
  NvmlProcessFn<NvmlProcessInfo> processes_v2;
  NvmlProcessFn<NvmlProcessInfoV1> processes_v1;

 private:
  template <typename Fn>
  static Fn FirstOf(const common::DynamicLibrary& lib, const char* symbol, const char* fallback) {
    Fn f = lib.Function<Fn>(symbol);
    return f != nullptr ? f : lib.Function<Fn>(fallback);
  }
};

}  // namespace tg::probe::internal
