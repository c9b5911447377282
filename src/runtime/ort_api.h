// Loading ONNX Runtime at run time (runtime/ internal: this header includes ORT headers, so only
// files in src/runtime/ may include it).
//
// libonnxruntime.so is opened through common::LibraryLoader and the C++ API is initialised with
// ORT_API_MANUAL_INIT + Ort::InitApi(OrtGetApiBase()->GetApi(ORT_API_VERSION)). A library older
// than the headers (GetApi returns NULL) is reported as "ONNX Runtime too old", never a crash.
//
// Thread safety: LoadOrt is idempotent and thread-safe; the first successful load wins for the
// life of the process (ORT cannot be unloaded), later calls return the same OrtLoad.
#pragma once

#ifndef ORT_API_MANUAL_INIT
#define ORT_API_MANUAL_INIT
#endif
#include <onnxruntime_cxx_api.h>

#include <string>
#include <vector>

#include "common/dynlib.h"
#include "common/status.h"

namespace tg::runtime {

inline constexpr const char* kOrtLibraryName = "libonnxruntime.so";

struct OrtLoad {
  const OrtApi* api = nullptr;         // valid for the process lifetime
  std::string version;                 // GetVersionString(), e.g. "1.29.0"
  std::string build_info;              // GetBuildInfoString()
  std::string library_path;            // resolved path of libonnxruntime.so
  std::vector<std::string> providers;  // GetAvailableProviders(): compiled into the core library
};

// Loads ORT (once per process) with `loader`. Errors: NOT_FOUND / UNAVAILABLE from the loader,
// UNSUPPORTED when the library is older than ORT_API_VERSION of the headers.
common::Result<OrtLoad> LoadOrt(const common::LibraryLoader& loader);

// The one mapping of ONNX Runtime's error codes into ours, at the runtime boundary: bad model or
// argument INVALID_ARG, missing file NOT_FOUND, not implemented UNSUPPORTED, and every other
// library failure (ORT_FAIL, ORT_EP_FAIL, ORT_RUNTIME_EXCEPTION, ...) UNAVAILABLE, never INTERNAL
// (which means a bug in truegreen). The message is "<what>: <message>".
common::Status FromOrtCode(OrtErrorCode code, const std::string& what, const std::string& message);
// The name of an ORT hardware device type as snapshots and logs spell it: "CPU", "GPU", "NPU", or
// "unknown" for a value this build's headers do not name. Pure; thread-safe.
const char* DeviceTypeName(OrtHardwareDeviceType type);
// Converts an OrtStatus* (taking ownership and releasing it) into a Status; nullptr is OK.
common::Status FromOrtStatus(const OrtApi* api, OrtStatus* status, const std::string& what);
// The same for an exception thrown by the C++ API.
common::Status FromOrtException(const Ort::Exception& ex, const std::string& what);

}  // namespace tg::runtime
