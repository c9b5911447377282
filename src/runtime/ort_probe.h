// The ONNX Runtime part of the capability snapshot (free of ORT types; the ORT headers stay inside
// src/runtime/).
#pragma once

#include <string>

#include "common/dynlib.h"
#include "probe/probe.h"
#include "probe/snapshot.h"
#include "runtime/ort_runtime.h"

namespace tg::runtime {

// Fills the ONNX Runtime section of a snapshot whose provider_libraries may already carry their
// ELF facts (probe::TakeSnapshot leaves them there): the core's version, build info and compiled
// providers (ProbeOrtCore); then, for each GPU provider library, its DT_NEEDED (CUDA/cuDNN/
// TensorRT majors), and an actual load, recording success or the exact error text. Dependencies
// of a provider found in the loader's explicit search dirs are loaded first (RTLD_GLOBAL), so
// --lib-path decides what the provider binds to. Where the provider host library sits beside the
// core, the provider is registered into `runtime` (its one registration for the process, which a
// later SessionFactory reuses) and the EP devices it offers are recorded; otherwise it is only
// dlopened, which fails safely. `runtime` is the process's runtime, not owned, or null when
// OrtRuntime::Open failed with `runtime_error`. Never fails: every problem is recorded in `out`.
// Call after the CUDA libraries were probed. Thread safety: safe to call concurrently.
void ProbeOrt(const common::LibraryLoader& loader, OrtRuntime* runtime,
              const std::string& runtime_error, probe::OrtInfo* out);

// Only the core: loads libonnxruntime.so through `loader` (runtime::LoadOrt) and fills
// out->library (resolved path, version), build_info, compiled_providers and core_flavor, without
// touching any provider library. What `audit image` asks of a core extracted from an image.
// Returns the load error (NOT_FOUND / UNAVAILABLE / UNSUPPORTED) when the core does not load.
common::Status ProbeOrtCore(const common::LibraryLoader& loader, probe::OrtInfo* out);

// The whole capability snapshot: probe::TakeSnapshot (host, devices, driver, CUDA libraries,
// provider ELF facts: no ORT) through `loader`, then ProbeOrt in `runtime`, the process's runtime
// as the caller's OrtRuntime::Open returned it (not owned), or why it could not be opened (then
// recorded as the ORT probe's error). The CUDA libraries are loaded before any provider library
// is registered, so the providers bind to the copies the loader chose. Never fails (errors are
// recorded inside). Thread safety: safe to call concurrently.
probe::Snapshot TakeSnapshot(const common::LibraryLoader& loader,
                             const common::Result<OrtRuntime*>& runtime,
                             const probe::ProbeOptions& options = {});

}  // namespace tg::runtime
