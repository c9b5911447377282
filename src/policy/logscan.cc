#include "policy/logscan.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include "common/file_util.h"

namespace tg::policy {
namespace {

using common::Result;
using common::Status;

// needle: '|'-separated lowercase literals; the regex only runs when one occurs in the line.
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
    {"ort.cpu_fallback_retry", "cpu-fallback", "back to", R"(fall(ing|s)? back to \[?'?(the )?cpu)",
     "ONNX Runtime gave up on the GPU providers and retried the whole session on the CPU",
     "EP Error when using ['CUDAExecutionProvider'] Falling back to ['CPUExecutionProvider'] and "
     "retrying.",
     "Rolling back to the previous model version"},
    {"ort.nodes_not_assigned", "node-assignment", "not assigned to the preferred execution",
     R"(nodes were not assigned to the preferred execution providers)",
     "some graph nodes run on the CPU instead of the GPU provider (shape ops are expected; "
     "compute-heavy ops are not): check placement with `truegreen run --placement`",
     "[W:onnxruntime:, session_state.cc:1280 VerifyEachNodeIsAssignedToAnEp] Some nodes were not "
     "assigned to the preferred execution providers which may or may not have an negative impact "
     "on performance.",
     "All nodes were placed on the preferred execution providers"},
    {"ort.nodes_placed_on_cpu", "node-assignment", "placed on [cpuexecutionprovider]",
     R"((all nodes|node\(s\)) placed on \[cpuexecutionprovider\])",
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
     R"((fail\w* to deserializ|deserializ\w*[^.]{0,80}(fail|error)))",
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
};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Position of the first needle alternative in `lower`, or npos.
std::size_t FindNeedle(std::string_view lower, std::string_view needles) {
  std::size_t best = std::string_view::npos;
  while (true) {
    std::size_t bar = needles.find('|');
    std::string_view n = needles.substr(0, bar);
    std::size_t p = n.empty() ? 0 : lower.find(n);
    best = std::min(best, p);
    if (bar == std::string_view::npos) break;
    needles.remove_prefix(bar + 1);
  }
  return best;
}

}  // namespace

std::span<const LogPattern> LogPatterns() { return kPatterns; }

LogScanner::LogScanner() {
  regexes_.reserve(std::size(kPatterns));
  for (const LogPattern& p : kPatterns) {
    regexes_.emplace_back(p.regex,
                          std::regex::ECMAScript | std::regex::icase | std::regex::optimize);
  }
}

std::vector<const LogPattern*> LogScanner::Match(std::string_view line) const {
  std::vector<const LogPattern*> out;
  if (line.size() > kMaxLineBytes) line = line.substr(0, kMaxLineBytes);
  std::string lower = Lower(line);
  for (std::size_t i = 0; i < std::size(kPatterns); ++i) {
    std::size_t at = FindNeedle(lower, kPatterns[i].needle);
    if (at == std::string::npos) continue;
    // Run the regex on a bounded window around the needle: libstdc++'s regex recurses per input
    // character, so an unbounded 64 KiB line could exhaust the stack.
    std::size_t from = at > 1024 ? at - 1024 : 0;
    std::string_view window = std::string_view(lower).substr(from, 3072);
    if (std::regex_search(window.begin(), window.end(), regexes_[i])) out.push_back(&kPatterns[i]);
  }
  return out;
}

LogScanSummary ScanLogStream(std::FILE* in, const std::function<void(const LogMatch&)>& on_match) {
  static const LogScanner scanner;
  LogScanSummary summary;
  std::map<const LogPattern*, std::int64_t> counts;
  std::string line;
  bool truncated = false;
  std::vector<char> buf(64 * 1024);
  auto flush = [&]() {
    ++summary.lines;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    for (const LogPattern* p : scanner.Match(line)) {
      ++summary.matches;
      ++counts[p];
      LogMatch m;
      m.line = summary.lines;
      m.pattern = p;
      m.text = line.size() > 400 ? line.substr(0, 400) + "..." : line;
      on_match(m);
    }
    line.clear();
    truncated = false;
  };
  std::size_t n;
  bool pending = false;
  while ((n = std::fread(buf.data(), 1, buf.size(), in)) > 0) {
    std::size_t start = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (buf[i] != '\n') continue;
      if (!truncated) line.append(buf.data() + start, i - start);
      if (line.size() > kMaxLineBytes) line.resize(kMaxLineBytes);
      flush();
      pending = false;
      start = i + 1;
    }
    if (start < n) {
      pending = true;
      if (!truncated) {
        line.append(buf.data() + start, n - start);
        if (line.size() > kMaxLineBytes) {
          line.resize(kMaxLineBytes);
          truncated = true;  // keep the head of an overlong line, drop the rest
        }
      }
    }
  }
  if (pending) flush();
  for (const LogPattern& p : kPatterns) {
    auto it = counts.find(&p);
    if (it == counts.end()) continue;
    bool merged = false;
    for (auto& [cat, c] : summary.per_category) {
      if (cat == p.category) {
        c += it->second;
        merged = true;
      }
    }
    if (!merged) summary.per_category.emplace_back(p.category, it->second);
  }
  return summary;
}

Result<LogScanSummary> ScanLogFile(const std::string& path,
                                   const std::function<void(const LogMatch&)>& on_match) {
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
  std::FILE* f = ::fdopen(*fd, "rb");
  if (f == nullptr) {
    ::close(*fd);
    return Status::InvalidArg(name + ": cannot open log: " + std::strerror(errno));
  }
  LogScanSummary s = ScanLogStream(f, on_match);
  const int err = std::ferror(f) != 0 ? errno : 0;
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (!failed && named_fifo && s.lines == 0) {
    return Status::InvalidArg(name + ": is a FIFO (named pipe) with no writer, expected a log");
  }
  if (failed) {
    // A read error is never a clean log: exit 2, not "no findings".
    return Status::InvalidArg(name + ": read error while scanning the log: " + std::strerror(err));
  }
  return s;
}

}  // namespace tg::policy
