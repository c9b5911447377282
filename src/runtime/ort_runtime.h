// The process's ONNX Runtime (public API of runtime/: no ONNX Runtime types here).
//
// OrtRuntime is the one owner of ONNX Runtime's process state: the loaded core library, the one
// environment (OrtEnv) with its log capture, the provider libraries registered into it and the
// decision whether a GPU provider may attach to a core that cannot host it. The probe of ORT, the
// session factory, the startup chain and the op canary's child all use the same object.
#pragma once

#include <memory>
#include <string>

#include "common/dynlib.h"
#include "common/status.h"

namespace tg::runtime {

namespace internal {
class OrtEnvironment;
}  // namespace internal

struct OrtRuntimeOptions {
  // Let a GPU provider attach to a core that cannot host it (a CPU-built core), which is otherwise
  // refused before the first session because the pair crashes inside the core. Only for a process
  // that exists to find out which ops crash such a pair and may die doing so (the op canary's
  // child).
  bool allow_unhostable_core = false;

  bool operator==(const OrtRuntimeOptions& o) const {
    return allow_unhostable_core == o.allow_unhostable_core;
  }
};

class OrtRuntime {
 public:
  // Returns the process's runtime, creating it on the first successful call: ONNX Runtime is
  // loaded through `loader` (LoadOrt) and its one environment is created with `options`. The
  // object lives until the process exits and is never destroyed (ONNX Runtime and the CUDA
  // libraries do not survive being unloaded); the pointer is not owned by the caller and stays
  // valid. Later calls return the same object and use neither `loader` (ORT is loaded once per
  // process) nor `options`, which must equal the first call's: INVALID_ARG otherwise, so no
  // decision is silently dropped. Errors of a first call: LoadOrt's (NOT_FOUND, UNAVAILABLE,
  // UNSUPPORTED), UNAVAILABLE when ORT cannot create its environment; nothing is kept, so the
  // next call tries again. Thread safety: safe to call concurrently.
  static common::Result<OrtRuntime*> Open(const common::LibraryLoader& loader,
                                          const OrtRuntimeOptions& options = {});

  // How many ONNX Runtime environments this process has created: 0 before the first successful
  // Open, 1 after it, whatever is called later. Thread safety: safe to call concurrently.
  static int EnvironmentsCreated();

  OrtRuntime(const OrtRuntime&) = delete;
  OrtRuntime& operator=(const OrtRuntime&) = delete;

  // The options and loader of the first Open (immutable).
  const OrtRuntimeOptions& options() const { return options_; }
  const common::LibraryLoader& loader() const { return loader_; }
  // The loaded core: its version ("1.29.0"), resolved path and compiled-in providers.
  const std::string& ort_version() const;
  const std::string& core_path() const;

  // Whether the GPU provider `provider` (canonical name), loaded from `provider_library`, may
  // attach to this core: OK when the core lists the provider as compiled in (a GPU build) or when
  // the options allow an unhostable core; otherwise UNAVAILABLE naming both files. Pure; thread
  // safe.
  common::Status CheckCoreCanHost(const std::string& provider,
                                  const std::string& provider_library) const;

  // The environment, for runtime/ only (internal::OrtEnvironment is declared in ort_env.h, which
  // includes ORT headers). Owned by this object.
  internal::OrtEnvironment& env() const { return *env_; }

 private:
  OrtRuntime(common::LibraryLoader loader, const OrtRuntimeOptions& options,
             std::unique_ptr<internal::OrtEnvironment> env);
  ~OrtRuntime();

  const common::LibraryLoader loader_;
  const OrtRuntimeOptions options_;
  const std::unique_ptr<internal::OrtEnvironment> env_;
};

}  // namespace tg::runtime
