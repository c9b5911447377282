#include "runtime/ort_api.h"

#include <mutex>
#include <optional>

namespace tg::runtime {
namespace {

// Process-wide state. ORT must stay loaded once its API is in use: the library is opened with
// RTLD_NODELETE and this object lives until exit (a plain static, so LSan sees it as reachable).
struct OrtState {
  std::mutex mu;
  common::DynamicLibrary library;
  std::optional<OrtLoad> load;
};

OrtState& State() {
  static OrtState state;
  return state;
}

}  // namespace

common::Result<OrtLoad> LoadOrt(const common::LibraryLoader& loader) {
  OrtState& st = State();
  std::lock_guard<std::mutex> lock(st.mu);
  if (st.load) return *st.load;

  auto lib = loader.Load(kOrtLibraryName);
  if (!lib.ok()) return lib.status().WithPrefix("ONNX Runtime");
  using GetApiBaseFn = const OrtApiBase* (*)();
  auto get_base = lib->Function<GetApiBaseFn>("OrtGetApiBase");
  if (get_base == nullptr) {
    return common::Status::Unsupported(lib->resolved_path() +
                                       ": not an ONNX Runtime library (no OrtGetApiBase)");
  }
  const OrtApiBase* base = get_base();
  const char* version = base->GetVersionString();
  const OrtApi* api = base->GetApi(ORT_API_VERSION);
  if (api == nullptr) {
    return common::Status::Unsupported(
        "ONNX Runtime too old: " + lib->resolved_path() + " is version " +
        (version ? version : "?") + ", which does not provide C API version " +
        std::to_string(ORT_API_VERSION) + " (required by truegreen's headers)");
  }
  Ort::InitApi(api);

  OrtLoad load;
  load.api = api;
  load.version = version ? version : "";
  load.library_path = lib->resolved_path();
  if (const char* bi = api->GetBuildInfoString()) load.build_info = bi;
  char** providers = nullptr;
  int n = 0;
  // Every OrtStatus goes through FromOrtStatus, its one owner. Without the list the core counts
  // as a CPU build, which refuses GPU providers rather than risking the crash.
  if (FromOrtStatus(api, api->GetAvailableProviders(&providers, &n), "GetAvailableProviders")
          .ok()) {
    for (int i = 0; i < n; ++i) load.providers.emplace_back(providers[i]);
    FromOrtStatus(api, api->ReleaseAvailableProviders(providers, n), "ReleaseAvailableProviders")
        .IgnoreError();
  }
  st.library = std::move(lib).value();
  st.load = load;
  return load;
}

const char* DeviceTypeName(OrtHardwareDeviceType type) {
  switch (type) {
    case OrtHardwareDeviceType_CPU:
      return "CPU";
    case OrtHardwareDeviceType_GPU:
      return "GPU";
    case OrtHardwareDeviceType_NPU:
      return "NPU";
  }
  return "unknown";
}

common::Status FromOrtCode(OrtErrorCode code, const std::string& what, const std::string& message) {
  std::string full = what + ": " + message;
  switch (code) {
    case ORT_INVALID_ARGUMENT:
    case ORT_INVALID_PROTOBUF:
    case ORT_INVALID_GRAPH:
      return common::Status::InvalidArg(std::move(full));
    case ORT_NO_SUCHFILE:
      return common::Status::NotFound(std::move(full));
    case ORT_NOT_IMPLEMENTED:
      return common::Status::Unsupported(std::move(full));
    default:
      // The library failed (not our code): the GPU path is not usable, exit 3.
      return common::Status::Unavailable(std::move(full));
  }
}

common::Status FromOrtStatus(const OrtApi* api, OrtStatus* status, const std::string& what) {
  if (status == nullptr) return common::Status::Ok();
  const std::string msg = api->GetErrorMessage(status);
  const OrtErrorCode code = api->GetErrorCode(status);
  api->ReleaseStatus(status);
  return FromOrtCode(code, what, msg);
}

common::Status FromOrtException(const Ort::Exception& ex, const std::string& what) {
  return FromOrtCode(ex.GetOrtErrorCode(), what, ex.what());
}

}  // namespace tg::runtime
