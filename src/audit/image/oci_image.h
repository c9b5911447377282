// Reads a container image without a daemon: `docker save` tarballs (legacy manifest.json +
// <id>/layer.tar, and Docker >= 25's OCI layout inside the tar), OCI image layout directories
// (oci-layout, index.json -> manifest -> config + layers) and OCI archives (a tar of a layout).
// Tar inputs are read in two passes: a metadata pass over the headers, then the layers. In an
// uncompressed tar each layer is read from its own byte range [offset, offset + size) of the
// file (found in the metadata pass), so plain layers are seeked exactly like OCI layout blobs; a
// compressed outer tar (`docker save | gzip`) is streamed a second time, layers in archive order.
// The image is never extracted and memory holds only JSON documents and layer entry lists.
//
// Errors: NOT_FOUND for a missing path (or blob file of a layout); INVALID_ARG naming the file and
// what was wrong for anything unreadable, corrupt, truncated or inconsistent (missing manifest,
// blob, config, bad digest); UNAVAILABLE when this machine could not serve the read (out of
// memory or descriptors, a device I/O error; FileErrorStatus and ArchiveErrorStatus in
// layer_scan.h). Stateless functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "audit/image/layer_scan.h"
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
  // What the blob's bytes must hash to: the descriptor digest (OCI, Docker >= 25) or, for legacy
  // saves (whose layer.tar is the uncompressed layer), the config's diff_id. "" = unknown.
  std::string expected_digest;
  // The digest computed while reading (only with ReadOptions::verify_layer_digests), else "".
  std::string actual_digest;
  // True when the blob was pulled through the outer archive's reader (a compressed outer tar);
  // false when it was read from its own byte range of the file (layout blobs, plain tars), which
  // lets plain layers seek over file data the way `tar -tvf` does.
  bool streamed = false;
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

struct ReadOptions {
  // Hash every layer blob while it is read and compare with ImageLayer::expected_digest. Costs
  // reading (instead of seeking over) the data of uncompressed layers; see docs/AUDIT_IMAGE.md.
  // Manifests, indexes and configs (small) are always checked against their descriptors, and
  // descriptor sizes of layers always against the blob's size.
  bool verify_layer_digests = false;
};

// Reads the image at `path` (a tar file or a layout directory) with the given limits; file
// contents matching `capture` (normalised paths) are kept in each layer's scan. A blob whose
// digest or size differs from its descriptor is an `image.digest-mismatch` finding (error) in
// Image::findings, naming the blob, the expected and the actual value; the image is still read.
common::Result<Image> ReadImage(const std::string& path, const ReaderLimits& limits,
                                const CaptureSpec& capture, const ReadOptions& options = {});

}  // namespace tg::audit
