// The ONNX Runtime pair inside an image: does the core that ships beside a GPU provider library
// have the build flavour that can host it, and are they one release?
//
// A GPU provider (libonnxruntime_providers_cuda.so / _tensorrt.so) calls back into the core
// through entries that only a core built with CUDA has (docs/POLICY.md, "build flavour"); paired
// with a CPU-built core (the npm package) it segfaults on Slice, Einsum, Tile and Resize. No byte
// of the core file says which flavour it is, so the flavour comes from the core itself: the
// caller-supplied OrtCoreInspector loads the core in a throwaway child process and reports
// GetVersionString / GetBuildInfoString / GetAvailableProviders (the probe's own rule: a core
// that lists CUDAExecutionProvider is GPU-built).
//
// Rules (docs/AUDIT_IMAGE.md):
//   image.ort.pair     error: a GPU provider with a CPU-built core, or a provider of another
//                      release than the core (the provider does not carry the core's version).
//   image.ort.layout   error: a GPU provider with no core in its directory, or no
//                      libonnxruntime_providers_shared.so beside the core (ORT opens it there).
//   image.ort.unchecked warning: the pair could not be checked (the core could not be extracted
//                      or loaded here, inspection disabled); the audit says so instead of passing
//                      the pair silently.
//
// Failure behaviour: never fails; every problem is a Finding. Thread safety: pure functions (the
// inspector is called on the calling thread).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/image/image_fs.h"
#include "audit/image/oci_image.h"
#include "audit/report/finding.h"
#include "common/config.h"
#include "common/status.h"

namespace tg::audit {

struct OrtCoreInfo {
  std::string version;                 // "1.29.0"
  std::string build_info;              // "ORT Build Info: git-branch=…"
  std::vector<std::string> providers;  // GetAvailableProviders()
};

// Loads the core at `core_file` (an extracted copy) and reports what it says about itself.
// UNAVAILABLE / INTERNAL when it cannot (not loadable here, crashed, timed out).
using OrtCoreInspector = std::function<common::Result<OrtCoreInfo>(const std::string& core_file)>;

// Library files the pair check needs on disk (cores and GPU providers).
bool ExtractForOrtPair(std::string_view path);

// The extracted copy of image path `path` from the layer that last wrote it, or "" with the
// reason in *why (not extracted: the predicate, the budget).
std::string ExtractedFile(const Image& image, const FileSystem& fs, const std::string& path,
                          std::string* why);

struct OrtPairReport {
  std::vector<std::string> cores;          // image paths of ORT cores (regular files)
  std::vector<std::string> gpu_providers;  // image paths of GPU provider libraries
  std::string core;                        // the core checked ("" when none)
  std::string core_version;
  std::string core_flavor;  // "gpu" / "cpu" / "" when not checked
  std::string build_info;
  bool checked = false;        // a GPU provider was present and its core was inspected
  std::string skipped_reason;  // why not, when a GPU provider is present but checked is false
};

// The rules above over the merged filesystem. `inspect` may be empty (inspection disabled: every
// GPU provider's pair is then image.ort.unchecked, with `off_reason` as the reason given).
std::vector<Finding> RunOrtPairRules(const Image& image, const FileSystem& fs,
                                     const OrtCoreInspector& inspect, std::string_view off_reason,
                                     OrtPairReport* report);

// The pair report as the image report's "ort" member. Never fails.
common::Json OrtPairToJson(const OrtPairReport& r);

// NUL-separated strings of the form N.N.N in the file (at most 64 distinct; e.g. the ORT version a
// provider library was built as). Reads the file in chunks; empty when it cannot be read.
std::vector<std::string> VersionStringsInFile(const std::string& path);

}  // namespace tg::audit
