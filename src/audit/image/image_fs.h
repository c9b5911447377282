// The merged filesystem of an image (layers applied in order with whiteouts and opaque
// directories), dive-compatible efficiency metrics, and symlink resolution inside the image.
//
// Pure functions over an Image; no IO. Thread-safe (no shared state). Memory: 16 bytes per path
// of the final filesystem: a node views the layer entry that last wrote its path (the entry and
// its names stay in the Image's layer scans), so a FileSystem is valid only while the Image it
// was merged from is alive and unchanged.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/image/oci_image.h"

namespace tg::audit {

// One path of the merged filesystem: the entry that last wrote it, and that layer's index.
class FsNode {
 public:
  FsNode(const LayerEntry* entry, int layer) : entry_(entry), layer_(layer) {}
  std::string_view path() const { return entry_->path; }
  EntryType type() const { return entry_->type; }
  std::uint64_t size() const { return entry_->size; }
  std::string_view link() const { return entry_->link; }
  std::uint32_t mode() const { return entry_->mode; }
  std::int64_t mtime() const { return entry_->mtime; }
  int layer() const { return layer_; }  // layer that last wrote this path

 private:
  const LayerEntry* entry_;
  int layer_;
};

// The paths of the final filesystem, sorted (byte order, as std::string compares), so "dir/"
// prefixes are contiguous ranges. Read-only once merged; iterators are plain vector iterators.
class FileSystem {
 public:
  using const_iterator = std::vector<FsNode>::const_iterator;
  const_iterator begin() const { return nodes_.begin(); }
  const_iterator end() const { return nodes_.end(); }
  std::size_t size() const { return nodes_.size(); }
  bool empty() const { return nodes_.empty(); }
  // The node of `path`, or end().
  const_iterator find(std::string_view path) const;
  // The first node whose path is not less than `path`.
  const_iterator lower_bound(std::string_view path) const;
  std::size_t count(std::string_view path) const { return find(path) == end() ? 0 : 1; }

 private:
  friend class FsMerger;
  std::vector<FsNode> nodes_;
};

// Applies the layers in order: in each layer, opaque markers and whiteouts remove lower content
// first, then the layer's own entries are added (OCI image spec semantics).
FileSystem MergeLayers(const Image& image);

// Bytes of every regular file at or below `path` (a file or a directory).
std::uint64_t SizeUnder(const FileSystem& fs, std::string_view path);

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
// *merged views `image` (see FileSystem).
Efficiency MergeWithEfficiency(const Image& image, FileSystem* merged);

// Resolves `path` through symlinks inside the image (absolute targets are relative to the image
// root; ".." never leaves it). Returns nullopt on a loop or more than 40 hops.
std::optional<std::string> ResolvePath(const FileSystem& fs, std::string_view path);

}  // namespace tg::audit
