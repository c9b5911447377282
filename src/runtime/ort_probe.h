// The ONNX Runtime part of the capability snapshot (free of ORT types; the ORT headers stay inside
// src/runtime/).
//
// ProbeOrt loads libonnxruntime.so through runtime::LoadOrt and records its version, build info
// and compiled-in providers; then, for each GPU provider library (libonnxruntime_providers_cuda.so,
// libonnxruntime_providers_tensorrt.so), it reads the file's DT_NEEDED (CUDA/cuDNN/TensorRT
// majors) and *actually loads it* through the LibraryLoader, recording success or the loader's
// exact error text. Dependencies of a provider that exist in the loader's explicit search dirs are
// loaded first (RTLD_GLOBAL), so --lib-path decides what the provider binds to. It does not create
// ORT environments or sessions.
//
// Never fails: every problem is recorded in `out`. Call after the CUDA libraries were probed
// (probe::TakeSnapshot does). Thread safety: as LoadOrt (idempotent, thread-safe).
#pragma once

#include "common/dynlib.h"
#include "probe/snapshot.h"

namespace tg::runtime {

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

void ProbeOrt(const common::LibraryLoader& loader, probe::OrtInfo* out);

// Reads a provider library's ELF facts (file, needed, majors) without loading it; used by the
// probe to choose which CUDA sonames to look for before anything is loaded.
void ReadProviderElf(const common::LibraryLoader& loader, probe::ProviderLibrary* p);

}  // namespace tg::runtime
