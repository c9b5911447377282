#include "runtime/ort_env.h"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "common/log.h"
#include "common/telemetry.h"
#include "policy/ort_pair.h"
#include "runtime/elf_deps.h"
#include "runtime/ort_runtime.h"

namespace tg::runtime::internal {
namespace {

// The CUDA driver is every GPU provider's first dependency even when the provider only lists the
// CUDA runtime: loading it first makes "no driver" the reported cause, not a later symptom.
constexpr const char* kDriverSoname = "libcuda.so.1";
constexpr const char* kSharedProviderLib = "libonnxruntime_providers_shared.so";

std::string Describe(Ort::ConstEpDevice d) {
  std::string s = std::string("ep=") + d.EpName();
  Ort::ConstHardwareDevice hw = d.Device();
  s += std::string(" type=") + DeviceTypeName(hw.Type());
  if (const char* v = hw.Vendor()) s += std::string(" vendor=") + v;
  char buf[32];
  std::snprintf(buf, sizeof(buf), " device=0x%04x", hw.DeviceId());
  s += buf;
  return s;
}

// Directory of libonnxruntime.so as the dynamic linker recorded it (not symlink-resolved): the
// directory ORT itself uses to find libonnxruntime_providers_shared.so.
std::string OrtRuntimeDir() {
  Dl_info info{};
  const void* fn = reinterpret_cast<const void*>(Ort::GetApi().GetBuildInfoString);
  if (::dladdr(fn, &info) == 0 || info.dli_fname == nullptr) return "";
  return std::filesystem::path(info.dli_fname).parent_path().string();
}

}  // namespace

std::string ProviderLibraryName(const std::string& provider) {
  if (provider == "TensorrtExecutionProvider") return "libonnxruntime_providers_tensorrt.so";
  if (provider == "CUDAExecutionProvider") return "libonnxruntime_providers_cuda.so";
  return "";
}

common::Result<std::unique_ptr<OrtEnvironment>> OrtEnvironment::Create(const OrtLoad& load,
                                                                       bool allow_unhostable_core) {
  std::unique_ptr<OrtEnvironment> e(new OrtEnvironment(load, allow_unhostable_core));
  try {
    // ORT keeps one environment per process and the logger of whoever created it first (a second
    // CreateEnv returns the same one and drops its arguments): this is the only place that
    // creates one, so the capturing logger is always the one installed.
    e->env_ = std::make_unique<Ort::Env>(ORT_LOGGING_LEVEL_WARNING, "truegreen",
                                         &OrtEnvironment::LogCallback, e.get());
    // ORT_DISABLE_TELEMETRY (set by the loader seam before the core loaded) stops the uploader,
    // the device id and the files; this also stops the events, unless the user opted in.
    if (!common::OrtTelemetryOptedIn()) e->env_->DisableTelemetryEvents();
  } catch (const Ort::Exception& ex) {
    return FromOrtException(ex, "cannot create ONNX Runtime environment");
  }
  return e;
}

void OrtEnvironment::LogCallback(void* param, OrtLoggingLevel severity, const char* category,
                                 const char* logid, const char* code_location,
                                 const char* message) {
  auto* self = static_cast<OrtEnvironment*>(param);
  const std::string id = logid ? logid : "";
  {
    std::lock_guard<std::mutex> lock(self->log_mu_);
    auto it = self->captures_.find(id);
    if (it != self->captures_.end()) {
      it->second.emplace_back(message ? message : "");
      // Captured verbose output is for the placement parser, not the user's terminal.
      if (severity < ORT_LOGGING_LEVEL_WARNING) return;
    }
  }
  if (severity < ORT_LOGGING_LEVEL_WARNING) return;
  const char* msg = message ? message : "";
  if (severity >= ORT_LOGGING_LEVEL_ERROR) {
    spdlog::error("onnxruntime [{}]: {}", id, msg);
  } else {
    spdlog::warn("onnxruntime [{}]: {}", id, msg);
  }
}

void OrtEnvironment::BeginCapture(const std::string& logid) {
  std::lock_guard<std::mutex> lock(log_mu_);
  captures_[logid];
}

std::vector<std::string> OrtEnvironment::EndCapture(const std::string& logid) {
  std::lock_guard<std::mutex> lock(log_mu_);
  auto it = captures_.find(logid);
  if (it == captures_.end()) return {};
  std::vector<std::string> out = std::move(it->second);
  captures_.erase(it);
  return out;
}

std::string OrtEnvironment::NewLogId() {
  std::lock_guard<std::mutex> lock(log_mu_);
  return "truegreen-session-" + std::to_string(++next_logid_);
}

common::Status OrtEnvironment::PreloadDependencies(const std::string& provider,
                                                   const std::string& library,
                                                   const common::LibraryLoader& loader) {
  std::vector<std::string> deps = {kDriverSoname};
  auto needed = ElfNeeded(library);
  if (!needed.ok()) return needed.status().WithPrefix(provider);
  for (const auto& n : *needed) {
    if (!IsSystemSoname(n) && std::find(deps.begin(), deps.end(), n) == deps.end()) {
      deps.push_back(n);
    }
  }
  for (const auto& soname : deps) {
    auto lib = loader.Load(soname);
    if (!lib.ok()) {
      return common::Status::Unavailable(provider + ": cannot load a dependency of " + library +
                                         ": " + lib.status().message());
    }
    std::lock_guard<std::mutex> lock(reg_mu_);
    preloaded_.push_back(std::move(lib).value());
  }
  return common::Status::Ok();
}

common::Result<PreparedProvider> OrtEnvironment::PrepareProvider(
    const std::string& provider, AttachMode mode, int device_id,
    const common::LibraryLoader& loader) {
  const bool compiled_in =
      std::find(load_.providers.begin(), load_.providers.end(), provider) != load_.providers.end();
  if (mode == AttachMode::kClassic || (mode == AttachMode::kAuto && compiled_in)) {
    if (compiled_in) {
      // A GPU build loads the provider library from its own directory: preload what it needs.
      const std::string lib =
          (std::filesystem::path(load_.library_path).parent_path() / ProviderLibraryName(provider))
              .string();
      if (std::filesystem::exists(lib))
        TG_RETURN_IF_ERROR(PreloadDependencies(provider, lib, loader));
    }
    return PrepareClassic(provider, device_id);
  }
  return PreparePlugin(provider, device_id, loader);
}

common::Result<PreparedProvider> OrtEnvironment::PrepareClassic(const std::string& provider,
                                                                int device_id) {
  // Probe the classic V2 options API on throwaway session options, so a core library without the
  // provider fails here with ORT's own words instead of at the first Open. The device id goes in
  // too: parsing it asks CUDA for its devices, so a driver without one (the toolkit's stub, a
  // device-less node) is refused here, where dev can still fall back to the CPU.
  PreparedProvider p;
  p.info.name = provider;
  p.info.path = AttachPath::kClassic;
  p.info.device = "device_id=" + std::to_string(device_id);
  Ort::SessionOptions so;
  common::Status st =
      AppendClassicProvider(so, provider, {{"device_id", std::to_string(device_id)}}, nullptr);
  if (!st.ok()) return common::Status::Unavailable(st.message());
  p.info.attached = true;
  return p;
}

namespace {

// The provider's plugin library, absolute and normalised, from the loader's search directories.
common::Result<std::string> FindProviderLibrary(const std::string& provider,
                                                const common::LibraryLoader& loader) {
  const std::string libname = ProviderLibraryName(provider);
  std::string library = loader.FindInSearchDirs(libname);
  if (library.empty()) {
    return common::Status::Unavailable(
        provider + ": provider library " + libname +
        " not found in the library search path (--lib-path, $TRUEGREEN_LIB_PATH, bundled "
        "third_party/onnxruntime/lib)");
  }
  return std::filesystem::absolute(library).lexically_normal().string();
}

// ORT loads the provider bridge (libonnxruntime_providers_shared.so) from the directory of
// the core library it was loaded as, and only from there; preloading the bridge ourselves
// crashes the provider's initialisers (the host pointer is never set). Check, so a split
// layout is a named error instead of a crash.
common::Status RequireBridgeBesideCore(const std::string& provider, const std::string& library) {
  const std::string ort_dir = OrtRuntimeDir();
  if (!ort_dir.empty() && !std::filesystem::exists(ort_dir + "/" + kSharedProviderLib)) {
    return common::Status::Unavailable(
        provider + ": ONNX Runtime was loaded from " + ort_dir + ", which has no " +
        kSharedProviderLib + "; the GPU provider library " + library +
        " can only be registered when the provider libraries sit next to libonnxruntime.so "
        "(put them in one directory and pass it with --lib-path)");
  }
  return common::Status::Ok();
}

// The `device_id`-th GPU device that `provider` offers after registration; the error lists
// every device GetEpDevices offered.
common::Result<Ort::ConstEpDevice> ChooseGpuDevice(Ort::Env& env, const std::string& provider,
                                                   int device_id) {
  std::vector<Ort::ConstEpDevice> devices;
  try {
    devices = env.GetEpDevices();
  } catch (const Ort::Exception& ex) {
    return common::Status::Unavailable(provider + ": GetEpDevices failed: " + ex.what());
  }
  std::vector<Ort::ConstEpDevice> gpus;
  std::string offered;
  for (const auto& d : devices) {
    {
      if (!offered.empty()) offered += "; ";
      offered += Describe(d);
    }
    if (provider == d.EpName() && d.Device().Type() == OrtHardwareDeviceType_GPU) {
      gpus.push_back(d);
    }
  }
  if (gpus.empty()) {
    return common::Status::Unavailable(
        provider + ": provider registered but no GPU device (GetEpDevices offered: " +
        (offered.empty() ? "nothing" : offered) +
        "); the CUDA driver found has no usable device (a stub libcuda, or no GPU visible)");
  }
  if (device_id < 0 || static_cast<std::size_t>(device_id) >= gpus.size()) {
    return common::Status::Unavailable(provider + ": device_id " + std::to_string(device_id) +
                                       " requested but only " + std::to_string(gpus.size()) +
                                       " GPU EP device(s) offered");
  }
  return gpus[static_cast<std::size_t>(device_id)];
}

}  // namespace

// One registration per provider, under one name, for the whole process. The probe of ORT and the
// session factory both come here: ORT refuses a second registration under the same name, and
// under a second name it would load the library again and offer every GPU twice in
// GetEpDevices, so the device the factory picks by index could be the wrong one.
common::Status OrtEnvironment::RegisterProviderLibrary(const std::string& provider,
                                                       const std::string& library) {
  std::error_code ec;
  std::string canonical = std::filesystem::weakly_canonical(library, ec).string();
  if (ec || canonical.empty()) canonical = library;
  std::lock_guard<std::mutex> lock(reg_mu_);
  auto it = registered_.find(provider);
  if (it != registered_.end()) {
    if (it->second == canonical) return common::Status::Ok();
    return common::Status::InvalidArg(provider + ": already registered from " + it->second +
                                      " in this process; cannot also use " + library);
  }
  // The name is ours, one per provider: the key ORT records the library under.
  const std::string reg_name = "truegreen." + provider;
  try {
    env_->RegisterExecutionProviderLibrary(reg_name.c_str(), canonical);
  } catch (const Ort::Exception& ex) {
    return common::Status::Unavailable(ex.what());  // ORT's words; callers add the context
  }
  registered_[provider] = canonical;
  return common::Status::Ok();
}

common::Status OrtEnvironment::CheckCoreCanHost(const std::string& provider,
                                                const std::string& provider_library) const {
  if (allow_unhostable_core_) return common::Status::Ok();
  return CoreCanHost(load_.providers, load_.library_path, provider, provider_library);
}

common::Result<PreparedProvider> OrtEnvironment::PreparePlugin(
    const std::string& provider, int device_id, const common::LibraryLoader& loader) {
  PreparedProvider p;
  p.info.name = provider;
  p.info.path = AttachPath::kPlugin;
  TG_ASSIGN_OR_RETURN(const std::string library, FindProviderLibrary(provider, loader));
  p.info.library = library;

  bool registered = false;
  {
    std::lock_guard<std::mutex> lock(reg_mu_);
    registered = registered_.count(provider) != 0;
  }
  if (!registered) {
    TG_RETURN_IF_ERROR(PreloadDependencies(provider, library, loader));
    TG_RETURN_IF_ERROR(RequireBridgeBesideCore(provider, library));
  }
  TG_RETURN_IF_ERROR(RegisterProviderLibrary(provider, library)
                         .WithPrefix(provider + ": registering plugin library " + library));

  TG_ASSIGN_OR_RETURN(const Ort::ConstEpDevice chosen, ChooseGpuDevice(*env_, provider, device_id));
  // Only now, with a GPU to run on, does the core's flavor matter: a CPU-built core would let the
  // provider crash the process inside the core on its first Slice/Einsum/Tile/Resize.
  TG_RETURN_IF_ERROR(CheckCoreCanHost(provider, library));
  p.ep_devices.push_back(chosen);
  p.info.device = Describe(chosen);
  const OrtApi& api = Ort::GetApi();
  p.device_memory = api.EpDevice_MemoryInfo(chosen, OrtDeviceMemoryType_DEFAULT);
  p.pinned_memory = api.EpDevice_MemoryInfo(chosen, OrtDeviceMemoryType_HOST_ACCESSIBLE);
  p.info.attached = true;
  return p;
}

namespace {

// Keys and values as the C API wants them (pointers into `options`, which must outlive them).
void CStrings(const std::map<std::string, std::string>& options, std::vector<const char*>* keys,
              std::vector<const char*>* vals) {
  for (const auto& [k, v] : options) {
    keys->push_back(k.c_str());
    vals->push_back(v.c_str());
  }
}

// The CUDA arena config from the policy's `arena:` keys (CreateArenaCfgV2). Null when none set.
common::Result<OrtArenaCfg*> MakeArenaCfg(const ArenaOptions& arena) {
  if (!arena.any()) return static_cast<OrtArenaCfg*>(nullptr);
  std::vector<const char*> ak;
  std::vector<size_t> av;
  auto add = [&](const char* k, const std::optional<std::int64_t>& v) {
    if (v) {
      ak.push_back(k);
      av.push_back(static_cast<size_t>(*v));
    }
  };
  add("max_mem", arena.max_mem);
  add("arena_extend_strategy", arena.arena_extend_strategy);
  add("initial_chunk_size_bytes", arena.initial_chunk_size_bytes);
  add("max_dead_bytes_per_chunk", arena.max_dead_bytes_per_chunk);
  add("initial_growth_chunk_size_bytes", arena.initial_growth_chunk_size_bytes);
  add("max_power_of_two_extend_bytes", arena.max_power_of_two_extend_bytes);
  const OrtApi& api = Ort::GetApi();
  OrtArenaCfg* cfg = nullptr;
  TG_RETURN_IF_ERROR(FromOrtStatus(
      &api, api.CreateArenaCfgV2(ak.data(), av.data(), ak.size(), &cfg), "arena config"));
  return cfg;
}

common::Status AppendClassicCuda(OrtSessionOptions* so, const std::vector<const char*>& keys,
                                 const std::vector<const char*>& vals, const ArenaOptions* arena,
                                 const std::string& what) {
  const OrtApi& api = Ort::GetApi();
  OrtCUDAProviderOptionsV2* o = nullptr;
  TG_RETURN_IF_ERROR(FromOrtStatus(&api, api.CreateCUDAProviderOptions(&o), what));
  std::unique_ptr<OrtCUDAProviderOptionsV2, void (*)(OrtCUDAProviderOptionsV2*)> owner(
      o, api.ReleaseCUDAProviderOptions);
  TG_RETURN_IF_ERROR(FromOrtStatus(
      &api, api.UpdateCUDAProviderOptions(o, keys.data(), vals.data(), keys.size()), what));
  common::Result<OrtArenaCfg*> cfg =
      arena != nullptr ? MakeArenaCfg(*arena)
                       : common::Result<OrtArenaCfg*>(static_cast<OrtArenaCfg*>(nullptr));
  if (!cfg.ok()) return cfg.status();
  std::unique_ptr<OrtArenaCfg, void (*)(OrtArenaCfg*)> cfg_owner(*cfg, api.ReleaseArenaCfg);
  if (*cfg != nullptr) {
    TG_RETURN_IF_ERROR(FromOrtStatus(
        &api, api.UpdateCUDAProviderOptionsWithValue(o, "default_memory_arena_cfg", *cfg), what));
  }
  // The arena config is copied into the provider's factory at append time: released after.
  return FromOrtStatus(&api, api.SessionOptionsAppendExecutionProvider_CUDA_V2(so, o), what);
}

}  // namespace

common::Status AppendClassicProvider(OrtSessionOptions* so, const std::string& provider,
                                     const std::map<std::string, std::string>& options,
                                     const ArenaOptions* arena) {
  std::vector<const char*> keys, vals;
  CStrings(options, &keys, &vals);
  const std::string what = provider + " (classic V2 API)";
  if (provider == "CUDAExecutionProvider") return AppendClassicCuda(so, keys, vals, arena, what);
  const OrtApi& api = Ort::GetApi();
  OrtTensorRTProviderOptionsV2* o = nullptr;
  TG_RETURN_IF_ERROR(FromOrtStatus(&api, api.CreateTensorRTProviderOptions(&o), what));
  std::unique_ptr<OrtTensorRTProviderOptionsV2, void (*)(OrtTensorRTProviderOptionsV2*)> owner(
      o, api.ReleaseTensorRTProviderOptions);
  TG_RETURN_IF_ERROR(FromOrtStatus(
      &api, api.UpdateTensorRTProviderOptions(o, keys.data(), vals.data(), keys.size()), what));
  return FromOrtStatus(&api, api.SessionOptionsAppendExecutionProvider_TensorRT_V2(so, o), what);
}

common::Status CoreCanHost(const std::vector<std::string>& compiled, const std::string& core_path,
                           const std::string& provider, const std::string& provider_library) {
  if (std::find(compiled.begin(), compiled.end(), provider) != compiled.end()) {
    return common::Status::Ok();
  }
  return common::Status::Unavailable(
      provider + ": the ONNX Runtime core " + core_path +
      " is a CPU build (GetAvailableProviders does not list " + provider +
      ") and cannot host the provider library " + provider_library +
      ": it would crash inside the core on ops such as Slice, Einsum, Tile and Resize. Fix: " +
      std::string(policy::kOrtPairRemedy));
}

}  // namespace tg::runtime::internal
