// The image audit's rules: the audit policy (budgets, thresholds, rule switches), the static
// capability snapshot (CUDA/cuBLAS/cuDNN/TensorRT/ONNX Runtime versions from the image's file
// names), and the rule functions that turn a merged filesystem into Findings.
//
// Rule ids (docs/AUDIT_IMAGE.md explains each and its fix):
//   image.budget, image.budget.compressed, image.budget.layer, image.efficiency,
//   image.wasted-bytes, image.user-wasted-percent, image.build-tools, image.headers,
//   image.dev-packages, image.notebooks, image.tests, image.caches, image.vcs, image.secrets,
//   image.gpu.driver-libs, image.gpu.visible-devices, image.gpu.driver-capabilities,
//   image.gpu.require-cuda, image.gpu.disable-require, image.gpu.cuda-version, image.matrix,
//   image.hostile.* (reader), image.hostile.symlink-loop, image.history-mismatch; the ONNX
//   Runtime pair rules image.ort.* live in image_ort.h.
//
// Failure behaviour: LoadImagePolicy returns INVALID_ARG naming file:line:col and field for a
// malformed policy; the rule functions cannot fail. Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "audit/image/image_fs.h"
#include "audit/image/oci_image.h"
#include "audit/report/finding.h"
#include "common/config.h"
#include "policy/matrix.h"

namespace tg::audit {

inline constexpr std::uint64_t kDefaultImageBudget = 2ull << 30;  // 2 GiB uncompressed

struct ImagePolicy {
  std::string source;                   // file it came from, "" for defaults
  std::optional<std::uint64_t> budget;  // total uncompressed bytes (default 2 GiB)
  std::optional<std::uint64_t> compressed_budget;
  std::optional<std::uint64_t> layer_budget;  // per layer, uncompressed
  double lowest_efficiency = 0.9;             // dive's lowestEfficiency
  std::optional<std::uint64_t> highest_wasted_bytes;
  double highest_user_wasted_percent = 0.1;  // dive's highestUserWastedPercent
  Severity fail_on = Severity::kError;
  std::set<std::string> disabled;            // rule ids (a trailing ".*" disables a family)
  std::map<std::string, Severity> severity;  // per-rule overrides
  ReaderLimits limits;
};

// What `--policy FILE` held: an audit policy (top-level `image:`, and `dockerfile:`/`k8s:` for the
// other audits, ignored here) or, when the file is a version matrix instead, that matrix.
struct LoadedPolicy {
  ImagePolicy image;
  std::optional<policy::Matrix> matrix;
};
common::Result<LoadedPolicy> LoadImagePolicy(const std::string& path);
common::Result<ImagePolicy> ParseImagePolicy(const std::string& yaml_text,
                                             const std::string& source);

struct Component {
  std::string version;  // best version seen ("12.4.127", "9" when only the soname major is known)
  std::string path;     // file it came from
  int layer = -1;
  std::uint64_t bytes = 0;
  std::vector<std::string> all_versions;  // every distinct version seen, sorted
};

// The image's static GPU capability: which libraries ship, at which versions, plus the NVIDIA_*
// and CUDA_* environment of the config.
struct CapabilitySnapshot {
  std::map<std::string, Component> components;  // "cuda-runtime", "cublas", "cudnn", ...
  std::map<std::string, std::string> env;
  bool gpu_image = false;  // ships GPU libraries or sets CUDA_VERSION
};
CapabilitySnapshot BuildSnapshot(const Image& image, const FileSystem& fs);  // pure
common::Json SnapshotToJson(const CapabilitySnapshot& snap);                 // pure

// Paths whose contents the rules need (dpkg status databases).
bool CaptureForRules(std::string_view path);

// File-content rules over the merged filesystem.
std::vector<Finding> RunFileRules(const Image& image, const FileSystem& fs);
// NVIDIA container environment rules, and the snapshot against `matrix` when given.
std::vector<Finding> RunGpuRules(const Image& image, const FileSystem& fs,
                                 const CapabilitySnapshot& snap, const policy::Matrix* matrix);

// Applies the policy's disabled rules and severity overrides (drops or rewrites findings).
std::vector<Finding> ApplyPolicy(std::vector<Finding> findings, const ImagePolicy& policy);

}  // namespace tg::audit
