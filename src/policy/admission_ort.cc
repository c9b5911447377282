// The ONNX Runtime checks of policy::Admit: the core, the providers the matrix names, the
// build-flavor rule (core and providers from one GPU release) and the providers' CUDA majors.
#include <algorithm>

#include "policy/admission_internal.h"
#include "policy/ort_pair.h"

namespace tg::policy::internal {

void Evaluator::CheckOrt() {
  CheckOrtCore();
  CheckOrtProviders();
  CheckCoreFlavor();
  CheckProviderCudaMajors();
}

void Evaluator::CheckOrtCore() {
  const auto& o = s_.onnxruntime;
  const std::string title = "ONNX Runtime (libonnxruntime.so)";
  std::string required =
      m_.onnxruntime.version ? "version " + m_.onnxruntime.version->text() : "loadable";
  if (!o.library.loaded) {
    Integrity("onnxruntime.library", title, DescribeMissing(o.library), required,
              "ONNX Runtime cannot be loaded, so no inference can run at all: install it or "
              "point --lib-path at its directory",
              /*hard=*/true);
  } else {
    std::optional<Version> v = LibVersion(o.library);
    if (m_.onnxruntime.version && (!v || !m_.onnxruntime.version->Matches(*v))) {
      Drift("onnxruntime.library", title, DescribeLoaded(o.library), required,
            "the ONNX Runtime release differs from the matrix: rebuild the image with the pinned "
            "release or update the matrix");
    } else {
      Pass("onnxruntime.library", title, DescribeLoaded(o.library),
           m_.onnxruntime.version ? required : "");
    }
  }
}

void Evaluator::CheckOrtProviders() {
  const auto& o = s_.onnxruntime;
  auto find_lib = [&](const std::string& provider) -> const probe::ProviderLibrary* {
    for (const auto& p : o.provider_libraries) {
      if (p.provider == provider) return &p;
    }
    return nullptr;
  };
  auto compiled = [&](const std::string& provider) {
    return std::find(o.compiled_providers.begin(), o.compiled_providers.end(), provider) !=
           o.compiled_providers.end();
  };

  std::vector<std::string> checked;
  int priority = 0;
  for (const std::string& want : m_.onnxruntime.providers) {
    ++priority;
    checked.push_back(want);
    std::string id = "onnxruntime.provider." + want;
    std::string t = want + " (priority " + std::to_string(priority) + ")";
    const probe::ProviderLibrary* lib = find_lib(want);
    bool hard = want == "CPUExecutionProvider";
    if (lib == nullptr) {
      if (o.library.loaded && compiled(want)) {
        Pass(id, t, "compiled into libonnxruntime.so", "usable");
      } else {
        Integrity(id, t,
                  o.library.loaded ? "not compiled into libonnxruntime.so and no provider "
                                     "library was found"
                                   : "ONNX Runtime not loaded",
                  "usable",
                  "this ONNX Runtime build does not offer " + want +
                      ": install the package that ships it",
                  hard);
      }
      continue;
    }
    if (!lib->library.loaded) {
      std::string explain = ExplainLoadError(lib->library.error);
      Integrity(id, t, DescribeMissing(lib->library), "the provider library loads",
                explain.empty() ? "the provider library cannot be loaded: see the loader error"
                                : explain);
      continue;
    }
    std::string found = "loaded " + lib->library.resolved_path;
    if (lib->cuda_major) found += " (built for CUDA " + std::to_string(*lib->cuda_major) + ")";
    Pass(id, t, found, "the provider library loads");
  }
  // Providers the node has but the matrix does not require: informational.
  for (const auto& p : o.provider_libraries) {
    if (std::find(checked.begin(), checked.end(), p.provider) != checked.end()) continue;
    std::string id = "onnxruntime.provider." + p.provider;
    if (p.library.loaded) {
      Pass(id, p.provider + " (not required)", "loaded " + p.library.resolved_path);
    } else {
      std::string explain = ExplainLoadError(p.library.error);
      Warn(id, p.provider + " (not required)", DescribeMissing(p.library), "optional",
           explain.empty() ? "this provider is unavailable" : explain);
    }
  }
}

// The build-flavor rule: a GPU provider library calls back into the core through a
// provider-host interface whose CUDA entries exist only in a core compiled with CUDA. A CPU-built
// core (the npm package) paired with the CUDA/TensorRT provider loads, registers and even runs
// some ops, then crashes inside the core on others (Slice, Einsum, Tile, Resize with sizes were
// seen on an H200). So the pair is judged from the core's own flavor, before anything runs: this
// fires on a GPU-less machine too. It is an integrity failure (exit 3), not drift: the versions
// may all match; the pairing gives no usable GPU path.
void Evaluator::CheckCoreFlavor() {
  const auto& o = s_.onnxruntime;
  if (!o.library.loaded) return;  // CheckOrtCore already failed hard
  for (const std::string& want : m_.onnxruntime.providers) {
    if (want != "CUDAExecutionProvider" && want != "TensorrtExecutionProvider") continue;
    const probe::ProviderLibrary* lib = nullptr;
    for (const auto& p : o.provider_libraries) {
      if (p.provider == want) lib = &p;
    }
    const std::string id = "onnxruntime.core_flavor." + want;
    const std::string title = "core can host " + want;
    const std::string provider_file =
        lib == nullptr || lib->file.empty() ? "(no provider library found)" : lib->file;
    const bool hosts = std::find(o.compiled_providers.begin(), o.compiled_providers.end(), want) !=
                       o.compiled_providers.end();
    std::string listed;
    for (const auto& p : o.compiled_providers) listed += (listed.empty() ? "" : ", ") + p;
    const std::string found =
        o.library.resolved_path + " (" + (o.core_flavor.empty() ? "unknown" : o.core_flavor) +
        " build; GetAvailableProviders: " + listed + ") with " + provider_file +
        (lib != nullptr && lib->origin == "elsewhere" ? " (not from the core's directory)" : "");
    const std::string required = "a core built with CUDA whose GetAvailableProviders lists " + want;
    if (hosts) {
      Pass(id, title, found, required);
      continue;
    }
    Integrity(id, title, found, required,
              "the core " + o.library.resolved_path + " is a CPU build and cannot host " +
                  provider_file +
                  ": the provider calls core entries a CPU build lacks and crashes on ops such "
                  "as Slice, Einsum, Tile and Resize. Fix: " +
                  std::string(kOrtPairRemedy) + " (onnxruntime-linux-x64-gpu-" +
                  (o.library.version ? *o.library.version : std::string("<version>")) + ")");
  }
}

void Evaluator::CheckProviderCudaMajors() {
  const auto& o = s_.onnxruntime;
  // Compatibility: each GPU provider's CUDA major equals the runtime's, and the matrix's pin.
  std::optional<Version> rt = LibVersion(s_.cuda_runtime.library);
  for (const auto& p : o.provider_libraries) {
    if (!p.cuda_major) continue;
    std::string id = "onnxruntime.provider_cuda_major." + p.provider;
    std::string t = p.provider + " CUDA major";
    std::string found = "built for CUDA " + std::to_string(*p.cuda_major);
    if (rt) found += ", runtime is CUDA " + rt->ToString();
    if (rt && rt->major() != *p.cuda_major) {
      Integrity(id, t, found, "CUDA " + std::to_string(rt->major()),
                "the provider library was built for CUDA " + std::to_string(*p.cuda_major) +
                    " but the image ships the CUDA " + std::to_string(rt->major()) +
                    " runtime: use the ONNX Runtime GPU package built for CUDA " +
                    std::to_string(rt->major()) + " (or the matching CUDA runtime)");
    } else if (m_.onnxruntime.provider_cuda_major &&
               *m_.onnxruntime.provider_cuda_major != *p.cuda_major) {
      Drift(id, t, found, "CUDA " + std::to_string(*m_.onnxruntime.provider_cuda_major),
            "the ONNX Runtime GPU package targets another CUDA major than the matrix pins");
    } else {
      Pass(id, t, found,
           m_.onnxruntime.provider_cuda_major
               ? "CUDA " + std::to_string(*m_.onnxruntime.provider_cuda_major)
               : "");
    }
  }
}

}  // namespace tg::policy::internal
