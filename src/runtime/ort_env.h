// The process's ONNX Runtime environment and GPU provider preparation (runtime/ internal;
// includes ORT headers). OrtRuntime (ort_runtime.h) owns the one OrtEnvironment of the process.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/dynlib.h"
#include "common/status.h"
#include "runtime/ort_api.h"
#include "runtime/session.h"

namespace tg::runtime::internal {

// A GPU provider ready to be appended to session options.
struct PreparedProvider {
  ProviderAttachment info;                       // name, path, library, device
  std::vector<const OrtEpDevice*> ep_devices;    // plugin path: the selected GPU EP device(s)
  const OrtMemoryInfo* device_memory = nullptr;  // plugin path: device memory of the EP device
  const OrtMemoryInfo* pinned_memory = nullptr;  // plugin path: host-accessible (pinned) memory
};

// The one Ort::Env of the process, its log capture and the provider libraries registered into
// it. Created only by OrtRuntime::Open and owned by that OrtRuntime (never destroyed).
// Thread safety: every member is safe to call concurrently.
class OrtEnvironment {
 public:
  // Creates the environment for the loaded core `load`, with a logger that captures messages per
  // session log id. Errors: UNAVAILABLE with ORT's text when ORT cannot create it.
  static common::Result<std::unique_ptr<OrtEnvironment>> Create(const OrtLoad& load,
                                                                bool allow_unhostable_core);
  OrtEnvironment(const OrtEnvironment&) = delete;
  OrtEnvironment& operator=(const OrtEnvironment&) = delete;
  // The environment and the loaded core (owned by this object, valid for the process's life).
  Ort::Env& env() { return *env_; }
  const OrtLoad& load() const { return load_; }

  // Log capture by session log id: messages ORT logs for `logid` between Begin and End.
  void BeginCapture(const std::string& logid);
  std::vector<std::string> EndCapture(const std::string& logid);
  // A fresh unique session log id ("truegreen-session-N").
  std::string NewLogId();

  // Registers the plugin library `library` for `provider` (canonical name) into this
  // environment, once per provider for the process: a later call for a provider already
  // registered from the same file (compared by canonical path) returns OK without touching ORT;
  // from another file INVALID_ARG. Errors: ORT's registration failure as UNAVAILABLE with ORT's
  // own message (not recorded: ORT keeps nothing of a failed registration, so a later call tries
  // again).
  common::Status RegisterProviderLibrary(const std::string& provider, const std::string& library);

  // OK when `provider` from `provider_library` may attach to this core (see
  // OrtRuntime::CheckCoreCanHost).
  common::Status CheckCoreCanHost(const std::string& provider,
                                  const std::string& provider_library) const;

  // Makes `provider` (canonical name) attachable along `mode`: preloads its dependencies through
  // `loader` (libcuda.so.1 first, then its DT_NEEDED GPU libraries), then either checks the
  // classic V2 options API or registers the plugin library (RegisterProviderLibrary) and selects
  // its `device_id`-th GPU EP device. Every failure carries the exact cause (loader or ORT text);
  // the caller decides whether it is fatal (production) or recorded (dev).
  common::Result<PreparedProvider> PrepareProvider(const std::string& provider, AttachMode mode,
                                                   int device_id,
                                                   const common::LibraryLoader& loader);

 private:
  OrtEnvironment(const OrtLoad& load, bool allow_unhostable_core)
      : load_(load), allow_unhostable_core_(allow_unhostable_core) {}
  static void LogCallback(void* param, OrtLoggingLevel severity, const char* category,
                          const char* logid, const char* code_location, const char* message);
  common::Status PreloadDependencies(const std::string& provider, const std::string& library,
                                     const common::LibraryLoader& loader);
  common::Result<PreparedProvider> PrepareClassic(const std::string& provider, int device_id);
  common::Result<PreparedProvider> PreparePlugin(const std::string& provider, int device_id,
                                                 const common::LibraryLoader& loader);

  const OrtLoad load_;
  const bool allow_unhostable_core_;
  std::unique_ptr<Ort::Env> env_;
  std::mutex log_mu_;
  std::map<std::string, std::vector<std::string>> captures_;
  std::mutex reg_mu_;
  std::map<std::string, std::string> registered_;  // provider -> canonical library path
  std::vector<common::DynamicLibrary> preloaded_;  // kept for the process lifetime
  std::uint64_t next_logid_ = 0;
};

// Appends `provider` (CUDA or TensorRT, canonical name) to `so` through the classic V2 options
// API, with `options` (provider option keys) and, for CUDA, the arena config (`arena` may be
// null). The one builder of classic provider options: PrepareClassic probes with it on throwaway
// options, Open attaches with it. Errors: ORT's own text ("... not enabled in this build").
common::Status AppendClassicProvider(OrtSessionOptions* so, const std::string& provider,
                                     const std::map<std::string, std::string>& options,
                                     const ArenaOptions* arena);

// Whether a core whose GetAvailableProviders lists `compiled` can host the GPU provider library
// `provider`: the CUDA/TensorRT provider calls back into CUDA-only entries of the core's provider
// host, which a CPU-built core lacks. Returns OK or UNAVAILABLE naming both files.
common::Status CoreCanHost(const std::vector<std::string>& compiled, const std::string& core_path,
                           const std::string& provider, const std::string& provider_library);

// Provider library file for a canonical provider name ("libonnxruntime_providers_cuda.so").
std::string ProviderLibraryName(const std::string& provider);

}  // namespace tg::runtime::internal
