// Reads a container image without a daemon: `docker save` tarballs (legacy manifest.json +
// <id>/layer.tar, and Docker >= 25's OCI layout inside the tar), OCI image layout directories
// (oci-layout, index.json -> manifest -> config + layers) and OCI archives (a tar of a layout).
// Tar inputs are read in two sequential passes (metadata, then layers in archive order), so the
// image is never extracted and memory holds only JSON documents and layer entry lists.
//
// Errors: NOT_FOUND for a missing path; INVALID_ARG naming the file and what was wrong for
// anything unreadable, corrupt, truncated or inconsistent (missing manifest, blob, config, bad
// digest). Stateless functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "audit/layer_scan.h"
#include "common/config.h"
#include "common/status.h"

namespace tg::audit {

enum class ImageFormat { kDockerLegacy, kDockerOci, kOciArchive, kOciLayout };
// "docker-save" | "docker-save-oci" | "oci-archive" | "oci-layout".
std::string_view ImageFormatName(ImageFormat f);

struct HistoryEntry {
  std::string created_by;
  std::string created;
  bool empty_layer = false;
  int layer = -1;  // index into Image::layers, -1 for empty_layer entries
};

struct ImageLayer {
  int index = 0;
  std::string digest;      // blob digest ("sha256:...") or, for legacy saves, the tar member
  std::string diff_id;     // from config rootfs.diff_ids (not verified)
  std::string media_type;  // descriptor media type ("" for legacy saves)
  std::string blob;        // member name inside the tar, or path inside the layout directory
  std::uint64_t declared_size = 0;  // descriptor size (or member size)
  std::string created_by;           // from the mapped history entry
  LayerScan scan;
};

struct Image {
  std::string source;  // the path given
  ImageFormat format = ImageFormat::kOciLayout;
  std::string config_digest;
  common::Json config;
  std::vector<std::string> repo_tags;
  std::map<std::string, std::string> env;  // config.config.Env parsed ("K=V"; later wins)
  std::vector<HistoryEntry> history;
  std::vector<ImageLayer> layers;
  std::vector<Finding> findings;  // reader findings (hostile content, history mismatch)
};

// Reads the image at `path` (a tar file or a layout directory) with the given limits; file
// contents matching `capture` (normalised paths) are kept in each layer's scan.
common::Result<Image> ReadImage(const std::string& path, const ReaderLimits& limits,
                                const CapturePredicate& capture);

}  // namespace tg::audit
