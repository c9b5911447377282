// Capability diff of two snapshots (two nodes, two images, before/after an upgrade).
//
// Both documents are first validated with probe::SnapshotFromJson (so a malformed file is a usage
// error naming file and field, never a confusing diff), then compared as JSON trees. Changes are
// reported by dotted path: objects by key, arrays of records by their identifying field when every
// element has one (env[NVIDIA_VISIBLE_DEVICES],
// onnxruntime.provider_libraries[CUDAExecutionProvider], cudnn.sub_libraries[libcudnn_ops.so.9])
// and otherwise by index. Fields that differ on every run (taken_at) are ignored, as is any path
// the caller lists.
//
// Pure functions over values; thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/status.h"

namespace tg::policy {

// One difference. `before` and `after` point into the two documents that were compared (no
// value is copied: a diff of whole devices would otherwise hold a second copy of each), so an
// entry is valid only while those documents are alive and unchanged.
struct DiffEntry {
  enum class Kind { kChanged, kAdded, kRemoved };
  Kind kind;
  std::string path;                     // "nvml.devices[0].memory_total_bytes"
  const common::Json* before{nullptr};  // nullptr for kAdded
  const common::Json* after{nullptr};   // nullptr for kRemoved
};
std::string_view DiffKindName(DiffEntry::Kind k);  // "changed" | "added" | "removed"

// Paths ignored by default: fields that differ between any two runs.
const std::vector<std::string>& DefaultDiffIgnores();

// Structural diff of two JSON trees. `ignore` holds paths (exact, or a prefix followed by "."
// or "[") whose differences are not reported. The entries point into `a` and `b`: the caller
// keeps both alive and unchanged while it uses them.
std::vector<DiffEntry> DiffJson(const common::Json& a, const common::Json& b,
                                const std::vector<std::string>& ignore = DefaultDiffIgnores());

// The diff of two snapshot files: the two normalised documents and the entries that point into
// them. Movable (the documents are held by pointer, so the entries stay valid).
struct SnapshotDiff {
  std::unique_ptr<const common::Json> a, b;
  std::vector<DiffEntry> entries;
};

// Loads and validates two snapshot files, then diffs them. Errors (missing file, bad JSON, wrong
// field) are INVALID_ARG / NOT_FOUND naming the file; an empty `ignore` entry (or one starting
// with '.' or '[') is INVALID_ARG, since it would hide every difference. Each file's parsed and
// typed forms are released once its normalised document is built.
common::Result<SnapshotDiff> DiffSnapshotFiles(const std::string& a_path, const std::string& b_path,
                                               const std::vector<std::string>& ignore);

// {"equal", "changed", "added", "removed" (counts), "differences": [{"kind", "path", "before"
// (not for added), "after" (not for removed)}, ...] in diff order}.
common::Json DiffToJson(const std::vector<DiffEntry>& diff);
// One element of DiffToJson's "differences" (for writers that stream them). Pure.
common::Json DiffEntryToJson(const DiffEntry& d);
// "~ path: before -> after" / "+ path: value" / "- path: value", one per line; values longer
// than 200 characters are shortened. DiffLine is one entry's line (with its newline), for
// writers that stream them; DiffToText their concatenation.
std::string DiffLine(const DiffEntry& d);
std::string DiffToText(const std::vector<DiffEntry>& diff);

}  // namespace tg::policy
