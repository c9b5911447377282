// The ONNX Runtime part of the capability snapshot (free of ORT types; the ORT headers stay inside
// src/runtime/).
//
// ProbeOrt loads libonnxruntime.so through runtime::LoadOrt and records its version, build info
// and compiled-in providers; then, for each GPU provider library (libonnxruntime_providers_cuda.so,
// libonnxruntime_providers_tensorrt.so), it reads the file's DT_NEEDED (CUDA/cuDNN/TensorRT
// majors) and *actually loads it* through the LibraryLoader, recording success or the loader's
// exact error text. Dependencies of a provider that exist in the loader's explicit search dirs are
// loaded first (RTLD_GLOBAL), so --lib-path decides what the provider binds to. Where the provider
// host library sits beside the core, the provider is registered through ORT
// (RegisterExecutionProviderLibrary) into an environment the probe creates on first use
// ("truegreen-probe", kept for the process lifetime) and the EP devices it offers are recorded;
// otherwise it is only dlopened. It creates no sessions.
//
// Never fails: every problem is recorded in `out`. Call after the CUDA libraries were probed
// (runtime::TakeSnapshot does). Thread safety: call from one thread at a time (it registers the
// providers under fixed names in one process-wide environment).
#pragma once

#include "common/dynlib.h"
#include "probe/probe.h"
#include "probe/snapshot.h"

namespace tg::runtime {

// Fills the ONNX Runtime section of a snapshot whose provider_libraries may already carry their
// ELF facts (probe::TakeSnapshot leaves them there).
void ProbeOrt(const common::LibraryLoader& loader, probe::OrtInfo* out);

// Only the core: loads libonnxruntime.so through `loader` (runtime::LoadOrt) and fills
// out->library (resolved path, version), build_info, compiled_providers and core_flavor, without
// touching any provider library. What `audit image` asks of a core extracted from an image.
// Returns the load error (NOT_FOUND / UNAVAILABLE / UNSUPPORTED) when the core does not load.
common::Status ProbeOrtCore(const common::LibraryLoader& loader, probe::OrtInfo* out);

// The whole capability snapshot: probe::TakeSnapshot (host, devices, driver, CUDA libraries,
// provider ELF facts: no ORT), then ProbeOrt. The CUDA libraries are loaded first so the provider
// libraries bind to the copies the loader chose. Never fails (errors are recorded inside).
probe::Snapshot TakeSnapshot(const common::LibraryLoader& loader,
                             const probe::ProbeOptions& options = {});

}  // namespace tg::runtime
