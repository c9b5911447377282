#include "runtime/ort_probe.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <mutex>

#include "common/file_util.h"
#include "common/strings.h"
#include "probe/provider_libs.h"
#include "runtime/ort_api.h"
#include "runtime/ort_env.h"

namespace tg::runtime {
namespace {

// Loads the DT_NEEDED entries of a provider that exist in the loader's explicit search dirs
// (--lib-path, $TRUEGREEN_LIB_PATH, bundled ORT). The dynamic linker itself never looks in those
// dirs, so without this a provider would bind to system copies (or fail) although the user
// pointed truegreen elsewhere. Entries not found there are left to the dynamic linker, whose
// error then names them exactly.
void PreloadNeeded(const common::LibraryLoader& loader, const std::vector<std::string>& needed) {
  for (const auto& n : needed) {
    if (loader.FindInSearchDirs(n).empty()) continue;
    auto lib = loader.Load(n);  // RTLD_NODELETE keeps it mapped after `lib` goes out of scope
    (void)lib;
  }
}

// Directory of the library whose code implements `api`, as the dynamic linker knows it (the
// path it was opened by, not symlink-resolved: that is where ORT itself looks for its siblings).
// A function's address, not the table's: a wrapper core may hand out a copied table.
std::string OrtDirectory(const OrtApi* api) {
  Dl_info info{};
  const void* fn = reinterpret_cast<const void*>(api->GetBuildInfoString);
  if (::dladdr(fn, &info) == 0 || info.dli_fname == nullptr) return "";
  return std::string(common::Dirname(info.dli_fname));
}

std::string RealPath(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) != nullptr ? std::string(buf) : p;
}

// Loads the provider the way ONNX Runtime does when serving (RegisterExecutionProviderLibrary):
// ORT first hands the library its provider host (libonnxruntime_providers_shared), which the real
// provider's static initialisers need — a bare dlopen of the real CUDA provider crashes in them.
// The registration is the runtime's one registration of this provider (see
// OrtEnvironment::RegisterProviderLibrary), which a session factory later in this process reuses.
void RegisterWithOrt(OrtRuntime& runtime, probe::ProviderLibrary* p) {
  p->load_method = "ort_register";
  // ORT resolves a relative path against its own directory, not ours: always pass it absolute.
  const std::string path = RealPath(p->file);
  internal::OrtEnvironment& env = runtime.env();
  const common::Status st = env.RegisterProviderLibrary(p->provider, path);
  if (!st.ok()) {
    p->library.loaded = false;
    p->library.error = st.message();
    return;
  }
  p->library.loaded = true;
  p->library.resolved_path = path;
  std::vector<Ort::ConstEpDevice> devices;
  try {
    devices = env.env().GetEpDevices();
  } catch (const Ort::Exception& ex) {
    p->library.version_error = std::string("GetEpDevices: ") + ex.what();
    return;
  }
  std::vector<probe::EpDevice> offered;
  for (const Ort::ConstEpDevice& dev : devices) {
    const char* ep = dev.EpName();
    if (ep == nullptr || p->provider != ep) continue;
    probe::EpDevice d;
    d.ep_name = ep;
    Ort::ConstHardwareDevice hw = dev.Device();
    d.device_type = DeviceTypeName(hw.Type());
    if (const char* v = hw.Vendor()) d.vendor = v;
    offered.push_back(std::move(d));
  }
  p->ep_devices = std::move(offered);
}

// The core's build flavor from what it says it compiled in (see OrtInfo::core_flavor). The CUDA
// provider bridge is compiled into the core exactly when USE_CUDA was set, and only then does the
// core carry the provider-host entries the GPU provider libraries call back into.
std::string CoreFlavor(const std::vector<std::string>& providers) {
  for (const auto& p : providers) {
    if (p == "CUDAExecutionProvider") return "gpu";
  }
  return "cpu";
}

std::string Directory(const std::string& path) {
  return std::string(common::Dirname(RealPath(path)));
}

// "beside_core" when the provider file sits in the core's directory (one release archive).
std::string Origin(const std::string& core_path, const std::string& provider_file) {
  if (core_path.empty() || provider_file.empty()) return "";
  return Directory(core_path) == Directory(provider_file) ? "beside_core" : "elsewhere";
}

}  // namespace

common::Status ProbeOrtCore(const common::LibraryLoader& loader, probe::OrtInfo* out) {
  out->library.soname = kOrtLibraryName;
  auto ort = LoadOrt(loader);
  if (!ort.ok()) {
    out->library.error = ort.status().message();
    return ort.status();
  }
  out->library.loaded = true;
  out->library.resolved_path = ort->library_path;
  out->library.version = ort->version;
  out->build_info = ort->build_info;
  out->compiled_providers = ort->providers;
  out->core_flavor = CoreFlavor(ort->providers);
  return common::Status::Ok();
}

void ProbeOrt(const common::LibraryLoader& loader, OrtRuntime* runtime,
              const std::string& runtime_error, probe::OrtInfo* out) {
  const common::Status core = ProbeOrtCore(loader, out);
  auto ort = LoadOrt(loader);  // loaded once per process: this returns the same OrtLoad
  const OrtApi* api = core.ok() && ort.ok() ? ort->api : nullptr;

  if (out->provider_libraries.empty()) {
    for (const auto& spec : probe::kGpuProviderLibraries) {
      probe::ProviderLibrary p;
      p.provider = spec.provider;
      p.library.soname = spec.file;
      out->provider_libraries.push_back(std::move(p));
    }
  }

  // ORT loads libonnxruntime_providers_shared.so from the directory libonnxruntime.so was loaded
  // from and hands it its "provider host"; a GPU provider's static initialisers call that host.
  // Where the file is missing there, ORT goes on to open the provider anyway and the real CUDA
  // provider crashes the process (observed with ORT 1.29 and the stub libcuda). So: register
  // through ORT only when the layout is sound; otherwise dlopen the provider bare, *without* the
  // host library, which fails safely — on a missing dependency, or on the unresolved
  // Provider_GetHost symbol once every CUDA dependency resolved.
  std::string ort_dir = api != nullptr ? OrtDirectory(api) : "";
  std::string shared_path = ort_dir.empty() ? "" : ort_dir + "/" + probe::kProvidersSharedLibrary;
  bool layout_ok = !shared_path.empty() && common::IsRegularFile(shared_path);
  const std::string env_error = layout_ok && runtime == nullptr ? runtime_error : "";
  OrtRuntime* env = layout_ok ? runtime : nullptr;
  if (env != nullptr) {
    probe::LoadLibraryInto(loader, shared_path, &out->providers_shared);
    out->providers_shared.soname = probe::kProvidersSharedLibrary;
  } else {
    out->providers_shared.soname = probe::kProvidersSharedLibrary;
    out->providers_shared.error =
        api == nullptr ? "not loaded: ONNX Runtime unavailable"
        : layout_ok    ? "not loaded: no ONNX Runtime environment (" + env_error + ")"
                       : "not found next to libonnxruntime.so in " + ort_dir +
                          ": ONNX Runtime cannot load its GPU provider libraries from this "
                          "layout (put " +
                          probe::kProvidersSharedLibrary + " beside libonnxruntime.so)";
  }

  for (auto& p : out->provider_libraries) {
    if (p.file.empty() && p.elf_error.empty()) probe::ReadProviderElf(loader, &p);
    p.origin = Origin(out->library.resolved_path, p.file);
    std::string soname = p.library.soname;
    p.library = probe::LibInfo{};
    p.library.soname = soname;
    PreloadNeeded(loader, p.needed);
    if (p.file.empty()) {
      // Not in any explicit dir: let the dynamic linker's own search report it.
      p.load_method = "dlopen";
      p.library.error = soname + ": not found in the library search dirs";
      continue;
    }
    if (env != nullptr) {
      RegisterWithOrt(*env, &p);
    } else {
      p.load_method = "dlopen";
      probe::LoadLibraryInto(loader, p.file, &p.library);
      p.library.soname = soname;
      if (!env_error.empty()) p.library.error += " (ORT environment: " + env_error + ")";
    }
  }
}

probe::Snapshot TakeSnapshot(const common::LibraryLoader& loader,
                             const common::Result<OrtRuntime*>& runtime,
                             const probe::ProbeOptions& options) {
  probe::Snapshot s = probe::TakeSnapshot(loader, options);
  ProbeOrt(loader, runtime.ok() ? *runtime : nullptr,
           runtime.ok() ? "" : runtime.status().message(), &s.onnxruntime);
  return s;
}

}  // namespace tg::runtime
