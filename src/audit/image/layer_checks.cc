// The media type is a claim made by whoever wrote the manifest; the magic bytes are what a
// runtime will actually decompress. A disagreement means the image was assembled by hand or
// tampered with, and registries or runtimes that trust the type will fail on it.
#include "audit/image/layer_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>

namespace tg::audit {
namespace {

struct KnownType {
  std::string_view name;
  Compression compression;
};

constexpr std::array<KnownType, 10> kLayerTypes = {{
    {"application/vnd.oci.image.layer.v1.tar", Compression::kNone},
    {"application/vnd.oci.image.layer.v1.tar+gzip", Compression::kGzip},
    {"application/vnd.oci.image.layer.v1.tar+zstd", Compression::kZstd},
    {"application/vnd.oci.image.layer.nondistributable.v1.tar", Compression::kNone},
    {"application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", Compression::kGzip},
    {"application/vnd.oci.image.layer.nondistributable.v1.tar+zstd", Compression::kZstd},
    {"application/vnd.docker.image.rootfs.diff.tar", Compression::kNone},
    {"application/vnd.docker.image.rootfs.diff.tar.gzip", Compression::kGzip},
    {"application/vnd.docker.image.rootfs.foreign.diff.tar", Compression::kNone},
    {"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip", Compression::kGzip},
}};

std::optional<Compression> DeclaredCompression(std::string_view media_type) {
  for (const auto& t : kLayerTypes) {
    if (t.name == media_type) return t.compression;
  }
  return std::nullopt;
}

constexpr const char* kRebuildFix =
    "rebuild or re-push the image with a standard tool (docker buildx, buildah, skopeo copy) so "
    "the manifest describes the layer's real bytes";

Finding LayerFinding(std::string rule, const ImageLayer& l, std::string message,
                     std::string fix = kRebuildFix) {
  return MakeImageFinding(std::move(rule), Severity::kError, l.blob, l.index,
                          l.scan.compressed_bytes, std::move(message), std::move(fix));
}

// Indices of `entries` sorted by path; equal paths keep archive order.
std::vector<std::uint32_t> PathIndex(const std::vector<LayerEntry>& entries) {
  std::vector<std::uint32_t> order(entries.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return entries[a].path < entries[b].path;
  });
  return order;
}

// The first member named `path`, or nullopt.
std::optional<std::uint32_t> FirstNamed(const std::vector<LayerEntry>& entries,
                                        const std::vector<std::uint32_t>& order,
                                        std::string_view path) {
  auto it =
      std::lower_bound(order.begin(), order.end(), path,
                       [&](std::uint32_t i, std::string_view p) { return entries[i].path < p; });
  if (it == order.end() || entries[*it].path != path) return std::nullopt;
  return *it;
}

// Follows hard links from entry `start`; true when the chain comes back to a member it visited.
bool InLoop(const std::vector<LayerEntry>& entries, const std::vector<std::uint32_t>& order,
            std::uint32_t start, std::string* chain) {
  std::vector<std::uint32_t> seen = {start};
  *chain = entries[start].path;
  std::uint32_t cur = start;
  for (int step = 0; step < 64 && entries[cur].type == EntryType::kHardlink; ++step) {
    auto next = FirstNamed(entries, order, entries[cur].link);
    if (!next) return false;
    *chain += " -> ";
    *chain += entries[*next].path;
    if (std::find(seen.begin(), seen.end(), *next) != seen.end()) return true;
    seen.push_back(*next);
    cur = *next;
  }
  return false;
}

// True when a lower layer (below `layer`) holds a member named `path`.
bool InLowerLayer(const std::vector<ImageLayer>& layers, std::size_t layer,
                  std::vector<std::vector<std::uint32_t>>* indexes, std::string_view path) {
  for (std::size_t k = 0; k < layer; ++k) {
    if ((*indexes)[k].size() != layers[k].scan.entries.size()) {
      (*indexes)[k] = PathIndex(layers[k].scan.entries);
    }
    if (FirstNamed(layers[k].scan.entries, (*indexes)[k], path)) return true;
  }
  return false;
}

constexpr const char* kLinkFix =
    "rebuild the layer with a standard tar writer: a hard link must name a regular file stored "
    "before it";

}  // namespace

bool IsKnownLayerMediaType(std::string_view media_type) {
  return DeclaredCompression(media_type).has_value();
}

void CheckLayerMedia(const ImageLayer& l, std::vector<Finding>* out) {
  if (l.scan.compressed_bytes == 0) return;  // never read (an earlier layer hit a limit)
  const Compression actual = l.scan.compression;
  if (l.scan.compression_depth > 1) {
    out->push_back(LayerFinding(
        "image.layer-nested-compression", l,
        fmt::format("layer {} blob {}: the data is {}-compressed {} times (a compressed stream "
                    "inside a compressed stream); runtimes decompress once and then fail to read "
                    "the tar",
                    l.index, l.blob, CompressionName(actual), l.scan.compression_depth)));
  }
  if (l.media_type.empty()) return;
  auto declared = DeclaredCompression(l.media_type);
  if (!declared) {
    out->push_back(LayerFinding(
        "image.layer-media-type", l,
        fmt::format("layer {} blob {}: unknown layer media type '{}'; expected an OCI "
                    "(application/vnd.oci.image.layer.v1.tar[+gzip|+zstd]) or Docker "
                    "(application/vnd.docker.image.rootfs.diff.tar.gzip) layer type; the bytes "
                    "are {}",
                    l.index, l.blob, l.media_type,
                    actual == Compression::kNone
                        ? std::string("an uncompressed tar")
                        : fmt::format("{} data", CompressionName(actual)))));
    return;
  }
  if (*declared != actual) {
    out->push_back(LayerFinding(
        "image.layer-compression-mismatch", l,
        fmt::format("layer {} blob {}: media type '{}' declares {} compression, but the magic "
                    "bytes are {}",
                    l.index, l.blob, l.media_type, CompressionName(*declared),
                    CompressionName(actual))));
  }
}

void CheckHardLinks(const std::vector<ImageLayer>& layers, std::vector<Finding>* out) {
  std::vector<std::vector<std::uint32_t>> indexes(layers.size());
  for (std::size_t li = 0; li < layers.size(); ++li) {
    const auto& entries = layers[li].scan.entries;
    const bool any = std::any_of(entries.begin(), entries.end(), [](const LayerEntry& e) {
      return e.type == EntryType::kHardlink;
    });
    if (!any) continue;
    if (indexes[li].size() != entries.size()) indexes[li] = PathIndex(entries);
    const auto& order = indexes[li];
    const int layer = layers[li].index;
    for (std::uint32_t i = 0; i < entries.size(); ++i) {
      const LayerEntry& e = entries[i];
      if (e.type != EntryType::kHardlink) continue;
      auto target = FirstNamed(entries, order, e.link);
      std::string message;
      std::string chain;
      if (target && InLoop(entries, order, i, &chain)) {
        message = fmt::format("hard-link loop: {}; no member in the loop holds data", chain);
      } else if (target && *target > i) {
        message = fmt::format(
            "hard link {} -> {}: the target is stored later in the layer (member {} of {}, the "
            "link is member {}); an extractor cannot link to a file it has not written yet",
            e.path, e.link, *target + 1, entries.size(), i + 1);
      } else if (!target && !InLowerLayer(layers, li, &indexes, e.link)) {
        message = fmt::format(
            "hard link {} -> {}: no member {} exists in this layer or any layer below it", e.path,
            e.link, e.link);
      } else {
        continue;
      }
      out->push_back(MakeImageFinding("image.hardlink-broken", Severity::kError,
                                      std::string(e.path), layer, 0, std::move(message), kLinkFix));
    }
  }
}

}  // namespace tg::audit
