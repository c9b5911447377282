// The probe's public facts about ONNX Runtime's GPU provider libraries, and the library-loading
// helper the runtime layer uses to complete a snapshot with its ONNX Runtime section
// (runtime/ort_probe.h). Nothing here loads ONNX Runtime itself: the probe module stays free of
// ORT, and the dependency runs one way (runtime uses probe, never the reverse).
//
// Failure behaviour: none of these functions fail; problems are recorded in the output structs.
// Thread safety: as common::LibraryLoader (thread-safe); the structs written are the caller's.
#pragma once

#include <string>

#include "common/dynlib.h"
#include "probe/snapshot.h"

namespace tg::probe {

// Provider libraries probed, with the execution-provider name each implements.
struct ProviderLibrarySpec {
  const char* file;
  const char* provider;
};
inline constexpr ProviderLibrarySpec kGpuProviderLibraries[] = {
    {"libonnxruntime_providers_tensorrt.so", "TensorrtExecutionProvider"},
    {"libonnxruntime_providers_cuda.so", "CUDAExecutionProvider"},
};
inline constexpr const char* kProvidersSharedLibrary = "libonnxruntime_providers_shared.so";

// Reads a provider library's ELF facts (file, needed, CUDA/cuDNN/TensorRT majors) without loading
// it, so the probe can choose which CUDA sonames to look for before anything is loaded.
void ReadProviderElf(const common::LibraryLoader& loader, ProviderLibrary* p);

// Loads `soname` (or a path) and fills the loading part of `out` (soname, loaded, resolved_path,
// error: the dynamic linker's text verbatim). Returns the library, unloaded on failure; a loaded
// library stays mapped after the handle goes (RTLD_NODELETE).
common::DynamicLibrary LoadLibraryInto(const common::LibraryLoader& loader,
                                       const std::string& soname, LibInfo* out);

}  // namespace tg::probe
