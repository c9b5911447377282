// The merged filesystem of an image (layers applied in order with whiteouts and opaque
// directories), dive-compatible efficiency metrics, and symlink resolution inside the image.
//
// Pure functions over an Image; no IO. Thread-safe (no shared state). Memory: one node per path
// of the final filesystem.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "audit/oci_image.h"

namespace tg::audit {

struct FsNode {
  EntryType type = EntryType::kFile;
  std::uint64_t size = 0;
  int layer = 0;  // layer that last wrote this path
  std::string link;
  std::uint32_t mode = 0;
  std::int64_t mtime = 0;
};

// Sorted by path, so "dir/" prefixes are contiguous ranges.
using FileSystem = std::map<std::string, FsNode>;

// Applies the layers in order: in each layer, opaque markers and whiteouts remove lower content
// first, then the layer's own entries are added (OCI image spec semantics).
FileSystem MergeLayers(const Image& image);

// Bytes of every regular file at or below `path` (a file or a directory).
std::uint64_t SizeUnder(const FileSystem& fs, const std::string& path);

struct Efficiency {
  double score = 1.0;                // Σ smallest copy / Σ all copies (1.0 for an empty image)
  std::uint64_t wasted_bytes = 0;    // all copies of every path seen in >= 2 layers
  std::uint64_t user_bytes = 0;      // file bytes of layers 1..n (dive's "user" layers)
  double user_wasted_percent = 0.0;  // wasted_bytes / user_bytes (0 when no user layers)
  struct Path {
    std::string path;
    int copies = 0;
    std::uint64_t cumulative = 0;
  };
  std::vector<Path> inefficient;  // paths with >= 2 copies, largest cumulative first
  // Per layer, in image order: the bytes of its entries on paths seen in >= 2 layers (what dive
  // lists as the layer's share of the waste); they sum to wasted_bytes.
  std::vector<std::uint64_t> layer_wasted_bytes;
};

// dive's metric: each path's copies across layers (a whiteout counts the bytes it deletes).
Efficiency ComputeEfficiency(const Image& image);
// The same metric and MergeLayers' result (into *merged, replacing its content) in one pass.
Efficiency MergeWithEfficiency(const Image& image, FileSystem* merged);

// Resolves `path` through symlinks inside the image (absolute targets are relative to the image
// root; ".." never leaves it). Returns nullopt on a loop or more than 40 hops.
std::optional<std::string> ResolvePath(const FileSystem& fs, const std::string& path);

}  // namespace tg::audit
