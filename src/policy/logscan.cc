#include "policy/logscan.h"
#include "common/strings.h"

#include <fmt/format.h>
#include <re2/re2.h>
#include <re2/set.h>
#include <yaml-cpp/eventhandler.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "common/file_handles.h"
#include "common/file_util.h"
#include "policy/logscan_prefilter.h"

namespace tg::policy {
namespace {

using common::Result;
using common::Status;

// needle: '|'-separated lowercase key phrases (documentation; the RE2 set needs no prefilter).
constexpr LogPattern kPatterns[] = {
    {"ort.provider_library_load_failed", "provider-load-failure", "failed to load library",
     R"(failed to load library \S*libonnxruntime_providers_\w+\.so)",
     "ONNX Runtime could not load a GPU provider library (the error after it names the missing "
     "dependency): the session runs on the CPU or fails; run `truegreen doctor` on this node",
     "Failed to load library /opt/ort/gpu/libonnxruntime_providers_cuda.so with error: "
     "libcuda.so.1: cannot open shared object file: No such file or directory",
     "Loaded library /opt/ort/gpu/libonnxruntime_providers_cuda.so"},
    {"ort.create_provider_failed", "provider-load-failure", "failed to create",
     R"(failed to create \w*executionprovider)",
     "ONNX Runtime's Python API could not create a GPU provider and silently continued with the "
     "remaining providers (usually the CPU)",
     "[W:onnxruntime:Default, onnxruntime_pybind_state.cc:1057 CreateExecutionProviderInstance] "
     "Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 12.*",
     "Created CUDAExecutionProvider for device 0"},
    {"ort.provider_not_enabled", "provider-load-failure", "is not enabled in this build",
     R"(execution provider is not enabled in this build)",
     "the ONNX Runtime library is a CPU build: the GPU provider must come from the GPU provider "
     "libraries (plugin EPs) or a GPU build of ONNX Runtime",
     "CUDA execution provider is not enabled in this build.",
     "CUDA execution provider is enabled in this build."},
    {"ort.provider_not_available", "provider-load-failure", "not in available provider names",
     R"(\w+executionprovider'? is not in available provider names)",
     "the requested provider is not part of this ONNX Runtime package (for example the CPU-only "
     "onnxruntime wheel instead of onnxruntime-gpu): the session uses the CPU",
     "UserWarning: Specified provider 'CUDAExecutionProvider' is not in available provider "
     "names.Available providers: 'CPUExecutionProvider'",
     "Available providers: 'TensorrtExecutionProvider', 'CUDAExecutionProvider'"},
    {"ort.cpu_fallback_retry", "cpu-fallback", "back to",
     R"(fall(ing|s)? back to (\[?'?(the )?cpu|\[[^\]]*cpuexecutionprovider))",
     "ONNX Runtime gave up on the GPU providers and retried the whole session on the CPU",
     "EP Error when using ['CUDAExecutionProvider'] Falling back to ['CPUExecutionProvider'] and "
     "retrying.",
     "Rolling back to the previous model version"},
    {"ort.nodes_not_assigned", "node-assignment", "not assigned to the preferred execution",
     R"(nodes were not assigned to the preferred execution providers)",
     "some graph nodes run on the CPU instead of the GPU provider (shape ops are expected; "
     "compute-heavy ops are not): check placement with `truegreen run --model MODEL.onnx`",
     "[W:onnxruntime:, session_state.cc:1280 VerifyEachNodeIsAssignedToAnEp] Some nodes were not "
     "assigned to the preferred execution providers which may or may not have an negative impact "
     "on performance.",
     "All nodes were placed on the preferred execution providers"},
    {"ort.nodes_placed_on_cpu", "node-assignment", "placed on [cpuexecutionprovider]",
     R"((all nodes( have been)?|node\(s\)) placed on \[cpuexecutionprovider\])",
     "the verbose placement log shows nodes on the CPU provider",
     " Node(s) placed on [CPUExecutionProvider]. Number of nodes: 12",
     " Node(s) placed on [CUDAExecutionProvider]. Number of nodes: 412"},
    {"ort.memcpy_added", "memcpy", "memcpy nodes are added",
     R"([1-9][0-9]* memcpy nodes are added to the graph)",
     "tensors are copied between CPU and GPU inside the graph because some nodes run on the CPU: "
     "extra transfers on every run (and CUDA graphs become impossible)",
     "[W:onnxruntime:, transformer_memcpy.cc:83 ApplyImpl] 2 Memcpy nodes are added to the graph "
     "main_graph for CUDAExecutionProvider. It might have negative impact on performance",
     "0 Memcpy nodes are added to the graph main_graph for CUDAExecutionProvider"},
    {"ort.kernel_not_found", "cpu-fallback", "kernel not found in registries",
     R"(\w+ kernel not found in registries for op type)",
     "the GPU provider has no kernel for this operator, so the node runs on the CPU",
     "CUDA kernel not found in registries for Op type: NonMaxSuppression node name: nms_0",
     "CUDA kernel registered for Op type: Conv"},
    {"ort.force_cpu_fallback", "cpu-fallback", "fallback to cpu execution",
     R"(force fallback to cpu execution for node)",
     "ONNX Runtime moved a node to the CPU (it judged the CPU faster than a device round trip)",
     "Force fallback to CPU execution for node: Resize_12 because the CPU execution path is "
     "deemed faster than overhead involved with execution on other EPs",
     "No fallback to CPU execution was needed for node: Resize_12"},
    {"ort.cpu_fallback_disabled", "cpu-fallback", "fallback to cpu ep has been explicitly disabled",
     R"(fallback to cpu ep has been explicitly disabled)",
     "session creation failed because nodes would land on the CPU and "
     "session.disable_cpu_ep_fallback=1 forbids it",
     "This session contains graph nodes that are assigned to the default CPU EP, but fallback to "
     "CPU EP has been explicitly disabled by the user.",
     "session.disable_cpu_ep_fallback is 0: fallback to CPU EP is allowed"},
    {"trt.deserialize_failed", "tensorrt-engine", "deserializ",
     R"(((fail\w* to|could not|couldn't|unable to|cannot) deserializ|deserializ\w*[^.]{0,80}(fail|error)))",
     "a cached TensorRT engine could not be loaded: it will be rebuilt (minutes of startup) or "
     "the TensorRT provider fails",
     "[TensorRT EP] Failed to deserialize engine from cache: /cache/TRTKernel_graph_0.engine",
     "[TensorRT EP] Deserialized engine from cache: /cache/TRTKernel_graph_0.engine"},
    {"trt.plan_incompatible", "tensorrt-version-mismatch", "engine plan file",
     R"(engine plan file is (not compatible|generated on an incompatible))",
     "the cached TensorRT engine was built by another TensorRT version or GPU: engines are tied "
     "to both; rebuild it (truegreen keys its cache by the matrix fingerprint)",
     "The engine plan file is not compatible with this version of TensorRT, expecting library "
     "version 10.13.0.35 got 10.12.0.36, please rebuild.",
     "The engine plan file was written to /cache/model.engine"},
    {"trt.version_tag", "tensorrt-version-mismatch", "version tag does not match",
     R"(version tag does not match)",
     "the TensorRT engine's version tag differs from the library: built by another TensorRT",
     "Serialization assertion stdVersionRead == kSERIALIZATION_VERSION failed.Version tag does "
     "not match.",
     "Version tag matches the library"},
    {"trt.engine_rebuild", "tensorrt-engine-rebuild", "engine|rebuilt",
     R"((re-?build\w*|regenerat\w*) (the |a )?(new )?(tensorrt |trt )?engine|engine (cache )?(is |was )?(outdated|stale|invalid)|(will be|is being|has to be|must be) re-?built)",
     "the TensorRT engine is being rebuilt at startup (slow first request): the cache is missing, "
     "stale or was built for other shapes/versions",
     "[TensorRT EP] Engine cache is outdated for TRTKernel_graph_main_0, rebuilding the engine",
     "[TensorRT EP] Loaded engine from cache for TRTKernel_graph_main_0"},
    {"trt.linked_library_mismatch", "tensorrt-library-mismatch", "was linked against",
     R"(was linked against (cudnn|cublas)[a-z/ ]* [0-9][0-9.]* but loaded)",
     "TensorRT was built against another cuDNN/cuBLAS than the one loaded: tactics may fail or "
     "run slower; install the cuDNN/cuBLAS versions TensorRT names",
     "[TRT] [W] TensorRT was linked against cuBLAS/cuBLAS LT 12.0.2 but loaded cuBLAS/cuBLAS LT "
     "11.10.3",
     "[TRT] [I] TensorRT was linked against cuDNN 9.1.0 and loaded it"},
    {"ort.provider_bridge_error", "provider-load-failure", "provider_bridge_ort",
     R"(\[e:onnxruntime:[^\]]*provider_bridge_ort\.cc)",
     "ONNX Runtime's provider bridge failed to load or initialise a GPU provider library (the "
     "rest of the line names the missing dependency): the session runs without it",
     "[E:onnxruntime:Default, provider_bridge_ort.cc:1848 TryGetProviderInfo_CUDA] "
     "provider_bridge_ort.cc:1539 onnxruntime::ProviderLibrary::Get() [ONNXRuntimeError] : 1 : "
     "FAIL : Failed to load library libonnxruntime_providers_cuda.so",
     "[I:onnxruntime:Default, provider_bridge_ort.cc:1600 Get] Loaded provider library"},
    {"ort.op_fallback_cpu", "cpu-fallback", "fallback to cpu execution provider for op",
     R"(fallback to cpu execution provider for op type: \w+)",
     "an operator has no GPU kernel and runs on the CPU (with copies in and out): check "
     "placement with `truegreen run`",
     "[W:onnxruntime:, fallback_cpu_capability.cc:140 GetCpuPreferredNodes] Fallback to CPU "
     "execution provider for Op type: NonZero node name: /NonZero",
     "Force fallback to CPU execution for node: n1"},
    {"nvml.unknown_error", "device-lost", "failed to initialize nvml",
     R"(failed to initialize nvml: unknown error)",
     "the container lost access to its GPU device nodes (typically after `systemctl "
     "daemon-reload` reset the cgroup device rules): restart the pod; the NVIDIA container "
     "toolkit's systemd-cgroup fix prevents it",
     "Failed to initialize NVML: Unknown Error",
     "Failed to initialize NVML: Driver/library version mismatch"},
    {"cuda.insufficient_driver", "driver-too-old", "insufficient",
     R"(cuda driver version is insufficient for cuda runtime version|cudaerrorinsufficientdriver|cuda_error_insufficient_driver)",
     "the host NVIDIA driver is older than the CUDA runtime in the image: upgrade the driver "
     "(CUDA 13 needs >= 580, 12 needs >= 525) or use an image built for an older CUDA",
     "CUDA failure 35: CUDA driver version is insufficient for CUDA runtime version ; GPU=0",
     "CUDA driver version is sufficient for CUDA runtime version 13.0"},
    {"nvml.driver_library_mismatch", "driver-library-mismatch", "mismatch",
     R"(driver/library version mismatch|nvml_error_lib_rm_version_mismatch|cuda_error_system_driver_mismatch)",
     "the user-space driver libraries and the kernel module are from different driver versions: "
     "reboot after a driver upgrade; never bake driver libraries into the image",
     "Failed to initialize NVML: Driver/library version mismatch",
     "NVML library version: 580.65.06"},
    {"cuda.driver_combination", "driver-library-mismatch", "unsupported display driver",
     R"(system has unsupported display driver / cuda driver combination)",
     "CUDA error 803: libcuda.so.1 and the kernel module differ (a libcuda from another driver "
     "or a cuda-compat package is on the library path)",
     "CUDA error: system has unsupported display driver / cuda driver combination",
     "display driver and cuda driver versions: 580.65.06"},
    {"cuda.compat_unsupported", "driver-library-mismatch",
     "forward compatibility|compat_not_supported",
     R"(forward compatibility was attempted on non supported hw|cuda_error_compat_not_supported_on_device)",
     "CUDA error 804: the forward-compatibility package (cuda-compat) only works on data-center "
     "GPUs: remove it or upgrade the host driver",
     "CUDA error: forward compatibility was attempted on non supported HW",
     "forward compatibility is supported on this data-center GPU"},
    {"cuda.no_device", "no-device", "cuda-capable device|no_device|nodevice",
     R"(no cuda-capable device is detected|cuda_error_no_device|cudaerrornodevice)",
     "CUDA sees no GPU: the container did not receive one (NVIDIA_VISIBLE_DEVICES, "
     "nvidia.com/gpu request) or CUDA_VISIBLE_DEVICES hides it",
     "RuntimeError: CUDA error: no CUDA-capable device is detected", "Found 1 CUDA-capable device"},
    {"cuda.stub_library", "no-device", "stub",
     R"(cuda_error_stub_library|cuda driver is a stub library)",
     "the CUDA toolkit's stub libcuda was loaded instead of the real driver: the driver is not "
     "mounted and a stubs directory is on the library path",
     "cuInit failed: CUDA_ERROR_STUB_LIBRARY (34)",
     "linking against the stub libraries in /usr/local/cuda/lib64/stubs"},
    {"cudnn.version_mismatch", "cudnn-version-mismatch", "cudnn",
     R"(cudnn_status_version_mismatch|loaded runtime cudnn library:.*but source was compiled with|cudnn[^.]{0,60}version[^.]{0,40}(mismatch|incompatible|not compatible))",
     "the cuDNN in the image is not the one the framework was built for (cuDNN majors are not "
     "interchangeable): install the matching cuDNN",
     "Loaded runtime CuDNN library: 8.9.7 but source was compiled with: 9.1.0.",
     "cuDNN version 9.13.0 loaded"},
    {"lib.gpu_library_missing", "library-missing", "cannot open shared object",
     R"(lib(cuda|cudart|cublas|cublaslt|cudnn\w*|nvinfer\w*|nvonnxparser|curand|cufft|nvrtc|nvjitlink|nvidia-ml|onnxruntime_providers_\w+)\.so(\.[0-9]+)*: cannot open shared object file)",
     "a GPU library is missing from the image or the library path; whatever needed it (usually a "
     "GPU provider) did not load",
     "libcudnn.so.9: cannot open shared object file: No such file or directory",
     "libpng16.so.16: cannot open shared object file: No such file or directory"},
    {"nvml.library_missing", "library-missing", "nvml",
     R"((could not|couldn't|failed to|unable to) load (the )?nvml( shared)? library)",
     "the NVIDIA management library (libnvidia-ml.so.1) is not in the container: the driver "
     "files were not injected (no GPU runtime, no nvidia.com/gpu request) or the host has no "
     "driver",
     "could not load NVML library: libnvidia-ml.so.1: cannot open shared object file",
     "loaded NVML library libnvidia-ml.so.1"},
    {"docker.no_gpu_driver", "no-device", "could not select device driver",
     R"(could not select device driver "[^"]*" with capabilities: \[\[gpu\]\])",
     "Docker was asked for GPUs (--gpus) but has no NVIDIA runtime: install the NVIDIA container "
     "toolkit and run `nvidia-ctk runtime configure --runtime=docker`",
     "docker: Error response from daemon: could not select device driver \"\" with "
     "capabilities: [[gpu]].",
     "could not select device driver \"nvidia\" with capabilities: [[compute]] (retrying)"},
    {"container.cuda_requirement", "driver-too-old", "unsatisfied condition: cuda",
     R"(requirement error: unsatisfied condition: cuda[ ]?>=[ ]?[0-9])",
     "the NVIDIA container runtime refused to start the container: the image requires a newer "
     "CUDA than the host driver supports (NVIDIA_REQUIRE_CUDA); upgrade the driver or use an "
     "image built for an older CUDA",
     "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, please update "
     "your driver to a newer version, or use an earlier cuda container",
     "nvidia-container-cli: requirement check passed: cuda>=12.8"},
    {"container.no_driver_detected", "no-device", "nvidia driver was not detected",
     R"(nvidia driver was not detected)",
     "the container started without the NVIDIA driver files (no GPU runtime, no --gpus / "
     "nvidia.com/gpu request): every GPU provider will fail and inference runs on the CPU",
     "WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available.",
     "The NVIDIA Driver was detected: version 580.65.06"},
    {"ort.append_provider_failed", "provider-load-failure", "appendexecutionprovider",
     R"(appendexecutionprovider_\w+: failed to load shared library)",
     "a language binding (C, Java, Go, Rust) could not add the GPU provider: its shared library "
     "or one of its CUDA/cuDNN dependencies did not load",
     "ai.onnxruntime.OrtException: Error code - ORT_FAIL - message: "
     "OrtSessionOptionsAppendExecutionProvider_Cuda: Failed to load shared library",
     "OrtSessionOptionsAppendExecutionProvider_Cuda: provider added"},
    {"ort.provider_dll_load_failed", "provider-load-failure", "loadlibrary failed with error",
     R"(loadlibrary failed with error [0-9]+ "[^"]*" when trying to load "[^"]*onnxruntime_providers_\w+\.dll)",
     "Windows could not load the ONNX Runtime GPU provider DLL (error 126: the DLL or one of its "
     "CUDA/cuDNN dependencies is not on the PATH): the session runs without that provider",
     "LoadLibrary failed with error 126 \"\" when trying to load "
     "\"C:\\venv\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll\"",
     "LoadLibrary succeeded for \"C:\\venv\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll\""},
    {"app.fallback_to_cpu", "cpu-fallback", "fallback to cpu!", R"(fallback to cpu!)",
     "the application found no usable GPU provider in its ONNX Runtime build and runs on the CPU",
     "Fallback to cpu!", "Fallback to cpu is disabled"},
    {"comfyui.onnxruntime_no_acceleration", "cpu-fallback", "doesn't come with acceleration",
     R"(onnxruntime not found or doesn't come with acceleration providers)",
     "the ComfyUI node found no GPU provider in the installed onnxruntime (the CPU-only package "
     "shadows onnxruntime-gpu, or the GPU provider failed to load) and runs on the CPU",
     "UserWarning: DWPose: Onnxruntime not found or doesn't come with acceleration providers, "
     "switch to OpenCV with CPU device. DWPose might run very slowly",
     "DWPose: Onnxruntime with acceleration providers detected"},
    {"gpu_operator.nvidia_smi_missing", "no-device", "failed to run command 'nvidia-smi'",
     R"(failed to run command '?nvidia-smi'?: no such file)",
     "the GPU operator's driver validation cannot run nvidia-smi: the driver (host or driver "
     "container) is not installed or not ready on this node, so GPU pods cannot start",
     "chroot: failed to run command 'nvidia-smi': No such file or directory",
     "running command chroot with args [/run/nvidia/driver nvidia-smi]"},
    {"cuda.system_not_ready", "no-device", "system not yet initialized",
     R"(system not yet initialized|cudaerrorsystemnotready|cuda_error_system_not_ready)",
     "CUDA error 802: the GPUs are present but not usable yet; on NVSwitch systems the "
     "nvidia-fabricmanager service is not running or does not match the driver",
     "Failed to allocate device vector A (error code system not yet initialized)!",
     "system initialized: 8 GPUs"},
    {"triton.unknown_accelerator", "provider-load-failure", "unknown execution accelerator",
     R"(unknown execution accelerator '\w+' is requested)",
     "Triton's ONNX Runtime backend was asked for an execution accelerator it does not have (or "
     "one listed under the wrong device kind in config.pbtxt): the model is UNAVAILABLE",
     "UNAVAILABLE: Invalid argument: unknown Execution Accelerator 'tensorrt' is requested",
     "gpu_execution_accelerator: [ { name: \"tensorrt\" } ]"},
    {"triton.gpu_only_backend", "no-device", "backend supports only gpu device",
     R"(backend supports only gpu device)",
     "Triton has no GPU for this model's instance group (no GPU in the container, or "
     "KIND_CPU requested for a GPU-only backend): the model is not loaded",
     "unable to load model 'ocr', TensorRT backend supports only GPU device",
     "TRITONBACKEND_ModelInstanceInitialize: ocr (GPU device 0)"},
    {"docker.nvidia_runtime_unknown", "no-device", "runtime name: nvidia|runtime specified nvidia",
     R"((unknown or invalid runtime name|unknown runtime specified):? nvidia)",
     "Docker has no runtime named nvidia: install the NVIDIA container toolkit, run `nvidia-ctk "
     "runtime configure --runtime=docker` and restart dockerd",
     "docker: Error response from daemon: unknown or invalid runtime name: nvidia.",
     "Runtimes: io.containerd.runc.v2 nvidia runc"},
    {"container.cli_error", "no-device", "nvidia-container-cli: ... error",
     R"(nvidia-container-cli: (initialization|detection|mount) error)",
     "the NVIDIA container runtime hook could not set up the GPU for the container (driver not "
     "loaded, NVML missing, or a device or library it could not mount): the container gets no GPU",
     "nvidia-container-cli: detection error: driver error: failed to process request",
     "nvidia-container-cli: initialization done"},
    {"container.nvidia_smi_missing", "no-device", "nvidia-smi not found",
     R"(nvidia-smi(: command)? not found)",
     "nvidia-smi is not in the container: the driver utilities were not injected (no --gpus, "
     "no nvidia runtime, or NVIDIA_DRIVER_CAPABILITIES without utility)",
     "!! ERROR: nvidia-smi not found", "nvidia-smi found at /usr/bin/nvidia-smi"},
    {"nvidia_smi.no_driver", "no-device", "couldn't communicate with the nvidia driver",
     R"(nvidia-smi has failed because it couldn.t communicate with the nvidia driver)",
     "nvidia-smi cannot reach the kernel driver: on the host the driver is not loaded (a kernel "
     "update without a DKMS rebuild, nouveau bound to the GPU); in a container the GPU runtime "
     "did not inject the device nodes",
     "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
     "that the latest NVIDIA driver is installed and running.",
     "NVIDIA-SMI 580.65.06  Driver Version: 580.65.06  CUDA Version: 13.0"},
    {"cuda.initialization_error", "no-device", "(error code initialization error)",
     R"(\(error code initialization error\))",
     "CUDA error 3: the CUDA driver could not initialise the GPU (device nodes or driver "
     "libraries missing in the container, a GPU in a bad state, or MIG/driver setup incomplete)",
     "[Vector addition of 50000 elements] Failed to allocate vector A (error code initialization "
     "error)!",
     "CUDA initialization error count: 0"},
    {"optimum.provider_unavailable", "provider-load-failure", "asked to use",
     R"(asked to use \w+executionprovider as an onnx runtime execution provider, but the available)",
     "Hugging Face Optimum was asked for a GPU provider that the installed onnxruntime package "
     "does not have (the CPU-only wheel is installed or shadows onnxruntime-gpu)",
     "ValueError: Asked to use CUDAExecutionProvider as an ONNX Runtime execution provider, but "
     "the available execution providers are ['CPUExecutionProvider'].",
     "Using CUDAExecutionProvider as an ONNX Runtime execution provider"},
    {"lib.gpu_dll_missing", "library-missing", ".dll not found|.dll which is missing",
     R"((cublas|cudart|cudnn|cufft|curand|nvinfer|nvrtc)\w*\.dll["']? (not found|which is missing))",
     "a CUDA, cuDNN or TensorRT DLL is not on the Windows DLL search path (PATH, the application "
     "folder): the GPU provider that needs it did not load",
     "kernel32.LoadLibrary():'cublas64_91.dll' not found. CUDA is required for GPU execution.",
     "cublas64_12.dll found in C:\\Program Files\\NVIDIA GPU Computing Toolkit"},
    {"cudnn.library_load_failed", "library-missing", "could not load library cudnn",
     R"(could not load library (lib)?cudnn\w*\.(dll|so))",
     "cuDNN could not load one of its own sub-libraries (cuDNN 8 and 9 are split into several "
     "files): a partial cuDNN install, or another cuDNN earlier on the library path",
     "Could not load library cudnn_cnn_infer64_8.dll. Error code 127",
     "Loaded library cudnn_cnn_infer64_8.dll"},
    {"trt.ep_shared_library", "provider-load-failure", "tensorrt ep could not open shared library",
     R"(tensorrt ep could not open shared library)",
     "the TensorRT provider could not open a library it was configured to load (an engine "
     "decryption or plugin library path): the TensorRT provider is not created",
     "[ONNXRuntimeError] : 11 : EP_FAIL : TensorRT EP could not open shared library from ?",
     "TensorRT EP opened shared library libnvinfer_plugin.so.10"},
    {"device_plugin.register_failed", "no-device", "could not register device plugin",
     R"(could not register device plugin)",
     "the NVIDIA device plugin could not register with the kubelet (device plugin socket or "
     "feature gate, kubelet not ready): the node advertises no nvidia.com/gpu, GPU pods stay "
     "Pending",
     "Could not register device plugin: context deadline exceeded",
     "Registered device plugin for 'nvidia.com/gpu' with Kubelet"},
};

using common::Lower;

}  // namespace

std::span<const LogPattern> LogPatterns() { return kPatterns; }

struct LogScanner::Engine {
  explicit Engine(const re2::RE2::Options& o) : set(o, re2::RE2::UNANCHORED) {}
  re2::RE2::Set set;
  // Every pattern's required literals (nullopt: some pattern has none, every line is matched).
  std::optional<LiteralFinder> finder;
};

void LogScanner::EngineDeleter::operator()(Engine* e) const { delete e; }

LogScanner::~LogScanner() = default;

namespace {

// A console or a quoting tool may wrap a long line where a space was: every literal space of a
// pattern (outside a character class) also matches a line break, so a key phrase split at a word
// boundary still matches the text of the two lines (see the line joins in StreamScan).
std::string WrapTolerant(std::string_view re) {
  std::string out;
  bool in_class = false;
  for (std::size_t i = 0; i < re.size(); ++i) {
    char c = re[i];
    if (c == '\\' && i + 1 < re.size()) {
      out += c;
      out += re[++i];
      continue;
    }
    if (in_class) {
      if (c == ']') in_class = false;
      out += c;
      continue;
    }
    if (c == '[') {
      in_class = true;
      out += c;
      if (i + 1 < re.size() && re[i + 1] == '^') out += re[++i];
      if (i + 1 < re.size() && re[i + 1] == ']') out += re[++i];  // "[]...]": ']' is literal
      continue;
    }
    out += c == ' ' ? std::string("\\s+") : std::string(1, c);
  }
  return out;
}

re2::RE2::Options EngineOptions() {
  re2::RE2::Options o;
  o.set_case_sensitive(false);
  o.set_log_errors(false);
  o.set_max_mem(64 << 20);  // DFA budget for the whole set; real logs stay far below it
  return o;
}

}  // namespace

Status LogScanner::Compile() {
  engine_.reset(new Engine(EngineOptions()));
  std::vector<std::string> literals(NonAsciiFolds().begin(), NonAsciiFolds().end());
  bool every_pattern_has_literals = true;
  for (std::size_t i = 0; i < patterns_.size(); ++i) {
    std::optional<std::vector<std::string>> l = RequiredLiterals(patterns_[i]->regex);
    if (l) literals.insert(literals.end(), l->begin(), l->end());
    if (!l) every_pattern_has_literals = false;
    std::string error;
    if (engine_->set.Add(WrapTolerant(patterns_[i]->regex), &error) != static_cast<int>(i)) {
      return Status::InvalidArg(fmt::format("pattern '{}': {}", patterns_[i]->id, error));
    }
  }
  if (!engine_->set.Compile()) {
    return Status::InvalidArg("the patterns do not fit the regex engine's memory budget");
  }
  if (every_pattern_has_literals) engine_->finder = LiteralFinder::Build(literals);
  return Status::Ok();
}

LogScanner::LogScanner() {
  for (const LogPattern& p : kPatterns) patterns_.push_back(&p);
  Status s = Compile();
  // The built-in table is tested to compile; failing here is a bug in the table.
  if (!s.ok()) std::abort();
}

namespace {

// Fields of one user pattern, validated; the strings are copied into the scanner's storage.
Status ReadUserPattern(const YAML::Node& n, const std::string& path,
                       const std::set<std::string>& ids, std::array<std::string, 5>* f) {
  TG_ASSIGN_OR_RETURN(common::YamlMap m, common::YamlMap::From(n, path, "patterns[]"));
  auto& [id, regex, category, advice, needle] = *f;
  TG_RETURN_IF_ERROR(m.Get("id", &id, true));
  TG_RETURN_IF_ERROR(m.Get("regex", &regex, true));
  TG_RETURN_IF_ERROR(m.Get("category", &category, true));
  TG_RETURN_IF_ERROR(m.Get("advice", &advice, true));
  TG_RETURN_IF_ERROR(m.Get("needle", &needle));
  TG_RETURN_IF_ERROR(m.Finish());
  if (id.empty() || ids.count(id) != 0) {
    return m.FieldError("id", "a non-empty id used by no built-in or earlier pattern");
  }
  if (category.empty()) return m.FieldError("category", "a non-empty category");
  if (advice.empty()) return m.FieldError("advice", "a non-empty advice string");
  if (Lower(needle) != needle || needle.find('|') != std::string::npos) {
    return m.FieldError("needle", "a lower-case literal without '|'");
  }
  if (regex.empty() || regex.size() > 1024) {
    return m.FieldError("regex", "a regular expression of 1 to 1024 characters");
  }
  re2::RE2 check(regex, EngineOptions());
  if (!check.ok()) {
    return m.FieldError("regex", "a regular expression in RE2 syntax (" + check.error() + ")");
  }
  return Status::Ok();
}

}  // namespace

namespace {

struct PatternLimit {
  YAML::Mark mark;
  std::string what;
};

// Counts, on the parser's events and before yaml-cpp builds a tree (a few hundred bytes per
// node), the items of the top-level `patterns` sequence and every node of the file: a file of
// 10^5 patterns is refused at its 1001st item in bounded memory.
class PatternCounter : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark, nullptr); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark, nullptr); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string& value) override {
    Node(mark, &value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Open(mark, false);
  }
  void OnSequenceEnd() override { stack_.pop_back(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Open(mark, true);
  }
  void OnMapEnd() override { stack_.pop_back(); }

 private:
  struct Frame {
    bool is_map = false, next_is_key = true, is_patterns = false, value_is_patterns = false;
  };
  // A new node at the current position; `scalar` is its text when it is a scalar.
  void Node(const YAML::Mark& mark, const std::string* scalar) {
    if (++nodes_ > kMaxUserPatternNodes) {
      throw PatternLimit{
          mark, fmt::format("more than {} YAML nodes ({} patterns of five fields "
                            "need about {})",
                            kMaxUserPatternNodes, kMaxUserPatterns, 11 * kMaxUserPatterns)};
    }
    if (stack_.empty()) return;
    Frame& f = stack_.back();
    if (f.is_patterns && ++items_ > kMaxUserPatterns) {
      throw PatternLimit{mark, fmt::format("patterns: more than {} patterns (the limit; this is "
                                           "item {})",
                                           kMaxUserPatterns, items_)};
    }
    if (!f.is_map) return;
    if (f.next_is_key) {
      f.value_is_patterns = stack_.size() == 1 && scalar != nullptr && *scalar == "patterns";
    }
    f.next_is_key = !f.next_is_key;
  }
  void Open(const YAML::Mark& mark, bool is_map) {
    const bool patterns = !stack_.empty() && stack_.back().is_map && !stack_.back().next_is_key &&
                          stack_.back().value_is_patterns;
    Node(mark, nullptr);
    Frame f;
    f.is_map = is_map;
    f.is_patterns = patterns && !is_map;
    stack_.push_back(f);
  }

  std::vector<Frame> stack_;
  std::size_t nodes_ = 0, items_ = 0;
};

// INVALID_ARG "<path>:<line>:<col>: ..." when the file holds more patterns or nodes than the
// limits; a YAML syntax error is left to the parser that follows (it words it with the field).
Status CheckPatternCount(const std::string& text, const std::string& path) {
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    PatternCounter counter;
    parser.HandleNextDocument(counter);
  } catch (const PatternLimit& e) {
    return Status::InvalidArg(
        fmt::format("{}:{}:{}: {}", path, e.mark.line + 1, e.mark.column + 1, e.what));
  } catch (const YAML::Exception&) {
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<LogScanner>> LogScanner::WithUserPatterns(const std::string& path) {
  TG_ASSIGN_OR_RETURN(std::string text, common::ReadFileLimited(path, common::kMaxConfigBytes));
  TG_RETURN_IF_ERROR(CheckPatternCount(text, path));
  TG_ASSIGN_OR_RETURN(YAML::Node root, common::ParseYaml(text, path));
  TG_ASSIGN_OR_RETURN(common::YamlMap top, common::YamlMap::From(root, path, ""));
  TG_ASSIGN_OR_RETURN(YAML::Node list, top.GetSequence("patterns", true));
  TG_RETURN_IF_ERROR(top.Finish());
  if (list.size() > kMaxUserPatterns) {  // CheckPatternCount already refused such a file
    return Status::InvalidArg(common::YamlWhere(list, path) + ": more than 1000 patterns");
  }
  std::unique_ptr<LogScanner> s(new LogScanner());
  std::set<std::string> ids;
  for (const LogPattern* p : s->patterns_) ids.insert(p->id);
  for (const auto& n : list) {
    std::array<std::string, 5> f;
    TG_RETURN_IF_ERROR(ReadUserPattern(n, path, ids, &f));
    ids.insert(f[0]);
    std::size_t first = s->strings_.size();
    for (auto& x : f) s->strings_.push_back(std::move(x));
    const auto& b = s->strings_;
    s->user_patterns_.push_back({b[first].c_str(), b[first + 2].c_str(), b[first + 4].c_str(),
                                 b[first + 1].c_str(), b[first + 3].c_str(), "", ""});
    s->patterns_.push_back(&s->user_patterns_.back());
  }
  TG_RETURN_IF_ERROR(s->Compile().WithPrefix(path));
  return s;
}

bool LogScanner::MayMatch(std::string_view text) const {
  return engine_->set.Match(re2::StringPiece(text.data(), text.size()), nullptr);
}

const char* LogScanner::FindCandidate(const char* begin, const char* end) const {
  if (!engine_->finder) return begin;
  const char* hit = engine_->finder->Find(begin, end);
  return hit == end ? end : hit;
}

std::size_t LogScanner::MaxLiteral() const {
  return engine_->finder ? engine_->finder->max_length() : 0;
}

std::vector<const LogPattern*> LogScanner::Match(std::string_view line) const {
  std::vector<const LogPattern*> out;
  if (line.size() > kMaxLineBytes) line = line.substr(0, kMaxLineBytes);
  std::vector<int> hits;
  if (!engine_->set.Match(re2::StringPiece(line.data(), line.size()), &hits)) return out;
  std::sort(hits.begin(), hits.end());  // table order
  for (int i : hits) out.push_back(patterns_[static_cast<std::size_t>(i)]);
  return out;
}

namespace {

// Splits a stream into lines across read chunks and reports each line's matches. Lines are
// found by the literal prefilter first: a line that holds no required literal of any pattern is
// "quiet" and only counted, unless the line-join rules need it (the line after a matched one, or
// a literal split inside a word across the break). Everything else takes the whole path
// (SlowLine): the regex set on the line and the joins with its neighbour, so the findings are
// exactly those of matching every line.
class StreamScan {
 public:
  StreamScan(const LogScanner& scanner, const std::function<void(const LogMatch&)>& on_match)
      : scanner_(scanner), on_match_(on_match) {}

  void Chunk(const char* data, std::size_t n);

  // Reports the final line when the stream does not end with a newline.
  void Finish() {
    if (pending_) SlowLine();
  }

  // Folds the per-pattern counts into per-category counts, categories in table order.
  LogScanSummary TakeSummary();

 private:
  void FlushLine();
  // Lines wholly inside [begin, end); `end` is just past a newline.
  void CompleteLines(const char* begin, const char* end);
  // Lines of [begin, end) that hold no required literal.
  void QuietLines(const char* begin, const char* end);
  // Matches line_ with the previous line's state (tail, hits) in place.
  void SlowLine();
  // Whether the previous (quiet) line and `line`, joined inside a word, hold a literal across
  // the break.
  bool SplitLiteral(std::string_view prev, std::string_view line) const;
  // Appends to line_, keeping only a line's first kMaxLineBytes bytes.
  void Append(const char* p, std::size_t n) {
    if (line_.size() < kMaxLineBytes) line_.append(p, std::min(n, kMaxLineBytes - line_.size()));
  }

  const LogScanner& scanner_;
  const std::function<void(const LogMatch&)>& on_match_;
  LogScanSummary summary_;
  std::map<const LogPattern*, std::int64_t> counts_;
  void Report(const LogPattern* p, std::int64_t line, const std::string& text);
  // Patterns that match only where the previous line ends and this one starts (a key phrase
  // wrapped by a console, at a space or inside a word), not in either line alone.
  void ReportWrapped(const std::vector<const LogPattern*>& hits);

  std::string line_;
  bool pending_ = false;   // line_ holds the start of a line that a later chunk ends
  std::string prev_tail_;  // the last kWrapWindow bytes of the previous line ("" = none)
  std::vector<const LogPattern*> prev_hits_;
  // When the previous line was quiet, prev_tail_/prev_hits_ are stale and quiet_ is its text
  // (in the current chunk, or its tail in saved_ across a chunk boundary).
  bool prev_quiet_ = false;
  std::string_view quiet_;
  std::string saved_;
};

// A key phrase is far shorter than this; the window bounds the extra work per line.
constexpr std::size_t kWrapWindow = 240;

void StreamScan::Report(const LogPattern* p, std::int64_t line, const std::string& text) {
  ++summary_.matches;
  ++counts_[p];
  LogMatch m;
  m.line = line;
  m.pattern = p;
  m.text = text.size() > 400 ? text.substr(0, 400) + "..." : text;
  on_match_(m);
}

void StreamScan::ReportWrapped(const std::vector<const LogPattern*>& hits) {
  if (prev_tail_.empty() || line_.empty()) return;
  std::string head = line_.substr(0, kWrapWindow);
  std::vector<const LogPattern*> found;
  // Joined without a space only inside a word (letters on both sides): "gpu-1" + "0 Memcpy ..."
  // is two lines, not "gpu-10 Memcpy".
  auto letter = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; };
  std::vector<std::string> joins = {prev_tail_ + " " + head};
  if (letter(prev_tail_.back()) && letter(head.front())) joins.push_back(prev_tail_ + head);
  for (const std::string& joined : joins) {
    // The set's match-any test stops at the first match and needs no match list: cheap enough to
    // run at every line boundary of a candidate chunk.
    if (!scanner_.MayMatch(joined)) continue;
    for (const LogPattern* p : scanner_.Match(joined)) {
      bool known = std::find(hits.begin(), hits.end(), p) != hits.end() ||
                   std::find(prev_hits_.begin(), prev_hits_.end(), p) != prev_hits_.end() ||
                   std::find(found.begin(), found.end(), p) != found.end();
      if (!known) found.push_back(p);
    }
  }
  for (const LogPattern* p : found) Report(p, summary_.lines - 1, prev_tail_ + " / " + head);
}

void StreamScan::FlushLine() {
  ++summary_.lines;
  if (!line_.empty() && line_.back() == '\r') line_.pop_back();
  std::vector<const LogPattern*> hits = scanner_.Match(line_);
  for (const LogPattern* p : hits) Report(p, summary_.lines, line_);
  ReportWrapped(hits);
  prev_tail_ = line_.size() > kWrapWindow ? line_.substr(line_.size() - kWrapWindow) : line_;
  prev_hits_ = std::move(hits);
  line_.clear();
}

void StreamScan::SlowLine() {
  if (prev_quiet_) {
    std::string tail(quiet_.substr(quiet_.size() - std::min(quiet_.size(), kWrapWindow)));
    prev_tail_ = std::move(tail);
    prev_hits_.clear();  // a quiet line matches nothing
    prev_quiet_ = false;
  }
  FlushLine();
}

bool StreamScan::SplitLiteral(std::string_view prev, std::string_view line) const {
  auto letter = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; };
  const std::size_t k = scanner_.MaxLiteral();
  if (k < 2 || !letter(prev.back()) || !letter(line.front())) return false;
  std::string window(prev.substr(prev.size() - std::min(prev.size(), k - 1)));
  window.append(line.substr(0, k - 1));
  const char* end = window.data() + window.size();
  return scanner_.FindCandidate(window.data(), end) != end;
}

void StreamScan::QuietLines(const char* begin, const char* end) {
  for (const char* p = begin; p < end;) {
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
    const auto size = static_cast<std::size_t>(nl - p);
    std::string_view line(p, size);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string_view prev = prev_quiet_ ? quiet_ : std::string_view(prev_tail_);
    const bool joined = !prev.empty() && !line.empty();
    // The joins with a matched line, the head of an overlong line and a literal split inside a
    // word need the whole path; two quiet lines joined at a space hold no literal.
    if (size > kMaxLineBytes || (joined && (!prev_quiet_ || SplitLiteral(prev, line)))) {
      line_.assign(p, std::min(size, kMaxLineBytes));
      SlowLine();
      // Without a literal it matched nothing, so the next join needs no more than after a quiet
      // line (the head of an overlong line is what its joins see: keep the state FlushLine set).
      if (size <= kMaxLineBytes) {
        prev_quiet_ = true;
        quiet_ = line;
      }
    } else {
      ++summary_.lines;
      prev_quiet_ = true;
      quiet_ = line;
    }
    p = nl + 1;
  }
}

void StreamScan::CompleteLines(const char* begin, const char* end) {
  for (const char* cur = begin; cur < end;) {
    const char* hit = scanner_.FindCandidate(cur, end);
    const char* start = hit;
    if (hit != end) {
      const void* before = memrchr(cur, '\n', static_cast<std::size_t>(hit - cur));
      start = before != nullptr ? static_cast<const char*>(before) + 1 : cur;
    }
    QuietLines(cur, start);
    if (hit == end) break;
    // A literal never holds a newline, so the hit lies inside the line that starts at `start`.
    const char* nl = static_cast<const char*>(std::memchr(hit, '\n', end - hit));
    line_.assign(start, std::min(static_cast<std::size_t>(nl - start), kMaxLineBytes));
    SlowLine();
    cur = nl + 1;
  }
  if (prev_quiet_) {  // the chunk's bytes go away: keep what the next line's joins may need
    std::string tail(quiet_.substr(quiet_.size() - std::min(quiet_.size(), kWrapWindow)));
    saved_ = std::move(tail);
    quiet_ = saved_;
  }
}

void StreamScan::Chunk(const char* data, std::size_t n) {
  const char* p = data;
  const char* end = data + n;
  if (pending_) {
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', n));
    if (nl == nullptr) {
      Append(p, n);
      return;
    }
    Append(p, static_cast<std::size_t>(nl - p));
    pending_ = false;
    SlowLine();
    p = nl + 1;
  }
  const char* last =
      p < end ? static_cast<const char*>(memrchr(p, '\n', static_cast<std::size_t>(end - p)))
              : nullptr;
  if (last != nullptr) {
    CompleteLines(p, last + 1);
    p = last + 1;
  }
  if (p < end) {
    line_.clear();
    Append(p, static_cast<std::size_t>(end - p));
    pending_ = true;
  }
}

LogScanSummary StreamScan::TakeSummary() {
  for (const LogPattern* pp : scanner_.patterns()) {
    const LogPattern& p = *pp;
    auto it = counts_.find(&p);
    if (it == counts_.end()) continue;
    bool merged = false;
    for (auto& [cat, c] : summary_.per_category) {
      if (cat == p.category) {
        c += it->second;
        merged = true;
      }
    }
    if (!merged) summary_.per_category.emplace_back(p.category, it->second);
  }
  return std::move(summary_);
}

}  // namespace

LogScanSummary ScanLogStream(std::FILE* in, const std::function<void(const LogMatch&)>& on_match,
                             const LogScanner* custom) {
  static const LogScanner builtin;
  const LogScanner& scanner = custom != nullptr ? *custom : builtin;
  StreamScan scan(scanner, on_match);
  std::vector<char> buf(256 * 1024);
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), in)) > 0) scan.Chunk(buf.data(), n);
  scan.Finish();
  return scan.TakeSummary();
}

Result<LogScanSummary> ScanLogFile(const std::string& path,
                                   const std::function<void(const LogMatch&)>& on_match,
                                   const LogScanner* scanner) {
  // The common input opener: refuses directories, devices and sockets, never waits on a FIFO
  // with no writer, and checks that standard input is open and readable.
  bool named_fifo = false;
  auto fd = common::OpenInputFd(path, &named_fifo);
  if (!fd.ok()) {
    if (fd.status().code() == common::StatusCode::kNotFound) {
      return Status::NotFound(path + ": cannot open log: file not found");
    }
    return fd.status().WithPrefix("log");
  }
  const std::string name = path == "-" ? "standard input" : path;
  common::UniqueFile f(::fdopen(*fd, "rb"));
  if (!f) {
    ::close(*fd);
    return Status::InvalidArg(name + ": cannot open log: " + std::strerror(errno));
  }
  LogScanSummary s = ScanLogStream(f.get(), on_match, scanner);
  const int err = std::ferror(f.get()) != 0 ? errno : 0;
  const bool failed = std::ferror(f.get()) != 0;
  f.Close();
  if (!failed && named_fifo && s.lines == 0) {
    return Status::InvalidArg(name + ": is a FIFO (named pipe) with no writer, expected a log");
  }
  if (failed) {
    // A read error is never a clean log: exit 2, not "no findings".
    return Status::InvalidArg(name + ": read error while scanning the log: " + std::strerror(err));
  }
  return s;
}

std::optional<common::Outcome> LogCategoryOutcome(std::string_view category) {
  using common::Outcome;
  // What a finding of each category says about the replica.
  static constexpr std::pair<std::string_view, Outcome> kOutcomes[] = {
      {"provider-load-failure", Outcome::kNotAccelerated},
      {"cpu-fallback", Outcome::kNotAccelerated},
      {"node-assignment", Outcome::kNotAccelerated},
      {"no-device", Outcome::kNotAccelerated},
      {"library-missing", Outcome::kNotAccelerated},
      {"device-lost", Outcome::kNotAccelerated},
      {"driver-too-old", Outcome::kDrift},
      {"driver-library-mismatch", Outcome::kDrift},
      {"tensorrt-version-mismatch", Outcome::kDrift},
      {"cudnn-version-mismatch", Outcome::kDrift},
      {"tensorrt-library-mismatch", Outcome::kDrift},
      {"memcpy", Outcome::kPerformanceFailed},
      {"tensorrt-engine", Outcome::kPerformanceFailed},
      {"tensorrt-engine-rebuild", Outcome::kPerformanceFailed},
  };
  for (const auto& [name, outcome] : kOutcomes) {
    if (name == category) return outcome;
  }
  return std::nullopt;
}

common::Outcome LogScanOutcome(const LogScanSummary& summary) {
  common::Outcome worst = common::Outcome::kOk;
  for (const auto& [category, count] : summary.per_category) {
    if (count <= 0) continue;
    // A user pattern's own category (--patterns) has no result of its own: any finding of it
    // fails the replica's proof like a built-in integrity finding (the built-ins all have one).
    worst = common::WorseOutcome(
        worst, LogCategoryOutcome(category).value_or(common::Outcome::kNotAccelerated));
  }
  return worst;
}

int LogScanExitCode(const LogScanSummary& summary) {
  return common::ExitCodeFromOutcome(LogScanOutcome(summary));
}

}  // namespace tg::policy
