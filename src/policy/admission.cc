#include "policy/admission.h"

#include "policy/admission_internal.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "common/status.h"
#include "common/strings.h"
#include "policy/verdict.h"

namespace tg::policy {
namespace {

using common::Json;
using internal::DescribeLoaded;
using internal::DescribeMissing;
using internal::Evaluator;
using internal::IsNotFoundError;
using internal::LibVersion;
using internal::SonameMajor;
using probe::LibInfo;
using probe::Snapshot;

using common::Lower;

// A capability list: comma-separated, trimmed, empty entries ignored, case-insensitive.
std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out = common::Split(s, ',', common::SplitMode::kTrimSkipEmpty);
  for (std::string& item : out) item = Lower(item);
  return out;
}

// The likely cause of a cuInit failure, by CUresult.
std::string CuInitCause(int code) {
  std::string cause;
  switch (code) {
    case 100:
      cause =
          "the driver is present but no GPU is visible to this process: check "
          "CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES, the /dev/nvidiaN nodes, and that the pod "
          "requests nvidia.com/gpu";
      break;
    case 803:
      cause =
          "the user-mode driver (libcuda.so.1) and the kernel module are different versions: a "
          "libcuda from another driver is on the library path (baked into the image, or a "
          "cuda-compat package), or the driver was upgraded without a reboot";
      break;
    case 804:
      cause =
          "a CUDA forward-compatibility package (cuda-compat) is in use on a GPU that does not "
          "support it (only data-center GPUs do): remove cuda-compat from the library path or "
          "upgrade the host driver";
      break;
    case 34:
      cause =
          "libcuda.so.1 is the CUDA toolkit's stub library: the real driver is not mounted into "
          "this container";
      break;
    case 35:
      cause = "the NVIDIA driver is too old for this CUDA version: upgrade the host driver";
      break;
    case 802:
      cause = "the system is not ready for CUDA: on NVSwitch systems start nvidia-fabricmanager";
      break;
    case 999:
    case 304:
      cause = "the driver failed unexpectedly: check dmesg for Xid errors and device permissions";
      break;
    default:
      cause = "CUDA cannot initialise: check dmesg, device permissions and the driver install";
  }
  return cause;
}

}  // namespace

namespace internal {

bool IsNotFoundError(const std::string& e) {
  return e.find("cannot open shared object file") != std::string::npos ||
         e.find("No such file") != std::string::npos || e.find("not found") != std::string::npos;
}

std::optional<Version> LibVersion(const LibInfo& l) {
  if (!l.loaded || !l.version) return std::nullopt;
  return Version::Parse(*l.version);
}

// "libcudart.so.13 13.0 (/usr/local/cuda/lib64/libcudart.so.13)".
std::string DescribeLoaded(const LibInfo& l) {
  std::string s = l.soname;
  if (l.version) s += " " + *l.version;
  if (!l.resolved_path.empty()) s += " (" + l.resolved_path + ")";
  if (!l.version && !l.version_error.empty()) s += "; version unreadable: " + l.version_error;
  return s;
}

std::string DescribeMissing(const LibInfo& l) {
  std::string name = l.soname.empty() ? "library" : l.soname;
  if (l.error.empty()) return name + " not loaded";
  // "not found" only when the missing file is the library itself, not one of its dependencies.
  std::size_t p = l.error.find(": cannot open shared object file");
  bool self = p != std::string::npos && p >= name.size() &&
              l.error.compare(p - name.size(), name.size(), name) == 0;
  return (self ? name + " not found: " : name + " failed to load: ") + l.error;
}

std::string MiB(std::uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

// The soname's major ("libcudart.so.13" -> 13).
std::optional<int> SonameMajor(const std::string& soname) {
  std::size_t p = soname.rfind(".so.");
  if (p == std::string::npos) return std::nullopt;
  std::optional<Version> v = Version::Parse(soname.substr(p + 4));
  if (!v) return std::nullopt;
  return v->major();
}

// ---------------------------------------------------------------------------------------------

void Evaluator::CheckEnvironment() {
  std::optional<std::string> vis = s_.Env("NVIDIA_VISIBLE_DEVICES");
  const std::string title = "NVIDIA_VISIBLE_DEVICES";
  if (!vis) {
    Pass("env.visible_devices", title, "unset (GPUs not restricted by the NVIDIA runtime)");
  } else {
    std::string v = Lower(common::Trim(*vis));
    if (v.empty() || v == "void") {
      Integrity("env.visible_devices", title, "NVIDIA_VISIBLE_DEVICES=\"" + *vis + "\"",
                "all, device indexes or UUIDs",
                "the NVIDIA container runtime was told to inject no GPU: the pod does not request "
                "nvidia.com/gpu (or the image/pod sets NVIDIA_VISIBLE_DEVICES=void); request a "
                "GPU in the pod's resource limits");
    } else if (v == "none") {
      Integrity("env.visible_devices", title, "NVIDIA_VISIBLE_DEVICES=none",
                "all, device indexes or UUIDs",
                "'none' mounts the driver libraries but no GPU device: request nvidia.com/gpu and "
                "remove NVIDIA_VISIBLE_DEVICES=none from the image or pod");
    } else {
      Pass("env.visible_devices", title, "NVIDIA_VISIBLE_DEVICES=" + *vis);
    }
  }

  if (std::optional<std::string> cvd = s_.Env("CUDA_VISIBLE_DEVICES")) {
    std::string v(common::Trim(*cvd));
    if (v.empty() || v == "-1" || v == "NoDevFiles") {
      Integrity("env.cuda_visible_devices", "CUDA_VISIBLE_DEVICES",
                "CUDA_VISIBLE_DEVICES=\"" + *cvd + "\"", "unset, or device indexes/UUIDs",
                "CUDA_VISIBLE_DEVICES hides every GPU from CUDA in this process: unset it");
    } else {
      Pass("env.cuda_visible_devices", "CUDA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES=" + v);
    }
  }

  const auto& need = m_.container.driver_capabilities;
  if (!need.empty()) {
    std::optional<std::string> caps = s_.Env("NVIDIA_DRIVER_CAPABILITIES");
    std::vector<std::string> have;
    std::string found;
    if (!caps || common::Trim(*caps).empty()) {
      have = {"utility", "compute"};
      found = caps ? "empty (toolkit default utility,compute)"
                   : "unset (toolkit default "
                     "utility,compute)";
    } else {
      have = SplitList(*caps);
      found = "NVIDIA_DRIVER_CAPABILITIES=" + *caps;
    }
    bool all = std::find(have.begin(), have.end(), "all") != have.end();
    std::vector<std::string> missing;
    for (const std::string& c : need) {
      if (c == "all" ? !all : !all && std::find(have.begin(), have.end(), c) == have.end()) {
        missing.push_back(c);
      }
    }
    if (missing.empty()) {
      Pass("env.driver_capabilities", "NVIDIA_DRIVER_CAPABILITIES", found,
           "includes " + common::Join(need, ", "));
    } else {
      bool compute = std::find(missing.begin(), missing.end(), "compute") != missing.end();
      std::string cause =
          compute ? "without 'compute' the NVIDIA container runtime does not mount libcuda.so, "
                    "so CUDA cannot start"
                  : "without '" + missing.front() +
                        "' the NVIDIA container runtime does not mount the matching driver "
                        "libraries (utility = NVML and nvidia-smi)";
      cause += "; set NVIDIA_DRIVER_CAPABILITIES=" + common::Join(need, ",") +
               " (or remove it to get the default utility,compute)";
      Integrity("env.driver_capabilities", "NVIDIA_DRIVER_CAPABILITIES",
                found + " (missing " + common::Join(missing, ", ") + ")",
                "includes " + common::Join(need, ", "), cause);
    }
  }
}

void Evaluator::CheckDeviceNodes() {
  if (!m_.container.device_nodes) return;
  const auto& d = s_.devices;
  std::vector<std::string> missing;
  if (!d.nvidiactl.present) missing.push_back("/dev/nvidiactl");
  if (!d.nvidia_uvm.present) missing.push_back("/dev/nvidia-uvm");
  int gpus = 0;
  for (const auto& g : d.gpus) gpus += g.present ? 1 : 0;
  int want = std::max(1, m_.devices.count);
  std::string required =
      "/dev/nvidiactl, /dev/nvidia-uvm and at least " + std::to_string(want) + " /dev/nvidiaN";
  std::string where = d.root.empty() || d.root == "/" ? "" : " under root " + d.root;
  if (missing.empty() && gpus >= want) {
    Pass("devices.nodes", "GPU device nodes",
         "/dev/nvidiactl, /dev/nvidia-uvm, " + std::to_string(gpus) + " /dev/nvidiaN" + where,
         required);
  } else {
    std::string found = missing.empty() ? "" : "missing " + common::Join(missing, ", ") + "; ";
    found += std::to_string(gpus) + " /dev/nvidiaN node(s)" + where;
    std::string cause =
        s_.host.container
            ? "the GPU devices were not passed into this container: run it with the NVIDIA "
              "container runtime (docker --gpus / runtimeClassName: nvidia) and request "
              "nvidia.com/gpu"
            : "the NVIDIA kernel module is not loaded or has created no device nodes: install "
              "the driver and load it (nvidia, nvidia-uvm; nvidia-modprobe creates the nodes)";
    Integrity("devices.nodes", "GPU device nodes", found, required, cause);
  }
  if (d.proc_driver_version.present) {
    Pass("driver.kernel_module", "NVIDIA kernel module (/proc/driver/nvidia/version)",
         d.kernel_module_version ? *d.kernel_module_version : d.proc_driver_version_text);
  } else {
    Warn("driver.kernel_module", "NVIDIA kernel module (/proc/driver/nvidia/version)",
         "/proc/driver/nvidia/version absent" + where, "present",
         "the NVIDIA kernel module is not loaded, or /proc/driver/nvidia is not exposed to this "
         "container");
  }
}

void Evaluator::CheckDriver() {
  CheckDriverLibrary();
  CheckNvml();
  CheckCuInit();
}

void Evaluator::CheckDriverLibrary() {
  const LibInfo& cu = s_.cuda_driver.library;
  const std::string title = "NVIDIA driver library (libcuda.so.1)";
  bool stub = cu.loaded && (cu.resolved_path.find("/stubs/") != std::string::npos ||
                            (s_.cuda_driver.init && s_.cuda_driver.init->code == 34));
  if (!cu.loaded) {
    std::string cause =
        IsNotFoundError(cu.error) || cu.error.empty()
            ? "libcuda.so.1 not found — the NVIDIA driver is not mounted into this container: "
              "check the NVIDIA container toolkit and that the pod requests nvidia.com/gpu (on a "
              "bare host: install the NVIDIA driver)"
            : "libcuda.so.1 exists but cannot be loaded: " + cu.error;
    Integrity("driver.library", title, DescribeMissing(cu), "libcuda.so.1 loadable", cause);
  } else if (stub) {
    Integrity("driver.library", title, "stub library " + DescribeLoaded(cu),
              "the real driver's libcuda.so.1",
              "libcuda.so.1 is the CUDA toolkit's stub (meant only for linking; it has no driver "
              "behind it): the real driver is not mounted, and a stubs directory is on the library "
              "path — remove /usr/local/cuda/lib64/stubs from LD_LIBRARY_PATH/--lib-path and "
              "mount the driver");
  } else {
    Pass("driver.library", title, DescribeLoaded(cu));
  }
}

void Evaluator::CheckNvml() {
  // NVML: needed for the driver version, memory and MIG; its init errors name driver problems
  // more precisely than cuInit does.
  const auto& nv = s_.nvml;
  const std::string ntitle = "NVML (libnvidia-ml.so.1)";
  if (!nv.library.loaded) {
    Warn("driver.nvml", ntitle, DescribeMissing(nv.library), "libnvidia-ml.so.1 loadable",
         "NVML is missing, so driver version, memory and MIG cannot be read: the driver is not "
         "mounted, or NVIDIA_DRIVER_CAPABILITIES lacks 'utility'");
  } else if (nv.init && nv.init->code != 0) {
    std::string found =
        "nvmlInit failed: " + nv.init->name + " (" + std::to_string(nv.init->code) + ")";
    if (nv.init->code == 18) {
      Integrity("driver.nvml", ntitle, found, "nvmlInit succeeds",
                "driver/library version mismatch: the user-space driver libraries and the kernel "
                "module come from different driver versions — reboot after a driver upgrade, and "
                "never bake driver libraries into the image");
    } else if (nv.init->code == 9) {
      Integrity("driver.nvml", ntitle, found, "nvmlInit succeeds",
                "the NVIDIA kernel driver is not loaded on this host (check dmesg, modprobe "
                "nvidia)");
    } else {
      Warn("driver.nvml", ntitle, found, "nvmlInit succeeds",
           "NVML cannot initialise: check device permissions and dmesg");
    }
  } else {
    std::string f = DescribeLoaded(nv.library);
    if (nv.driver_version) f += ", driver " + *nv.driver_version;
    Pass("driver.nvml", ntitle, f);
  }
}

void Evaluator::CheckCuInit() {
  if (!s_.cuda_driver.library.loaded) return;  // impossible; driver.library names the cause
  const std::string ititle = "CUDA driver initialisation (cuInit)";
  if (!s_.cuda_driver.init) {
    Warn("driver.init", ititle, "cuInit not called (probe ran without initialisation)",
         "CUDA_SUCCESS", "take the snapshot without skipping initialisation");
    return;
  }
  const probe::ApiResult& r = *s_.cuda_driver.init;
  if (r.code == 0) {
    Pass("driver.init", ititle,
         "CUDA_SUCCESS, " + std::to_string(s_.cuda_driver.device_count.value_or(0)) + " device(s)");
    return;
  }
  std::string found = "cuInit failed: " + r.name + " (" + std::to_string(r.code) + ")";
  Integrity("driver.init", ititle, found, "CUDA_SUCCESS", CuInitCause(r.code));
}

std::optional<Version> Evaluator::DriverVersion() const {
  if (s_.nvml.driver_version) {
    if (auto v = Version::Parse(*s_.nvml.driver_version)) return v;
  }
  if (s_.devices.kernel_module_version) return Version::Parse(*s_.devices.kernel_module_version);
  return std::nullopt;
}

std::optional<Version> Evaluator::DriverCudaVersion() const {
  if (s_.nvml.cuda_driver_version) {
    if (auto v = Version::Parse(*s_.nvml.cuda_driver_version)) return v;
  }
  if (auto v = LibVersion(s_.cuda_driver.library)) return v;
  if (s_.cuda_runtime.driver_version_raw.value_or(0) > 0 && s_.cuda_runtime.driver_version) {
    return Version::Parse(*s_.cuda_runtime.driver_version);
  }
  return std::nullopt;
}

int Evaluator::RuntimeCudaMajor() const {
  if (auto v = LibVersion(s_.cuda_runtime.library)) return v->major();
  for (const auto& p : s_.onnxruntime.provider_libraries) {
    if (p.cuda_major) return *p.cuda_major;
  }
  if (m_.onnxruntime.provider_cuda_major) return *m_.onnxruntime.provider_cuda_major;
  if (m_.cuda.runtime) return m_.cuda.runtime->SingleMajor().value_or(0);
  return 0;
}

void Evaluator::CheckDriverVersions() {
  std::optional<Version> drv = DriverVersion();
  const std::string title = "NVIDIA driver version";
  if (m_.driver.branch || m_.driver.minimum) {
    std::string required;
    if (m_.driver.branch) required = "branch R" + std::to_string(*m_.driver.branch);
    if (m_.driver.minimum) {
      required += (required.empty() ? ">= " : ", >= ") + m_.driver.minimum->Display();
    }
    if (!drv) {
      if (s_.cuda_driver.library.loaded) {
        Warn("driver.version", title, "unknown (NVML and /proc/driver/nvidia/version unreadable)",
             required, "the driver version could not be read, so the pin is unverified");
      }
    } else if (m_.driver.branch && drv->major() != *m_.driver.branch) {
      Drift("driver.version", title, "driver " + drv->Display(), required,
            "the node runs a driver from another branch than the matrix pins: move the node "
            "pool to the pinned branch or update the matrix");
    } else if (m_.driver.minimum && drv->Compare(*m_.driver.minimum) < 0) {
      Drift("driver.version", title, "driver " + drv->Display(), required,
            "the host driver is older than the matrix minimum: upgrade the driver");
    } else {
      Pass("driver.version", title, "driver " + drv->Display(), required);
    }
  }

  int cuda_major = RuntimeCudaMajor();
  int floor = DriverFloorForCudaMajor(cuda_major);
  if (drv && floor > 0) {
    std::string required =
        "CUDA " + std::to_string(cuda_major) + ".x needs driver >= " + std::to_string(floor);
    if (drv->major() < floor) {
      Integrity("driver.cuda_floor", "driver floor for the CUDA major", "driver " + drv->Display(),
                required,
                "the host driver is too old for CUDA " + std::to_string(cuda_major) +
                    ": upgrade it to >= " + std::to_string(floor) +
                    " or use an image built for an older CUDA major");
    } else {
      Pass("driver.cuda_floor", "driver floor for the CUDA major", "driver " + drv->Display(),
           required);
    }
  }

  std::optional<Version> dcuda = DriverCudaVersion();
  std::optional<Version> rt = LibVersion(s_.cuda_runtime.library);
  if (dcuda && rt) {
    const std::string t = "driver CUDA version >= runtime CUDA version";
    std::string found =
        "driver supports CUDA " + dcuda->ToString() + ", runtime is CUDA " + rt->ToString();
    std::string required = "driver CUDA >= " + rt->ToString();
    if (dcuda->major() < rt->major()) {
      int fl = DriverFloorForCudaMajor(rt->major());
      Integrity("driver.cuda_version", t, found, required,
                "CUDA driver version is insufficient for CUDA runtime version: the host driver "
                "only supports CUDA " +
                    dcuda->ToString() + " — upgrade it" +
                    (fl ? " to >= " + std::to_string(fl) : std::string()) +
                    ", or use an image built for CUDA " + std::to_string(dcuda->major()));
    } else if (Version{{dcuda->major(), dcuda->minor()}, ""}.Compare(
                   Version{{rt->major(), rt->minor()}, ""}) < 0) {
      Warn("driver.cuda_version", t, found, required,
           "works through CUDA minor-version compatibility, but kernels that need PTX JIT "
           "compilation will fail: upgrade the driver to the runtime's minor");
    } else {
      Pass("driver.cuda_version", t, found, required);
    }
  }
}

void Evaluator::CheckCudaLibraries() {
  CheckCudaVersions();
  CheckCudnnPairing();
  CheckTensorRt();
}

void Evaluator::CheckCudaVersions() {
  struct Lib {
    const char* id;
    const char* title;
    const LibInfo* info;
    const std::optional<VersionSpec>* spec;
    const char* what;  // plain name for causes
  };
  const Lib libs[] = {
      {"cuda.runtime", "CUDA runtime (libcudart)", &s_.cuda_runtime.library, &m_.cuda.runtime,
       "CUDA runtime"},
      {"cuda.cublas", "cuBLAS", &s_.cublas, &m_.cuda.cublas, "cuBLAS"},
      {"cudnn", "cuDNN", &s_.cudnn.library, &m_.cudnn, "cuDNN"},
  };
  for (const Lib& l : libs) {
    std::string required = *l.spec ? "version " + (*l.spec)->text() : "loadable";
    if (!l.info->loaded) {
      Integrity(l.id, l.title, DescribeMissing(*l.info), required,
                std::string(l.what) +
                    " is not installed in this image or not on the library "
                    "path: install it, or add its directory with --lib-path / LD_LIBRARY_PATH");
      continue;
    }
    std::optional<Version> v = LibVersion(*l.info);
    if (*l.spec && !v) {
      Warn(l.id, l.title, DescribeLoaded(*l.info), required,
           "the version could not be read, so the pin is unverified");
    } else if (*l.spec && !(*l.spec)->Matches(*v)) {
      Drift(l.id, l.title, DescribeLoaded(*l.info), required,
            std::string(l.what) + " " + v->ToString() +
                " differs from the matrix: rebuild the image with the pinned version or update "
                "the matrix");
    } else {
      Pass(l.id, l.title, DescribeLoaded(*l.info), *l.spec ? required : "");
    }
  }
}

// cuDNN: the providers link one exact major (libcudnn.so.9); 8 and 9 are not interchangeable.
void Evaluator::CheckCudnnPairing() {
  if (s_.cudnn.library.loaded) {
    std::optional<int> have = LibVersion(s_.cudnn.library)
                                  ? std::optional<int>(LibVersion(s_.cudnn.library)->major())
                                  : SonameMajor(s_.cudnn.library.soname);
    for (const auto& p : s_.onnxruntime.provider_libraries) {
      if (!p.cudnn_major || !have) continue;
      std::string t = "cuDNN major needed by " + p.provider;
      std::string found = "cuDNN " + std::to_string(*have) + " loaded; " + p.provider +
                          " links libcudnn.so." + std::to_string(*p.cudnn_major);
      if (*have != *p.cudnn_major) {
        Integrity("cudnn.provider_major." + p.provider, t, found,
                  "cuDNN " + std::to_string(*p.cudnn_major),
                  "the image's cuDNN major differs from the one ONNX Runtime's provider was built "
                  "for (cuDNN majors are not interchangeable): install cuDNN " +
                      std::to_string(*p.cudnn_major));
      } else {
        Pass("cudnn.provider_major." + p.provider, t, found);
      }
    }
    std::vector<std::string> missing;
    for (const auto& sub : s_.cudnn.sub_libraries) {
      if (!sub.loaded) missing.push_back(sub.soname);
    }
    if (!missing.empty()) {
      Integrity("cudnn.sub_libraries", "cuDNN sub-libraries",
                "missing " + common::Join(missing, ", "), "every libcudnn_*.so present",
                "cuDNN loads its sub-libraries lazily, so the first convolution would fail at run "
                "time: install the complete cuDNN package");
    } else if (!s_.cudnn.sub_libraries.empty()) {
      Pass("cudnn.sub_libraries", "cuDNN sub-libraries",
           std::to_string(s_.cudnn.sub_libraries.size()) + " loaded");
    }
  }
}

// TensorRT: required when its provider is required or its version is pinned.
void Evaluator::CheckTensorRt() {
  const auto& provs = m_.onnxruntime.providers;
  bool trt_needed =
      m_.tensorrt.has_value() ||
      std::find(provs.begin(), provs.end(), "TensorrtExecutionProvider") != provs.end();
  const LibInfo& trt = s_.tensorrt.library;
  std::string required = m_.tensorrt ? "version " + m_.tensorrt->text() : "loadable";
  if (!trt.loaded) {
    if (trt_needed) {
      Integrity("tensorrt", "TensorRT (libnvinfer)", DescribeMissing(trt), required,
                "TensorRT is not installed in this image or not on the library path: install "
                "TensorRT " +
                    (m_.tensorrt ? m_.tensorrt->text() : std::string("10")) +
                    " or drop TensorrtExecutionProvider from the matrix");
    } else {
      Warn("tensorrt", "TensorRT (libnvinfer)", DescribeMissing(trt), "optional",
           "the TensorRT provider will not be available");
    }
  } else {
    std::optional<Version> v = LibVersion(trt);
    if (m_.tensorrt && v && !m_.tensorrt->Matches(*v)) {
      Drift("tensorrt", "TensorRT (libnvinfer)", DescribeLoaded(trt), required,
            "TensorRT " + v->ToString() +
                " differs from the matrix; serialized engines are tied to the exact TensorRT "
                "version, so cached engines would be rebuilt or rejected: pin the image to the "
                "matrix version");
    } else if (m_.tensorrt && !v) {
      Warn("tensorrt", "TensorRT (libnvinfer)", DescribeLoaded(trt), required,
           "the version could not be read, so the pin is unverified");
    } else {
      Pass("tensorrt", "TensorRT (libnvinfer)", DescribeLoaded(trt), m_.tensorrt ? required : "");
    }
  }
}

void Evaluator::CheckDevices() {
  CheckDeviceCount();
  const std::vector<DeviceFact> devs = DeviceFacts();
  CheckComputeCapability(devs);
  CheckDeviceMemory(devs);
  CheckMig();
}

void Evaluator::CheckDeviceCount() {
  const auto& dv = m_.devices;
  int usable = 0;
  std::string why;
  if (CudaInitOk()) {
    usable = s_.cuda_driver.device_count.value_or(0);
  } else if (!s_.cuda_driver.init && s_.cuda_driver.library.loaded) {
    usable = s_.nvml.device_count.value_or(0);  // snapshot taken without cuInit
  } else if (!s_.cuda_driver.library.loaded) {
    why = " (libcuda.so.1 not loaded)";
  } else {
    why = " (cuInit failed: " + s_.cuda_driver.init->name + ")";
  }
  std::string found = std::to_string(usable) + " usable CUDA device(s)" + why;
  std::string required = ">= " + std::to_string(dv.count);
  if (usable < dv.count) {
    Integrity("devices.count", "CUDA devices", found, required,
              usable == 0 && !why.empty()
                  ? "CUDA cannot reach any GPU; the checks above name why"
                  : "fewer GPUs are visible than the matrix requires: request more "
                    "nvidia.com/gpu or schedule on a larger node");
  } else {
    Pass("devices.count", "CUDA devices", found, required);
  }
}

// Per-device facts: libcuda's view when it initialised, else NVML's.
std::vector<Evaluator::DeviceFact> Evaluator::DeviceFacts() const {
  std::vector<DeviceFact> devs;
  if (!s_.cuda_driver.devices.empty()) {
    for (const auto& d : s_.cuda_driver.devices) {
      devs.push_back({d.index, d.name.value_or("?"), d.compute_capability, d.memory_total_bytes});
    }
  } else {
    for (const auto& d : s_.nvml.devices) {
      devs.push_back({d.index, d.name.value_or("?"), d.compute_capability, d.memory_total_bytes});
    }
  }
  return devs;
}

void Evaluator::CheckComputeCapability(const std::vector<DeviceFact>& devs) {
  const auto& dv = m_.devices;
  if (dv.min_compute_capability && !devs.empty()) {
    std::vector<std::string> low, seen;
    for (const DeviceFact& d : devs) {
      std::optional<Version> cc = d.cc ? Version::Parse(*d.cc) : std::nullopt;
      std::string desc = "device " + std::to_string(d.index) + " (" + d.name + ") " +
                         (d.cc ? *d.cc : std::string("unknown"));
      seen.push_back(desc);
      if (!cc || cc->Compare(*dv.min_compute_capability) < 0) low.push_back(desc);
    }
    std::string required = ">= " + dv.min_compute_capability->Display();
    if (!low.empty()) {
      Integrity("devices.compute_capability", "compute capability", common::Join(low, ", "),
                required,
                "this GPU is older than the matrix allows (the CUDA/TensorRT builds in use do "
                "not ship kernels for it): schedule on a newer GPU");
    } else {
      Pass("devices.compute_capability", "compute capability", common::Join(seen, ", "), required);
    }
  }
}

void Evaluator::CheckDeviceMemory(const std::vector<DeviceFact>& devs) {
  const auto& dv = m_.devices;
  if (dv.min_memory_mib && !devs.empty()) {
    std::vector<std::string> low, seen;
    for (const DeviceFact& d : devs) {
      std::string desc = "device " + std::to_string(d.index) + " " +
                         (d.mem ? MiB(*d.mem) : std::string("unknown"));
      seen.push_back(desc);
      if (!d.mem || static_cast<std::int64_t>(*d.mem >> 20) < *dv.min_memory_mib) {
        low.push_back(desc);
      }
    }
    std::string required = ">= " + std::to_string(*dv.min_memory_mib) + " MiB per device";
    if (!low.empty()) {
      Integrity("devices.memory", "device memory", common::Join(low, ", "), required,
                "the GPU has less memory than the models need: schedule on a larger GPU (or a "
                "larger MIG profile)");
    } else {
      Pass("devices.memory", "device memory", common::Join(seen, ", "), required);
    }
  }
}

void Evaluator::CheckMig() {
  const auto& dv = m_.devices;
  if (dv.mig != MigExpectation::kAny && !s_.nvml.devices.empty()) {
    bool want = dv.mig == MigExpectation::kEnabled;
    std::vector<std::string> bad, seen;
    for (const auto& d : s_.nvml.devices) {
      bool on = d.mig_enabled.value_or(false);
      std::string desc = "device " + std::to_string(d.index) + " MIG " +
                         (d.mig_enabled ? (on ? "enabled" : "disabled") : "not supported");
      seen.push_back(desc);
      if (on != want) bad.push_back(desc);
    }
    std::string required = "MIG " + std::string(MigExpectationName(dv.mig));
    if (!bad.empty()) {
      Integrity("devices.mig", "MIG mode", common::Join(bad, ", "), required,
                want ? "the matrix expects MIG partitions but the GPU is not in MIG mode: enable "
                       "MIG and create instances (nvidia-smi -mig 1), or request a "
                       "nvidia.com/mig-* resource"
                     : "the GPU is in MIG mode, so a process sees only one slice: disable MIG or "
                       "change the matrix to expect it");
    } else {
      Pass("devices.mig", "MIG mode", common::Join(seen, ", "), required);
    }
  }
}

void Evaluator::Finish() {
  bool integrity = false, drift = false, degraded = false;
  for (const Check& c : report_.checks) {
    if (c.result == CheckResult::kFail && c.kind == FailureKind::kIntegrity) integrity = true;
    if (c.result == CheckResult::kFail && c.kind == FailureKind::kDrift) drift = true;
    if (c.result == CheckResult::kWarn && c.kind == FailureKind::kIntegrity) degraded = true;
  }
  report_.verdict = integrity  ? Verdict::kNotAccelerated
                    : drift    ? Verdict::kDrift
                    : degraded ? Verdict::kDegraded
                               : Verdict::kAccelerated;
  report_.exit_code = ExitCodeForVerdict(report_.verdict);
}

AdmissionReport Evaluator::Run() {
  report_.matrix_name = m_.name;
  report_.matrix_source = m_.source;
  report_.matrix_fingerprint = m_.Fingerprint();
  CheckEnvironment();
  CheckDeviceNodes();
  CheckDriver();
  CheckDriverVersions();
  CheckCudaLibraries();
  CheckOrt();
  CheckDevices();
  Finish();
  return std::move(report_);
}

}  // namespace internal

// ---------------------------------------------------------------------------------------------

std::string_view CheckResultName(CheckResult r) {
  switch (r) {
    case CheckResult::kWarn:
      return "WARN";
    case CheckResult::kFail:
      return "FAIL";
    case CheckResult::kPass:
      break;
  }
  return "PASS";
}

std::string_view FailureKindName(FailureKind k) {
  switch (k) {
    case FailureKind::kIntegrity:
      return "integrity";
    case FailureKind::kDrift:
      return "drift";
    case FailureKind::kNone:
      break;
  }
  return "none";
}

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kDegraded:
      return "DEGRADED (dev policy: CPU allowed)";
    case Verdict::kDrift:
      return "VERSION DRIFT";
    case Verdict::kNotAccelerated:
      return "NOT ACCELERATED";
    case Verdict::kAccelerated:
      break;
  }
  return "ACCELERATED";
}

int DriverFloorForCudaMajor(int cuda_major) {
  switch (cuda_major) {
    case 13:
      return 580;
    case 12:
      return 525;
    case 11:
      return 450;
    default:
      return 0;
  }
}

std::string ExplainLoadError(std::string_view loader_error) {
  std::string e(loader_error);
  if (e.empty()) return "";
  // The dynamic linker names the first dependency it could not find:
  // "<needed>: cannot open shared object file: No such file or directory".
  std::size_t colon = e.find(": cannot open shared object");
  if (colon != std::string::npos) {
    std::size_t begin = colon;
    while (begin > 0) {
      char c = e[begin - 1];
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '+' ||
            c == '-')) {
        break;
      }
      --begin;
    }
    std::string lib = e.substr(begin, colon - begin);
    std::optional<int> major = SonameMajor(lib);
    std::string ver = major ? " " + std::to_string(*major) : "";
    if (lib.rfind("libcuda.so", 0) == 0) {
      return lib +
             " not found — the NVIDIA driver is not mounted into this container: check the "
             "NVIDIA container toolkit and that the pod requests nvidia.com/gpu";
    }
    if (lib.rfind("libnvidia-ml", 0) == 0) {
      return lib +
             " not found — NVML is not mounted: the driver is missing or "
             "NVIDIA_DRIVER_CAPABILITIES lacks 'utility'";
    }
    if (lib.rfind("libcudnn", 0) == 0) {
      return lib + " not found — cuDNN" + ver +
             " is not installed in this image (or not on the library path)";
    }
    if (lib.rfind("libnvinfer", 0) == 0 || lib.rfind("libnvonnxparser", 0) == 0) {
      return lib + " not found — TensorRT" + ver +
             " is not installed in this image (or not on the library path)";
    }
    if (lib.rfind("libcudart", 0) == 0 || lib.rfind("libcublas", 0) == 0 ||
        lib.rfind("libcurand", 0) == 0 || lib.rfind("libcufft", 0) == 0 ||
        lib.rfind("libnvrtc", 0) == 0 || lib.rfind("libnvJitLink", 0) == 0) {
      std::string cuda = lib.rfind("libcurand", 0) == 0 ? "" : ver;
      return lib + " not found — the CUDA" + cuda +
             " runtime libraries are not installed in this image (or not on the library path: "
             "add their directory with --lib-path or LD_LIBRARY_PATH)";
    }
    if (lib.rfind("libonnxruntime", 0) == 0) {
      return lib +
             " not found — the ONNX Runtime GPU package is incomplete: install "
             "libonnxruntime_providers_shared.so next to the provider libraries";
    }
    return lib + " not found — a dependency of the library is missing from this image";
  }
  if (e.find("undefined symbol") != std::string::npos) {
    return "a dependency exports different symbols than the library was built against: the "
           "CUDA/cuDNN/TensorRT versions in the image do not match the ones this build needs";
  }
  if (e.find("version `") != std::string::npos && e.find("not found") != std::string::npos) {
    return "the system C/C++ runtime (glibc/libstdc++) is older than the library needs: use a "
           "newer base image";
  }
  if (e.find("wrong ELF class") != std::string::npos ||
      e.find("invalid ELF header") != std::string::npos) {
    return "the file is not a library for this architecture (wrong or corrupt download)";
  }
  if (e.find("cannot open shared object") != std::string::npos ||
      e.find("No such file") != std::string::npos) {
    return "the library file does not exist on the search path";
  }
  return "";
}

AdmissionReport Admit(const probe::Snapshot& snapshot, const Matrix& matrix) {
  return Evaluator(snapshot, matrix).Run();
}

std::vector<const Check*> AdmissionReport::Causes() const {
  // Integrity problems first (they decide the verdict), then drift; each in check order, which
  // puts root causes (environment, device nodes, driver) before their consequences.
  std::vector<const Check*> out;
  for (const Check& c : checks) {
    if (c.kind == FailureKind::kIntegrity &&
        (c.result == CheckResult::kFail ||
         (verdict == Verdict::kDegraded && c.result == CheckResult::kWarn))) {
      out.push_back(&c);
    }
  }
  for (const Check& c : checks) {
    if (c.kind == FailureKind::kDrift && c.result == CheckResult::kFail) out.push_back(&c);
  }
  return out;
}

const Check* AdmissionReport::Find(std::string_view id) const {
  for (const Check& c : checks) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

Json AdmissionReport::ToJson() const {
  Json checks_json = Json::array();
  for (const Check& c : checks) {
    checks_json.push_back({{"id", c.id},
                           {"title", c.title},
                           {"result", std::string(CheckResultName(c.result))},
                           {"kind", std::string(FailureKindName(c.kind))},
                           {"found", c.found},
                           {"required", c.required},
                           {"cause", c.cause}});
  }
  Json causes = Json::array();
  for (const Check* c : Causes()) causes.push_back(c->id);
  return Json{
      {"verdict", std::string(VerdictName(verdict))},
      {"accelerated", verdict == Verdict::kAccelerated},
      {"exit_code", exit_code},
      {"matrix",
       {{"name", matrix_name}, {"source", matrix_source}, {"fingerprint", matrix_fingerprint}}},
      {"checks", checks_json},
      {"causes", causes}};
}

std::string AdmissionReport::ToText(bool color) const {
  return ChecksText(color) + JudgeNode(*this, {}, std::nullopt)
                                 .ToText(matrix_name.empty() ? matrix_source : matrix_name);
}

std::string AdmissionReport::ChecksText(bool color) const {
  auto paint = [&](CheckResult r) -> std::string {
    std::string name(CheckResultName(r));
    if (!color) return name;
    const char* code = r == CheckResult::kPass ? "32" : r == CheckResult::kWarn ? "33" : "31";
    return std::string("\033[") + code + "m" + name + "\033[0m";
  };
  std::string out;
  for (const Check& c : checks) {
    out += paint(c.result) + "  " + c.id + ": ";
    if (c.result == CheckResult::kPass) {
      out += c.found;
      if (!c.required.empty()) out += " (required " + c.required + ")";
    } else {
      out += "found " + c.found;
      if (!c.required.empty()) out += "; required " + c.required;
      if (!c.cause.empty()) out += " — " + c.cause;
    }
    out += "\n";
  }
  return out;
}

}  // namespace tg::policy
