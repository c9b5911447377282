// The capability snapshot: what a node really offers for GPU inference, as plain data.
//
// A Snapshot is produced by probe::TakeSnapshot (probe.h) or read back from JSON, and consumed by
// admit/diff/doctor. It holds no library handles and no ORT types: every entry is either a value
// or the reason it could not be read (a loader error, an NVML/CUDA error name and code, a missing
// file), so a snapshot taken on a broken node is as informative as one taken on a healthy node.
// docs/SNAPSHOT.md documents every JSON field.
//
// JSON (ToJson / SnapshotFromJson) carries `schema_version` = kSnapshotSchemaVersion. Reading is
// strict: a wrong type, an unknown field or a different schema version is an INVALID_ARG error
// that names the source file and the dotted field path ("nvml.devices[0].memory_total_bytes");
// absent fields take their default (so hand-written snapshots for tests can stay short).
//
// Plain value types: copyable, no shared state, safe to use from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/status.h"

namespace tg::probe {

inline constexpr const char* kSnapshotSchemaVersion = "truegreen.snapshot/v1";

// One shared library that the probe tried to load through common::LibraryLoader.
struct LibInfo {
  std::string soname;         // what was asked for, e.g. "libcudart.so.13"
  bool loaded = false;        // dlopen succeeded
  std::string resolved_path;  // file actually mapped (symlinks resolved); "" when not loaded
  std::string error;          // the loader's exact error text when !loaded
  std::optional<std::int64_t> version_raw;  // the library's own integer encoding, when read
  std::optional<std::string> version;       // decoded "major.minor[.patch]", when read
  std::string version_error;  // why the version could not be read (loaded but symbol missing ...)
};

struct HostInfo {
  std::string kernel;        // uname release, e.g. "6.1.0-18-amd64"
  std::string os;            // PRETTY_NAME from <root>/etc/os-release ("" when absent)
  std::string architecture;  // uname machine, e.g. "x86_64"
  std::string cpu_model;     // first "model name" of /proc/cpuinfo
  int cpu_count = 0;         // online CPUs
  std::optional<std::uint64_t> memory_total_bytes;  // MemTotal of /proc/meminfo
  bool container = false;                           // any container hint below was found
  std::vector<std::string>
      container_hints;         // e.g. "/.dockerenv exists", "KUBERNETES_SERVICE_HOST set"
  std::string cgroup_version;  // "v1", "v2" or "unknown"
  std::optional<std::string> cgroup_memory_limit;  // memory.max / limit_in_bytes of our cgroup
  std::optional<std::string> cgroup_cpu_limit;     // cpu.max of our cgroup (v2)
  std::map<std::string, std::string> errors;       // field -> why it could not be read
};

// A device node or /proc file checked under the probe root.
struct PathCheck {
  std::string path;  // as seen by the node, e.g. "/dev/nvidiactl" (root prefix not included)
  bool present = false;
  std::string type;   // "char-device", "file", "directory", "other" or "" when absent
  std::string error;  // why it is absent / unreadable (errno text)
};

struct DeviceNodes {
  std::string root = "/";                // root prefix the checks ran under
  PathCheck nvidiactl;                   // /dev/nvidiactl
  PathCheck nvidia_uvm;                  // /dev/nvidia-uvm
  std::vector<PathCheck> gpus;           // /dev/nvidia0 .. /dev/nvidiaN that exist, in index order
  PathCheck proc_driver_version;         // /proc/driver/nvidia/version
  std::string proc_driver_version_text;  // its first line
  std::optional<std::string> kernel_module_version;  // e.g. "580.65.06", parsed from that line
};

// One NVIDIA_* / CUDA_* variable: value, or nullopt when unset.
struct EnvVar {
  std::string name;
  std::optional<std::string> value;
};

struct NvmlDevice {
  int index = 0;
  std::optional<std::string> name;
  std::optional<std::string> uuid;
  std::optional<std::string> compute_capability;  // "9.0"
  std::optional<std::uint64_t> memory_total_bytes;
  std::optional<bool> mig_enabled;     // current MIG mode
  std::optional<bool> mig_pending;     // pending MIG mode (after reset)
  std::optional<int> pcie_generation;  // current link generation
  std::optional<int> pcie_generation_max;
  std::optional<int> pcie_width;  // current link width (lanes)
  std::optional<int> pcie_width_max;
  std::map<std::string, std::string> errors;  // field -> "NVML_ERROR_NOT_SUPPORTED (3)"
};

// An API result code with its symbolic name, e.g. {100, "CUDA_ERROR_NO_DEVICE"}.
struct ApiResult {
  int code = 0;
  std::string name;
};

struct NvmlInfo {
  LibInfo library;                                 // libnvidia-ml.so.1
  std::optional<ApiResult> init;                   // nvmlInit_v2 result (absent when not called)
  std::optional<std::string> driver_version;       // "580.65.06"
  std::optional<int> cuda_driver_version_raw;      // 13000
  std::optional<std::string> cuda_driver_version;  // "13.0"
  std::optional<int> device_count;
  std::vector<NvmlDevice> devices;
  std::map<std::string, std::string> errors;  // field -> NVML error name and code
};

struct CudaDevice {
  int index = 0;
  std::optional<std::string> name;
  std::optional<std::string> compute_capability;
  std::optional<std::uint64_t> memory_total_bytes;
  std::map<std::string, std::string> errors;
};

struct CudaDriverInfo {
  LibInfo library;                  // libcuda.so.1; version = cuDriverGetVersion
  std::optional<ApiResult> init;    // cuInit(0)
  std::optional<int> device_count;  // cuDeviceGetCount after a successful cuInit
  std::vector<CudaDevice> devices;
  std::map<std::string, std::string> errors;
};

struct CudaRuntimeInfo {
  LibInfo library;                        // libcudart.so.<major>; version = cudaRuntimeGetVersion
  std::optional<int> driver_version_raw;  // cudaDriverGetVersion (0 = no driver)
  std::optional<std::string> driver_version;
  std::map<std::string, std::string> errors;
};

struct CudnnInfo {
  LibInfo library;                        // libcudnn.so.9; version = cudnnGetVersion
  std::optional<int> cudart_version_raw;  // cudnnGetCudartVersion: runtime cuDNN was built with
  std::vector<LibInfo> sub_libraries;     // libcudnn_ops.so.9 ... (cuDNN loads them lazily)
};

struct TensorRtInfo {
  LibInfo library;      // libnvinfer.so.10; version = getInferLibVersion
  LibInfo onnx_parser;  // libnvonnxparser.so.10; version = getNvOnnxParserVersion
};

// A device an execution provider offers after registration (OrtApi::GetEpDevices).
struct EpDevice {
  std::string ep_name;      // "CUDAExecutionProvider"
  std::string device_type;  // "GPU", "CPU" or "NPU"
  std::string vendor;       // hardware vendor, e.g. "NVIDIA"
};

// One ONNX Runtime GPU provider library, loaded for real.
struct ProviderLibrary {
  std::string provider;  // "CUDAExecutionProvider" / "TensorrtExecutionProvider"
  LibInfo library;       // libonnxruntime_providers_cuda.so; error = the loader's exact text
  // How it was loaded: "ort_register" (OrtApi::RegisterExecutionProviderLibrary, as ORT loads it
  // when serving; the error is ORT's message, which quotes the dynamic linker verbatim) or
  // "dlopen" (ORT itself unavailable); "" when not attempted.
  std::string load_method;
  // Devices this provider offers once registered: empty although it loaded = it found no GPU
  // (e.g. the CUDA stub driver) and sessions would silently run elsewhere. nullopt = not known.
  std::optional<std::vector<EpDevice>> ep_devices;
  std::string file;                   // file the ELF facts were read from ("" when none was found)
  std::vector<std::string> needed;    // its DT_NEEDED entries, in order
  std::optional<int> cuda_major;      // from libcudart.so.N / libcublas*.so.N
  std::optional<int> cudnn_major;     // from libcudnn.so.N
  std::optional<int> tensorrt_major;  // from libnvinfer.so.N
  std::string elf_error;              // why DT_NEEDED could not be read
  // Where the provider file came from relative to the core: "beside_core" (same directory as the
  // loaded libonnxruntime.so, as one release archive lays them out), "elsewhere", or "" when
  // either file is unknown.
  std::string origin;
};

struct OrtInfo {
  LibInfo library;                              // libonnxruntime.so; version = GetVersionString()
  std::string build_info;                       // GetBuildInfoString()
  std::vector<std::string> compiled_providers;  // GetAvailableProviders()
  // The core's build flavor: "gpu" when GetAvailableProviders lists CUDAExecutionProvider (the
  // core was compiled with USE_CUDA and carries the provider-host entries the CUDA/TensorRT
  // provider libraries call back into), "cpu" when it is loaded and lists no GPU provider (a
  // CPU build: a GPU provider paired with it crashes inside the core), "" when not loaded.
  std::string core_flavor;
  LibInfo providers_shared;  // libonnxruntime_providers_shared.so
  std::vector<ProviderLibrary> provider_libraries;
};

struct Snapshot {
  std::string schema_version = kSnapshotSchemaVersion;
  std::string tool_version;                  // truegreen version that took it
  std::string taken_at;                      // UTC, ISO 8601 (ignored by diff)
  std::vector<std::string> lib_search_dirs;  // loader's explicit dirs, in search order
  HostInfo host;
  DeviceNodes devices;
  std::vector<EnvVar> env;
  NvmlInfo nvml;
  CudaDriverInfo cuda_driver;
  CudaRuntimeInfo cuda_runtime;
  LibInfo cublas;    // libcublas.so.<major>; version via cublasGetProperty
  LibInfo cublaslt;  // libcublasLt.so.<major>; version via cublasLtGetVersion
  CudnnInfo cudnn;
  TensorRtInfo tensorrt;
  LibInfo nccl;  // libnccl.so.2; version via ncclGetVersion
  OrtInfo onnxruntime;

  // Value of an environment variable recorded in `env` (nullopt when unset or not recorded).
  std::optional<std::string> Env(const std::string& name) const;
};

// The snapshot as docs/SNAPSHOT.md documents it. Never fails; thread-safe.
common::Json ToJson(const Snapshot& s);
// Strict reader (see the header comment); `source` names the file in every error message.
[[nodiscard]] common::Result<Snapshot> SnapshotFromJson(const common::Json& j,
                                                        const std::string& source);
// Reads `path` ("-" = stdin) with the config size cap (a 100 MB file is refused before parsing).
[[nodiscard]] common::Result<Snapshot> LoadSnapshotFile(const std::string& path);

// Encodings used to decode raw versions (exposed for admit and for tests).
// CUDA (driver/runtime): 1000*major + 10*minor -> "13.0".
std::string CudaVersionString(std::int64_t v);
// cuDNN 9 / TensorRT 10 / cuBLAS / NCCL>=2.9: major*10000 + minor*100 + patch -> "9.13.0".
std::string TripleVersionString(std::int64_t v);

}  // namespace tg::probe
