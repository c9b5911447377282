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

#include <string>
#include <vector>

#include "common/config.h"
#include "common/status.h"

namespace tg::policy {

struct DiffEntry {
  enum class Kind { kChanged, kAdded, kRemoved };
  Kind kind;
  std::string path;     // "nvml.devices[0].memory_total_bytes"
  common::Json before;  // null for kAdded
  common::Json after;   // null for kRemoved
};
std::string_view DiffKindName(DiffEntry::Kind k);  // "changed" | "added" | "removed"

// Paths ignored by default: fields that differ between any two runs.
const std::vector<std::string>& DefaultDiffIgnores();

// Structural diff of two JSON trees. `ignore` holds paths (exact, or a prefix followed by "."
// or "[") whose differences are not reported.
std::vector<DiffEntry> DiffJson(const common::Json& a, const common::Json& b,
                                const std::vector<std::string>& ignore = DefaultDiffIgnores());

// Loads and validates two snapshot files, then diffs them. Errors (missing file, bad JSON, wrong
// field) are INVALID_ARG / NOT_FOUND naming the file; an empty `ignore` entry (or one starting
// with '.' or '[') is INVALID_ARG, since it would hide every difference.
common::Result<std::vector<DiffEntry>> DiffSnapshotFiles(const std::string& a_path,
                                                         const std::string& b_path,
                                                         const std::vector<std::string>& ignore);

// {"equal", "changed", "added", "removed" (counts), "differences": [{"kind", "path", "before"
// (not for added), "after" (not for removed)}, ...] in diff order}.
common::Json DiffToJson(const std::vector<DiffEntry>& diff);
// One element of DiffToJson's "differences" (for writers that stream them). Pure.
common::Json DiffEntryToJson(const DiffEntry& d);
// "~ path: before -> after" / "+ path: value" / "- path: value", one per line.
std::string DiffToText(const std::vector<DiffEntry>& diff);

}  // namespace tg::policy
