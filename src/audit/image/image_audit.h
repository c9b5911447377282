// `truegreen audit image`: reads an image (oci_image.h), merges its layers (image_fs.h), runs the
// budget, efficiency, file and GPU rules (image_rules.h) and renders the report; and
// `audit image A B --diff`: file-level and capability-snapshot diff of two images.
//
// Failure behaviour: AuditImage returns the reader's Status for unreadable/corrupt input (exit 2);
// everything found inside a readable image is a Finding, including blobs whose digest or size
// differs from their descriptor (`image.digest-mismatch`, error -> exit 6). Thread safety: no
// shared state; independent audits may run concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "audit/image/image_fs.h"
#include "audit/image/image_ort.h"
#include "audit/image/image_rules.h"
#include "audit/image/oci_image.h"
#include "audit/report/finding.h"
#include "common/config.h"
#include "policy/matrix.h"

namespace tg::audit {

struct ImageAuditOptions {
  ImagePolicy policy;                    // budgets, thresholds, rule switches, reader limits
  std::optional<std::uint64_t> budget;   // --budget (overrides policy.budget)
  std::optional<policy::Matrix> matrix;  // --matrix (or a matrix given as --policy FILE)
  bool verify_digests = false;           // --verify-digests: hash every layer blob (slower)
  // Loads an ORT core extracted from the image (in a child process; the CLI supplies it). Empty:
  // the core/provider pair is reported as image.ort.unchecked, giving ort_inspect_off as why.
  OrtCoreInspector ort_inspect;
  std::string ort_inspect_off = "loading the image's core to read its build flavour is not enabled";
};

struct LayerSummary {
  int index = 0;
  std::string digest;
  std::string created_by;
  std::string compression;
  std::uint64_t compressed_bytes = 0;
  std::uint64_t uncompressed_bytes = 0;
  std::uint64_t file_bytes = 0;  // Σ declared sizes of regular files in the layer
  std::size_t entries = 0;
  bool digest_verified = false;  // hashed and equal to its digest (--verify-digests)
  bool streamed = false;         // pulled through a compressed outer tar instead of seeked
};

struct ImageAuditReport {
  std::string source;
  std::string format;
  std::string config_digest;
  std::vector<LayerSummary> layers;
  std::vector<HistoryEntry> history;
  std::uint64_t total_bytes = 0;  // Σ uncompressed layer sizes
  std::uint64_t total_compressed_bytes = 0;
  std::uint64_t budget = 0;
  std::uint64_t files = 0;  // regular files in the final filesystem
  bool verify_digests = false;
  Efficiency efficiency;
  CapabilitySnapshot snapshot;
  OrtPairReport ort;  // the ONNX Runtime core/provider pair (image_ort.h)
  std::vector<Finding> findings;
  Severity fail_on = Severity::kError;
  bool failed = false;  // a finding at or above fail_on
  // The image as read, shared by copies of the report: `fs` views its layer entries.
  std::shared_ptr<const Image> image;
  FileSystem fs;  // the merged filesystem (for --diff)
};

// Reads the image at `path` (a docker-save tar, OCI layout or OCI archive; image_ref.h resolves
// transports first), streaming the ONNX Runtime libraries it holds into a private temporary
// folder removed before returning, and runs every rule. Errors: the reader's, unchanged (NOT_FOUND,
// INVALID_ARG naming the file, UNAVAILABLE when the machine could not serve a read; oci_image.h),
// UNAVAILABLE when the temporary folder cannot be created.
common::Result<ImageAuditReport> AuditImage(const std::string& path,
                                            const ImageAuditOptions& options);

// The report as `audit image --json` prints it, and as text. Never fail.
common::Json ReportToJson(const ImageAuditReport& r);
std::string ReportToText(const ImageAuditReport& r);

struct FileChange {
  std::string path;
  std::string kind;  // "added" | "removed" | "changed"
  std::uint64_t size_a = 0;
  std::uint64_t size_b = 0;
  std::string detail;  // what changed: "size", "type", "link", "mode"
};
struct ComponentChange {
  std::string component;
  std::string a;  // "" = absent
  std::string b;
};
struct ImageDiff {
  std::vector<FileChange> files;  // sorted by path
  std::uint64_t added_bytes = 0, removed_bytes = 0;
  std::int64_t changed_delta = 0;
  std::vector<ComponentChange> components;  // differing snapshot components and env
  std::int64_t total_delta = 0;             // b.total_bytes - a.total_bytes
};
ImageDiff DiffImages(const ImageAuditReport& a, const ImageAuditReport& b);  // all three pure
common::Json DiffToJson(const ImageAuditReport& a, const ImageAuditReport& b, const ImageDiff& d);
std::string DiffToText(const ImageAuditReport& a, const ImageAuditReport& b, const ImageDiff& d);

}  // namespace tg::audit
