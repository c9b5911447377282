// The version matrix: the single source of truth for what a GPU inference node must provide.
//
// One YAML file (deploy/matrix.example.yaml documents every field) pins the NVIDIA driver, the CUDA
// runtime and libraries, ONNX Runtime and its GPU providers, the devices and the container
// environment. `admit`, `doctor`, the runtime (TensorRT engine cache keys via Fingerprint()) and
// the image audit all read it through this header.
//
// Version syntax (VersionSpec), one string per field:
//   "13.0"            prefix match: equal in every component given (13.0, 13.0.2; not 13.1)
//   "=1.29.0"         exact ("==" too): equal after padding missing components with 0
//   ">=9.1,<10"       comparators >=, >, <=, <, != joined by "," (all must hold)
//   "*"               any version, but the component must be present
// Numbers only ("580.65.06", "10.13.2.6"); whitespace around clauses is ignored.
//
// Failure behaviour: ParseMatrix/LoadMatrix never throw; a malformed file is INVALID_ARG (exit 2)
// whose message names the file, line, column and field; a missing file is NOT_FOUND (exit 2).
// Thread safety: Matrix, Version and VersionSpec are immutable value types once built.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.h"
#include "common/status.h"

namespace tg::policy {

// A dotted numeric version: "580.65.06" -> {580, 65, 6}.
struct Version {
  std::vector<int> parts;
  std::string text;  // as written ("580.65.06"), for messages; "" when built from parts

  // Accepts 1-4 dot-separated non-negative integers (leading/trailing spaces allowed); a trailing
  // non-numeric suffix after a complete number ("12.2-rc1", "1.29.0+cuda") is ignored.
  static std::optional<Version> Parse(std::string_view text);
  int major() const { return parts.empty() ? 0 : parts[0]; }     // 0 when absent
  int minor() const { return parts.size() < 2 ? 0 : parts[1]; }  // 0 when absent
  // <0, 0, >0; missing components compare as 0 ("13" == "13.0.0").
  int Compare(const Version& other) const;
  // Canonical numeric form ("580.65.6"); used in fingerprints.
  std::string ToString() const;
  // As written when parsed, else ToString(); used in messages.
  std::string Display() const { return text.empty() ? ToString() : text; }
  bool operator==(const Version& o) const { return Compare(o) == 0; }  // "13" == "13.0.0"
};

class VersionSpec {
 public:
  // Parses the syntax above. Error: INVALID_ARG whose message says what is wrong with `text`
  // (callers prefix file, line and field).
  static common::Result<VersionSpec> Parse(std::string_view text);

  // Whether `v` satisfies every clause.
  bool Matches(const Version& v) const;
  // False when `version_text` is not a parseable version.
  bool Matches(std::string_view version_text) const;
  // The spec as written, whitespace-normalised ("", never; "*" for any).
  const std::string& text() const { return text_; }
  bool any() const { return clauses_.empty(); }  // "*": every version matches
  // The single major version the spec admits, if it admits exactly one (e.g. "13.0" -> 13,
  // ">=9.1,<10" -> 9); used to name the soname a pinned library must have.
  std::optional<int> SingleMajor() const;

 private:
  enum class Op { kPrefix, kEq, kNe, kGe, kGt, kLe, kLt };
  struct Clause {
    Op op;
    Version v;
  };
  std::vector<Clause> clauses_;
  std::string text_;
};

enum class MigExpectation { kAny, kDisabled, kEnabled };
std::string_view MigExpectationName(MigExpectation m);  // "any" | "disabled" | "enabled"

struct DriverRequirement {
  std::optional<int> branch;       // driver.branch: major of the driver version (580 for 580.65.06)
  std::optional<Version> minimum;  // driver.minimum: lowest acceptable driver version
};

struct CudaRequirement {
  std::optional<VersionSpec> runtime;  // cuda.runtime: libcudart version ("13.0")
  std::optional<VersionSpec> cublas;   // cuda.cublas
};

struct OrtRequirement {
  std::optional<VersionSpec> version;      // onnxruntime.version ("1.29.0")
  std::optional<int> provider_cuda_major;  // onnxruntime.provider_cuda_major (13)
  std::vector<std::string> providers;      // onnxruntime.providers, in priority order
};

struct DeviceRequirement {
  int count = 0;                                  // devices.count: minimum visible devices
  std::optional<Version> min_compute_capability;  // devices.min_compute_capability ("8.0")
  std::optional<std::int64_t> min_memory_mib;     // devices.min_memory_mib, per device
  MigExpectation mig = MigExpectation::kAny;      // devices.mig
};

struct ContainerRequirement {
  // container.driver_capabilities: entries NVIDIA_DRIVER_CAPABILITIES must include ("all" covers
  // every one; unset/empty means the toolkit default "utility,compute").
  std::vector<std::string> driver_capabilities;
  // container.device_nodes: /dev/nvidiactl, /dev/nvidia-uvm and /dev/nvidiaN must exist.
  bool device_nodes = true;
};

struct Matrix {
  std::string name;    // free text ("production", "dev"); not part of the fingerprint
  std::string source;  // file it was read from, or "<embedded production>" / "<embedded dev>"
  // require_gpu: false only in development matrices. Then missing GPU pieces are WARN, never
  // FAIL, and the verdict is DEGRADED (CPU allowed) instead of NOT ACCELERATED. Version drift of
  // what *is* pinned still fails.
  bool require_gpu = true;
  DriverRequirement driver;
  CudaRequirement cuda;
  std::optional<VersionSpec> cudnn;     // cudnn
  std::optional<VersionSpec> tensorrt;  // tensorrt
  OrtRequirement onnxruntime;
  DeviceRequirement devices;
  ContainerRequirement container;

  // Canonical form (every field, sorted keys, specs as normalised text); excludes name/source.
  common::Json ToJson() const;
  // sha256 hex of common::WriteJson(ToJson()): stable across key order, comments and formatting of
  // the file; changes whenever any requirement changes. Used in TensorRT engine cache keys.
  std::string Fingerprint() const;
};

// Parses matrix YAML text; `source` names the file in error messages. Unknown fields, wrong types
// and malformed versions are INVALID_ARG naming source:line:col and the dotted field path.
common::Result<Matrix> ParseMatrix(const std::string& text, const std::string& source);
// Reads (capped at common::kMaxConfigBytes) and parses a matrix file.
common::Result<Matrix> LoadMatrix(const std::string& path);

// The embedded defaults (identical in content to deploy/matrix.production.yaml and
// deploy/matrix.dev.yaml; a test keeps them in sync).
const Matrix& ProductionMatrix();  // parsed once; immutable, valid for the process
const Matrix& DevMatrix();
std::string_view ProductionMatrixYaml();  // the embedded YAML text (static storage)
std::string_view DevMatrixYaml();

// Resolves a matrix spec: "production" -> ProductionMatrix(), "dev" -> DevMatrix(), anything else
// is a matrix file path (LoadMatrix). Not the global --policy, which is a runtime policy that names
// its matrix (cli/policy_option.h ResolveMatrix).
common::Result<Matrix> ResolvePolicyMatrix(const std::string& policy);

}  // namespace tg::policy
