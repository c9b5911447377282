// Image formats -> one Image model. OCI resolution (index -> manifest -> config/layers) is shared
// by layout directories and tars; only blob access differs.
#include "audit/image/oci_image.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <optional>
#include <set>

#include "audit/image/layer_checks.h"
#include "common/file_util.h"
#include "common/strings.h"

namespace tg::audit {

using common::Json;
using common::Result;
using common::Status;

std::string_view ImageFormatName(ImageFormat f) {
  switch (f) {
    case ImageFormat::kDockerLegacy:
      return "docker-save";
    case ImageFormat::kDockerOci:
      return "docker-save-oci";
    case ImageFormat::kOciArchive:
      return "oci-archive";
    case ImageFormat::kOciLayout:
      return "oci-layout";
  }
  return "oci-layout";
}

namespace {

constexpr std::uint64_t kMaxJsonBytes = common::kMaxConfigBytes;
// Blobs up to this size are peeked in the metadata pass to find manifests and configs.
constexpr std::uint64_t kMaxPeekBlob = 4ull << 20;

// Reads a small metadata document by its path relative to the image root.
using SmallReader = std::function<Result<std::string>(const std::string& rel)>;

struct Descriptor {
  std::string media_type;
  std::string digest;
  std::uint64_t size = 0;
  Json platform;
};

bool IsHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// "sha256:<64 hex>" -> "blobs/sha256/<hex>"; anything else (path tricks included) is refused.
Result<std::string> BlobPath(const std::string& digest, const std::string& where) {
  auto colon = digest.find(':');
  std::string alg = colon == std::string::npos ? "" : digest.substr(0, colon);
  std::string hex = colon == std::string::npos ? "" : digest.substr(colon + 1);
  bool ok = (alg == "sha256" && hex.size() == 64 && IsHex(hex)) ||
            (alg == "sha512" && hex.size() == 128 && IsHex(hex));
  if (!ok) {
    return Status::InvalidArg(fmt::format(
        "{}: invalid digest '{}': expected sha256:<64 hex> or sha512:<128 hex>", where, digest));
  }
  return fmt::format("blobs/{}/{}", alg, hex);
}

Result<Descriptor> ParseDescriptor(const Json& j, const std::string& where) {
  if (!j.is_object()) return Status::InvalidArg(where + ": descriptor is not an object");
  Descriptor d;
  if (!j.contains("digest") || !j["digest"].is_string()) {
    return Status::InvalidArg(where + ": descriptor has no string 'digest'");
  }
  d.digest = j["digest"].get<std::string>();
  if (j.contains("mediaType") && j["mediaType"].is_string()) {
    d.media_type = j["mediaType"].get<std::string>();
  }
  if (j.contains("size") && j["size"].is_number_unsigned()) d.size = j["size"].get<std::uint64_t>();
  if (j.contains("platform")) d.platform = j["platform"];
  return d;
}

Result<Json> ReadJson(const SmallReader& read, const std::string& rel, const std::string& source) {
  TG_ASSIGN_OR_RETURN(std::string text, read(rel));
  return common::ParseJson(text, fmt::format("{}:{}", source, rel));
}

constexpr const char* kTamperedFix =
    "the image was modified or corrupted after it was written: fetch or save it again from a "
    "trusted source and do not ship this copy";

Finding DigestMismatch(std::string path, int layer, std::uint64_t bytes, std::string message) {
  return MakeImageFinding("image.digest-mismatch", Severity::kError, std::move(path), layer, bytes,
                          std::move(message), kTamperedFix);
}

// Compares a small document with the digest (and size, when given) that named it. The blob path
// is derived from the digest, so this is what catches a blob edited in place.
void CheckDocument(const std::string& text, const std::string& digest, std::uint64_t size,
                   const std::string& what, const std::string& rel, std::vector<Finding>* out) {
  std::string alg = digest.substr(0, digest.find(':'));
  auto actual = DigestOf(alg, text);
  if (!actual.ok()) return;  // BlobPath already refused anything but sha256/sha512
  if (*actual != digest) {
    out->push_back(
        DigestMismatch(rel, -1, text.size(),
                       fmt::format("{} {}: content hashes to {}, but it is referenced as {}", what,
                                   rel, *actual, digest)));
  } else if (size != 0 && size != text.size()) {
    out->push_back(DigestMismatch(rel, -1, text.size(),
                                  fmt::format("{} {}: {} bytes, but its descriptor declares {}",
                                              what, rel, text.size(), size)));
  }
}

// Reads a document named by a descriptor, checks it against the descriptor, parses it.
Result<Json> ReadDescribed(const SmallReader& read, const std::string& rel, const Descriptor& d,
                           const std::string& what, const std::string& source,
                           std::vector<Finding>* findings) {
  TG_ASSIGN_OR_RETURN(std::string text, read(rel));
  CheckDocument(text, d.digest, d.size, what, rel, findings);
  return common::ParseJson(text, fmt::format("{}:{}", source, rel));
}

struct Resolved {
  Json config;
  std::string config_digest;
  std::vector<Descriptor> layers;
  std::vector<std::string> layer_blobs;
  std::vector<std::string> repo_tags;
  bool legacy = false;            // docker save manifest.json: layers are checked by diff_id
  std::vector<Finding> findings;  // manifest/index/config digest mismatches
};

// Picks linux/amd64 when an index lists several platforms, else the first manifest.
Result<Descriptor> ChooseManifest(const Json& index, const std::string& where) {
  if (!index.is_object() || !index.contains("manifests") || !index["manifests"].is_array() ||
      index["manifests"].empty()) {
    return Status::InvalidArg(where + ": 'manifests' is missing or empty");
  }
  const Json& ms = index["manifests"];
  std::size_t pick = 0;
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const Json& p = ms[i].value("platform", Json::object());
    if (p.is_object() && p.value("os", "") == "linux" && p.value("architecture", "") == "amd64") {
      pick = i;
      break;
    }
  }
  return ParseDescriptor(ms[pick], fmt::format("{}: manifests[{}]", where, pick));
}

Result<Resolved> ResolveOci(const SmallReader& read, const std::string& source) {
  TG_ASSIGN_OR_RETURN(Json index, ReadJson(read, "index.json", source));
  std::string where = source + ":index.json";
  TG_ASSIGN_OR_RETURN(Descriptor d, ChooseManifest(index, where));
  std::vector<Finding> findings;
  for (int depth = 0;; ++depth) {
    if (depth > 4) return Status::InvalidArg(where + ": image indexes nested too deeply");
    TG_ASSIGN_OR_RETURN(std::string rel, BlobPath(d.digest, where));
    TG_ASSIGN_OR_RETURN(Json doc, ReadDescribed(read, rel, d, "manifest", source, &findings));
    where = fmt::format("{}:{}", source, rel);
    if (doc.is_object() && doc.contains("manifests")) {
      TG_ASSIGN_OR_RETURN(d, ChooseManifest(doc, where));
      continue;
    }
    if (!doc.is_object() || !doc.contains("config") || !doc.contains("layers") ||
        !doc["layers"].is_array()) {
      return Status::InvalidArg(where + ": not an image manifest (needs 'config' and 'layers')");
    }
    Resolved r;
    TG_ASSIGN_OR_RETURN(Descriptor cfg, ParseDescriptor(doc["config"], where + ": config"));
    TG_ASSIGN_OR_RETURN(std::string cfg_rel, BlobPath(cfg.digest, where + ": config"));
    TG_ASSIGN_OR_RETURN(r.config, ReadDescribed(read, cfg_rel, cfg, "config", source, &findings));
    r.config_digest = cfg.digest;
    r.findings = std::move(findings);
    for (std::size_t i = 0; i < doc["layers"].size(); ++i) {
      std::string lw = fmt::format("{}: layers[{}]", where, i);
      TG_ASSIGN_OR_RETURN(Descriptor l, ParseDescriptor(doc["layers"][i], lw));
      TG_ASSIGN_OR_RETURN(std::string lrel, BlobPath(l.digest, lw));
      r.layers.push_back(std::move(l));
      r.layer_blobs.push_back(std::move(lrel));
    }
    return r;
  }
}

Result<Resolved> ResolveLegacy(const SmallReader& read, const std::string& source,
                               const std::map<std::string, std::uint64_t>& sizes) {
  TG_ASSIGN_OR_RETURN(Json m, ReadJson(read, "manifest.json", source));
  std::string where = source + ":manifest.json";
  if (!m.is_array() || m.empty() || !m[0].is_object()) {
    return Status::InvalidArg(where + ": expected a non-empty array of image entries");
  }
  const Json& e = m[0];
  if (!e.contains("Config") || !e["Config"].is_string()) {
    return Status::InvalidArg(where + ": entry 0 has no string 'Config'");
  }
  if (!e.contains("Layers") || !e["Layers"].is_array()) {
    return Status::InvalidArg(where + ": entry 0 has no 'Layers' array");
  }
  Resolved r;
  bool abs = false;
  auto cfg = NormalizeMemberName(e["Config"].get<std::string>(), &abs);
  if (!cfg) return Status::InvalidArg(where + ": 'Config' path escapes the archive");
  TG_ASSIGN_OR_RETURN(std::string cfg_text, read(*cfg));
  TG_ASSIGN_OR_RETURN(r.config, common::ParseJson(cfg_text, fmt::format("{}:{}", source, *cfg)));
  r.config_digest = *cfg;
  r.legacy = true;
  // Legacy saves name the config "<sha256 hex>.json": that name is its digest.
  std::string base(common::Basename(*cfg));
  if (base.size() == 64 + 5 && base.ends_with(".json") && IsHex(base.substr(0, 64))) {
    CheckDocument(cfg_text, "sha256:" + base.substr(0, 64), 0, "config", *cfg, &r.findings);
  }
  for (std::size_t i = 0; i < e["Layers"].size(); ++i) {
    const Json& l = e["Layers"][i];
    auto p = l.is_string() ? NormalizeMemberName(l.get<std::string>(), &abs) : std::nullopt;
    if (!p) return Status::InvalidArg(fmt::format("{}: Layers[{}] is not a valid path", where, i));
    Descriptor d;
    d.digest = *p;
    auto it = sizes.find(*p);
    d.size = it == sizes.end() ? 0 : it->second;
    r.layers.push_back(d);
    r.layer_blobs.push_back(*p);
  }
  if (e.contains("RepoTags") && e["RepoTags"].is_array()) {
    for (const auto& t : e["RepoTags"]) {
      if (t.is_string()) r.repo_tags.push_back(t.get<std::string>());
    }
  }
  return r;
}

// ---- tar access ---------------------------------------------------------------------------------

Result<ArchiveReadPtr> OpenOuter(const std::string& path) {
  ArchiveReadPtr a(archive_read_new());
  if (!a) return Status::Unavailable("archive_read_new failed");
  archive_read_support_format_tar(a.get());
  archive_read_support_filter_gzip(a.get());
  archive_read_support_filter_zstd(a.get());
  if (archive_read_open_filename(a.get(), path.c_str(), 1 << 20) != ARCHIVE_OK) {
    const char* e = archive_error_string(a.get());
    return ArchiveErrorStatus(
        a.get(), fmt::format("{}: not a readable tar archive: {}", path, e ? e : "unknown error"));
  }
  return a;
}

struct TarIndex {
  std::map<std::string, std::uint64_t> sizes;
  std::map<std::string, std::string> small;
  // Where each regular member's data lies in the file: (offset, size). Filled only for an
  // uncompressed outer tar (a compressed one has no stable file offsets) and never for sparse
  // members, whose data is not one contiguous range. A name stored twice keeps its first
  // member, the one the streaming path reads.
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> ranges;
  // Symbolic-link members: normalised name -> target as written (docker save links a layer
  // stored twice to its first copy).
  std::map<std::string, std::string> symlinks;
};

bool LooksLikeMetadata(const std::string& name, std::uint64_t size) {
  if (size > kMaxJsonBytes) return false;
  if (name == "index.json" || name == "manifest.json" || name == "oci-layout" ||
      name == "repositories" || name.ends_with(".json")) {
    return true;
  }
  return name.starts_with("blobs/") && size <= kMaxPeekBlob;
}

Result<TarIndex> IndexTar(const std::string& path) {
  TG_ASSIGN_OR_RETURN(ArchiveReadPtr a, OpenOuter(path));
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int e = errno;
    return FileErrorStatus(e, fmt::format("{}: cannot stat: {}", path, std::strerror(e)));
  }
  const auto file_size = static_cast<std::uint64_t>(st.st_size);
  TarIndex idx;
  struct archive_entry* entry = nullptr;
  for (;;) {
    int r = archive_read_next_header(a.get(), &entry);
    if (r == ARCHIVE_EOF) break;
    if (r == ARCHIVE_RETRY) continue;
    if (r == ARCHIVE_FATAL) {
      const char* e = archive_error_string(a.get());
      return ArchiveErrorStatus(
          a.get(), fmt::format("{}: corrupt or truncated archive after {} members: {}", path,
                               idx.sizes.size(), e ? e : "unknown error"));
    }
    const char* raw = archive_entry_pathname(entry);
    bool abs = false;
    auto name = NormalizeMemberName(raw ? raw : "", &abs);
    if (!name || name->empty()) continue;  // unreachable by any manifest reference
    if (archive_entry_filetype(entry) == AE_IFLNK) {
      const char* target = archive_entry_symlink(entry);
      idx.symlinks[*name] = target ? target : "";
    }
    if (archive_entry_filetype(entry) != AE_IFREG) continue;
    std::uint64_t size =
        archive_entry_size(entry) > 0 ? static_cast<std::uint64_t>(archive_entry_size(entry)) : 0;
    idx.sizes[*name] = size;
    // With no compression filter, the tar reader has consumed exactly the member's header
    // blocks (pax/GNU extension headers included) when it returns the entry, so the bytes
    // consumed so far are the data's offset in the file.
    if (archive_filter_count(a.get()) == 1 &&
        archive_filter_code(a.get(), 0) == ARCHIVE_FILTER_NONE &&
        archive_entry_sparse_count(entry) == 0) {
      la_int64_t pos = archive_filter_bytes(a.get(), 0);
      auto off = static_cast<std::uint64_t>(pos < 0 ? 0 : pos);
      if (pos < 0 || off > file_size || size > file_size - off) {
        return Status::InvalidArg(fmt::format(
            "{}: member {} declares {} bytes of data at offset {}, but the file ends at byte {}: "
            "truncated or corrupt archive",
            path, *name, size, pos, file_size));
      }
      idx.ranges.emplace(*name, std::make_pair(off, size));
    }
    if (!LooksLikeMetadata(*name, size)) continue;
    std::string data(size, '\0');
    la_ssize_t got = archive_read_data(a.get(), data.data(), data.size());
    if (got < 0) {
      const char* e = archive_error_string(a.get());
      return ArchiveErrorStatus(a.get(), fmt::format("{}: cannot read member {}: {}", path, *name,
                                                     e ? e : "unknown error"));
    }
    data.resize(static_cast<std::size_t>(got));
    std::size_t first = data.find_first_not_of(" \t\r\n");
    bool json = first != std::string::npos && (data[first] == '{' || data[first] == '[');
    if (json || *name == "oci-layout" || *name == "repositories")
      idx.small[*name] = std::move(data);
  }
  return idx;
}

void ParseConfig(Image* img) {
  const Json& c = img->config;
  if (!c.is_object()) return;
  const Json cc = c.value("config", Json::object());
  if (cc.is_object() && cc.contains("Env") && cc["Env"].is_array()) {
    for (const auto& e : cc["Env"]) {
      if (!e.is_string()) continue;
      std::string kv = e.get<std::string>();
      auto eq = kv.find('=');
      if (eq == std::string::npos) {
        img->env[kv] = "";
      } else {
        img->env[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
    }
  }
  if (c.contains("history") && c["history"].is_array()) {
    for (const auto& h : c["history"]) {
      if (!h.is_object()) continue;
      HistoryEntry he;
      he.created_by = h.value("created_by", "");
      he.created = h.value("created", "");
      he.empty_layer = h.value("empty_layer", false);
      img->history.push_back(std::move(he));
    }
  }
}

// Maps non-empty history entries onto layers in order; a count mismatch is reported, not fatal.
void MapHistory(Image* img) {
  std::size_t li = 0;
  for (auto& h : img->history) {
    if (h.empty_layer) continue;
    if (li < img->layers.size()) {
      h.layer = static_cast<int>(li);
      img->layers[li].created_by = h.created_by;
    }
    ++li;
  }
  if (!img->history.empty() && li != img->layers.size()) {
    Finding f;
    f.rule = "image.history-mismatch";
    f.severity = Severity::kInfo;
    f.message = fmt::format(
        "config history has {} non-empty entries but the manifest lists {} layers; history "
        "mapped in order as far as it goes",
        li, img->layers.size());
    img->findings.push_back(std::move(f));
  }
}

void FillDiffIds(Image* img) {
  const Json& c = img->config;
  if (!c.is_object() || !c.contains("rootfs") || !c["rootfs"].is_object()) return;
  const Json& ids = c["rootfs"].value("diff_ids", Json::array());
  if (!ids.is_array()) return;
  for (std::size_t i = 0; i < ids.size() && i < img->layers.size(); ++i) {
    if (ids[i].is_string()) img->layers[i].diff_id = ids[i].get<std::string>();
  }
}

Image FromResolved(const std::string& path, ImageFormat format, Resolved r) {
  Image img;
  img.source = path;
  img.format = format;
  img.findings = std::move(r.findings);
  img.config = std::move(r.config);
  img.config_digest = std::move(r.config_digest);
  img.repo_tags = std::move(r.repo_tags);
  for (std::size_t i = 0; i < r.layers.size(); ++i) {
    ImageLayer l;
    l.index = static_cast<int>(i);
    l.digest = r.layers[i].digest;
    l.media_type = r.layers[i].media_type;
    l.declared_size = r.layers[i].size;
    l.blob = r.layer_blobs[i];
    img.layers.push_back(std::move(l));
  }
  ParseConfig(&img);
  FillDiffIds(&img);
  MapHistory(&img);
  for (auto& l : img.layers) l.expected_digest = r.legacy ? l.diff_id : l.digest;
  return img;
}

// The descriptor's size against the blob's real size: free to check, so always checked.
void CheckLayerSize(Image* img, ImageLayer* l, std::uint64_t actual) {
  if (l->declared_size == 0) {
    l->declared_size = actual;
  } else if (l->declared_size != actual) {
    img->findings.push_back(
        DigestMismatch(l->blob, l->index, actual,
                       fmt::format("layer {} blob {}: {} bytes, but its descriptor declares {}",
                                   l->index, l->blob, actual, l->declared_size)));
  }
}

// Charges `entries` against the image-wide entry budget; false (with a finding) when exhausted.
bool ChargeEntries(Image* img, std::uint64_t entries, const ReaderLimits& limits,
                   std::uint64_t* total) {
  if (*total + entries <= limits.max_total_entries) {
    *total += entries;
    return true;
  }
  img->findings.push_back(MakeImageFinding(
      "image.hostile.entry-limit", Severity::kError, "", -1, 0,
      fmt::format("the layers hold more than {} entries in total (a blob named at several "
                  "manifest positions counts at each); scanning stopped",
                  limits.max_total_entries),
      "rebuild the image from trusted inputs; do not ship it"));
  return false;
}

// The manifest's layer count against the reader's limit (checked before any layer is read).
Status CheckLayerCount(const Image& img, const ReaderLimits& limits) {
  if (img.layers.size() <= limits.max_layers) return Status::Ok();
  return Status::InvalidArg(fmt::format(
      "{}: the manifest names {} layers; at most {} are read (overlayfs stacks at most 128)",
      img.source, img.layers.size(), limits.max_layers));
}

// Scans one blob; with `verify` every byte is hashed on the way (the algorithm of the expected
// digest, sha256 when unknown) and the whole blob is read even when the scan stopped early.
Result<LayerScan> ScanBlob(ByteSource& src, ImageLayer& l, const std::string& name, bool verify,
                           const ReaderLimits& limits, std::uint64_t* budget,
                           const CaptureSpec& capture) {
  std::string alg = l.expected_digest.substr(0, l.expected_digest.find(':'));
  if (!verify || (alg != "sha256" && alg != "sha512")) {
    return ScanLayer(src, l.index, name, l.declared_size, limits, budget, capture);
  }
  TG_ASSIGN_OR_RETURN(auto h, HashingSource::Create(src, alg));
  TG_ASSIGN_OR_RETURN(LayerScan scan,
                      ScanLayer(*h, l.index, name, l.declared_size, limits, budget, capture));
  for (;;) {
    auto b = h->Next();
    if (!b.ok()) return b.status().WithPrefix(fmt::format("layer {}", l.index));
    if (b->empty()) break;
  }
  l.actual_digest = h->HexDigest();
  return scan;
}

// Digest findings after all layers were read (verify mode only). Layers never read (an earlier
// one hit a limit) have no actual digest and are skipped.
void CheckLayerDigests(Image* img) {
  for (auto& l : img->layers) {
    std::string alg = l.expected_digest.substr(0, l.expected_digest.find(':'));
    // A legacy layer.tar is compared with its diff_id, the digest of the *uncompressed* tar.
    bool comparable =
        (alg == "sha256" || alg == "sha512") &&
        !(img->format == ImageFormat::kDockerLegacy && l.scan.compression != Compression::kNone);
    if (comparable && l.actual_digest.empty()) continue;
    if (!comparable) {
      Finding f;
      f.rule = "image.digest-unverified";
      f.severity = Severity::kInfo;
      f.path = l.blob;
      f.layer = l.index;
      f.message = fmt::format(
          "layer {} blob {}: not verified: no sha256/sha512 digest of these bytes to check "
          "against (have '{}' for a {} blob)",
          l.index, l.blob, l.expected_digest, CompressionName(l.scan.compression));
      f.fix = "save the image with a tool that records layer digests (docker save, skopeo, umoci)";
      img->findings.push_back(std::move(f));
    } else if (l.actual_digest != l.expected_digest) {
      img->findings.push_back(
          DigestMismatch(l.blob, l.index, l.scan.compressed_bytes,
                         fmt::format("layer {} blob {}: expected {}, actual {}", l.index, l.blob,
                                     l.expected_digest, l.actual_digest)));
    }
  }
}

void CollectFindings(Image* img) {
  for (auto& l : img->layers) {
    for (auto& f : l.scan.findings) img->findings.push_back(f);
    CheckLayerMedia(l, &img->findings);
  }
  CheckHardLinks(img->layers, &img->findings);
}

Result<Image> ReadLayoutDir(const std::string& dir, const ReaderLimits& limits,
                            const CaptureSpec& capture, const ReadOptions& options) {
  SmallReader read = [&](const std::string& rel) -> Result<std::string> {
    return common::ReadFileLimited(dir + "/" + rel, kMaxJsonBytes);
  };
  struct stat st {};
  if (::stat((dir + "/oci-layout").c_str(), &st) != 0) {
    return Status::InvalidArg(dir +
                              ": a directory without an 'oci-layout' file is not an OCI "
                              "image layout");
  }
  TG_ASSIGN_OR_RETURN(Resolved r, ResolveOci(read, dir));
  Image img = FromResolved(dir, ImageFormat::kOciLayout, std::move(r));
  TG_RETURN_IF_ERROR(CheckLayerCount(img, limits));
  std::uint64_t budget = limits.max_uncompressed_bytes;
  std::uint64_t total = 0;
  for (auto& l : img.layers) {
    TG_ASSIGN_OR_RETURN(auto src, FileSource::Open(dir + "/" + l.blob));
    struct stat bst {};
    if (::stat((dir + "/" + l.blob).c_str(), &bst) == 0) {
      CheckLayerSize(&img, &l, static_cast<std::uint64_t>(bst.st_size));
    }
    TG_ASSIGN_OR_RETURN(
        l.scan, ScanBlob(*src, l, l.blob, options.verify_layer_digests, limits, &budget, capture));
    if (!ChargeEntries(&img, l.scan.entries.size(), limits, &total)) {
      l.scan = LayerScan();
      break;
    }
    if (l.scan.stopped_early) break;
  }
  if (options.verify_layer_digests) CheckLayerDigests(&img);
  CollectFindings(&img);
  return img;
}

// A layer scan's result belongs to every manifest position that names the same blob. Returns
// false when the image-wide entry budget is exhausted (nothing placed).
bool PlaceScan(Image* img, const std::vector<int>& positions, LayerScan scan,
               const std::string& digest, bool streamed, const ReaderLimits& limits,
               std::uint64_t* total) {
  if (!ChargeEntries(img, scan.entries.size() * positions.size(), limits, total)) return false;
  for (std::size_t k = 0; k < positions.size(); ++k) {
    const int i = positions[k];
    ImageLayer& l = img->layers[i];
    // The last position takes the scan itself: a copy of a million entries would double the peak.
    if (k + 1 == positions.size()) {
      l.scan = std::move(scan);
    } else {
      l.scan = scan;
    }
    l.actual_digest = digest;
    l.streamed = streamed;
    for (auto& f : l.scan.findings) f.layer = i;
  }
  return true;
}

// Uncompressed outer tar: every layer is read from its byte range of the file, in file order
// (the order the streaming path sees them, so limits trip at the same layer), and plain layers
// are skipped over with seeks instead of being copied through the outer archive.
Status ScanRanges(const std::string& path, const TarIndex& idx,
                  const std::map<std::string, std::vector<int>>& wanted, const ReaderLimits& limits,
                  const CaptureSpec& capture, const ReadOptions& options, Image* img) {
  std::vector<std::pair<std::pair<std::uint64_t, std::uint64_t>, std::string>> order;
  for (const auto& [blob, positions] : wanted) order.emplace_back(idx.ranges.at(blob), blob);
  std::sort(order.begin(), order.end());
  std::uint64_t budget = limits.max_uncompressed_bytes;
  std::uint64_t total = 0;
  for (const auto& [range, blob] : order) {
    const std::vector<int>& positions = wanted.at(blob);
    ImageLayer& first = img->layers[positions.front()];
    TG_ASSIGN_OR_RETURN(auto src, FileSource::OpenRange(path, range.first, range.second));
    TG_ASSIGN_OR_RETURN(LayerScan scan, ScanBlob(*src, first, blob, options.verify_layer_digests,
                                                 limits, &budget, capture));
    const bool stopped = scan.stopped_early;
    if (!PlaceScan(img, positions, std::move(scan), first.actual_digest, false, limits, &total)) {
      break;
    }
    if (stopped) break;
  }
  return Status::Ok();
}

// Compressed outer tar: one more sequential pass, layers in archive order; results are placed
// by manifest index, so whiteouts are applied in the right order later regardless of where the
// writer put each blob.
Status ScanStreamed(const std::string& path, const std::map<std::string, std::vector<int>>& wanted,
                    const ReaderLimits& limits, const CaptureSpec& capture,
                    const ReadOptions& options, Image* img) {
  TG_ASSIGN_OR_RETURN(ArchiveReadPtr a, OpenOuter(path));
  std::uint64_t budget = limits.max_uncompressed_bytes;
  std::uint64_t total = 0;
  std::size_t done = 0;
  bool stopped = false;
  std::set<std::string> seen;
  struct archive_entry* entry = nullptr;
  while (done < wanted.size() && !stopped) {
    int rc = archive_read_next_header(a.get(), &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc == ARCHIVE_RETRY) continue;
    if (rc == ARCHIVE_FATAL) {
      const char* e = archive_error_string(a.get());
      return ArchiveErrorStatus(a.get(), fmt::format("{}: corrupt or truncated archive: {}", path,
                                                     e ? e : "unknown error"));
    }
    const char* raw = archive_entry_pathname(entry);
    bool abs = false;
    auto name = NormalizeMemberName(raw ? raw : "", &abs);
    if (!name) continue;
    auto it = wanted.find(*name);
    if (it == wanted.end() || it->second.empty()) continue;
    if (!seen.insert(*name).second) continue;  // the same blob stored twice
    ImageLayer& first = img->layers[it->second.front()];
    ArchiveEntrySource src(a.get(), fmt::format("{}:{}", path, *name));
    TG_ASSIGN_OR_RETURN(LayerScan scan, ScanBlob(src, first, *name, options.verify_layer_digests,
                                                 limits, &budget, capture));
    stopped = scan.stopped_early;
    stopped =
        !PlaceScan(img, it->second, std::move(scan), first.actual_digest, true, limits, &total) ||
        stopped;
    ++done;
  }
  if (done < wanted.size() && !stopped) {
    return Status::InvalidArg(
        fmt::format("{}: only {} of {} layer blobs could be read", path, done, wanted.size()));
  }
  return Status::Ok();
}

// "a/b/../c" -> "a/c"; nullopt when ".." climbs above the root, the path is absolute or empty.
std::optional<std::string> CollapseLinkPath(std::string_view p) {
  if (p.empty() || p.front() == '/') return std::nullopt;
  std::vector<std::string_view> parts;
  while (!p.empty()) {
    const auto slash = p.find('/');
    std::string_view c = p.substr(0, slash);
    p = slash == std::string_view::npos ? std::string_view() : p.substr(slash + 1);
    if (c.empty() || c == ".") continue;
    if (c != "..") {
      parts.push_back(c);
    } else if (parts.empty()) {
      return std::nullopt;
    } else {
      parts.pop_back();
    }
  }
  if (parts.empty()) return std::nullopt;
  std::string out;
  for (std::string_view c : parts) {
    if (!out.empty()) out += '/';
    out += c;
  }
  return out;
}

// The regular member a manifest's layer name stands for. A symlink member is followed (relative
// to its own directory, at most 8 hops, never outside the archive's root); anything else that is
// not a regular member is refused, saying what it is and where it points.
Result<std::string> ResolveMember(const TarIndex& idx, const std::string& path, int layer,
                                  const std::string& blob) {
  std::string cur = blob;
  std::string trail;
  for (int hop = 0; hop < 8; ++hop) {
    if (idx.sizes.count(cur)) return cur;
    auto link = idx.symlinks.find(cur);
    if (link == idx.symlinks.end()) break;
    trail += fmt::format(" -> '{}'", link->second);
    const auto slash = cur.rfind('/');
    std::string joined = link->second.starts_with("/") || slash == std::string::npos
                             ? link->second
                             : cur.substr(0, slash + 1) + link->second;
    auto next = CollapseLinkPath(joined);
    if (!next) {
      return Status::InvalidArg(
          fmt::format("{}: layer {} member {} is a symlink{}, which points outside the archive",
                      path, layer, blob, trail));
    }
    cur = std::move(*next);
  }
  if (!trail.empty()) {
    return Status::InvalidArg(fmt::format(
        "{}: layer {} member {} is a symlink{}, which is not a regular member of the archive "
        "(dangling, a loop, or more than 8 links)",
        path, layer, blob, trail));
  }
  return Status::InvalidArg(
      fmt::format("{}: layer {} blob {} named by the manifest is missing", path, layer, blob));
}

Result<Image> ReadTar(const std::string& path, const ReaderLimits& limits,
                      const CaptureSpec& capture, const ReadOptions& options) {
  TG_ASSIGN_OR_RETURN(TarIndex idx, IndexTar(path));
  SmallReader read = [&](const std::string& rel) -> Result<std::string> {
    auto it = idx.small.find(rel);
    if (it != idx.small.end()) return it->second;
    if (idx.sizes.count(rel)) {
      return Status::InvalidArg(fmt::format("{}: member {} is not a JSON document of at most {}",
                                            path, rel, HumanBytes(kMaxJsonBytes)));
    }
    if (auto link = idx.symlinks.find(rel); link != idx.symlinks.end()) {
      return Status::InvalidArg(fmt::format(
          "{}: member {} is a symlink to '{}', not a regular member holding the document", path,
          rel, link->second));
    }
    return Status::InvalidArg(fmt::format("{}: member {} is missing", path, rel));
  };
  bool has_index = idx.small.count("index.json") > 0;
  bool has_manifest = idx.small.count("manifest.json") > 0;
  Resolved r;
  ImageFormat format;
  if (has_index) {
    format = has_manifest ? ImageFormat::kDockerOci : ImageFormat::kOciArchive;
    TG_ASSIGN_OR_RETURN(r, ResolveOci(read, path));
  } else if (has_manifest) {
    format = ImageFormat::kDockerLegacy;
    TG_ASSIGN_OR_RETURN(r, ResolveLegacy(read, path, idx.sizes));
  } else {
    return Status::InvalidArg(fmt::format(
        "{}: neither manifest.json (docker save) nor index.json (OCI archive) found among {} "
        "members",
        path, idx.sizes.size()));
  }
  Image img = FromResolved(path, format, std::move(r));
  TG_RETURN_IF_ERROR(CheckLayerCount(img, limits));
  // Which members hold which layers (a blob may appear twice in one manifest).
  std::map<std::string, std::vector<int>> wanted;
  for (auto& l : img.layers) {
    TG_ASSIGN_OR_RETURN(l.blob, ResolveMember(idx, path, l.index, l.blob));
    wanted[l.blob].push_back(l.index);
  }
  for (auto& l : img.layers) CheckLayerSize(&img, &l, idx.sizes[l.blob]);
  bool ranged = true;
  for (const auto& [blob, layers] : wanted) ranged = ranged && idx.ranges.count(blob) > 0;
  if (ranged) {
    TG_RETURN_IF_ERROR(ScanRanges(path, idx, wanted, limits, capture, options, &img));
  } else {
    TG_RETURN_IF_ERROR(ScanStreamed(path, wanted, limits, capture, options, &img));
  }
  if (options.verify_layer_digests) CheckLayerDigests(&img);
  CollectFindings(&img);
  return img;
}

}  // namespace

Result<Image> ReadImage(const std::string& path, const ReaderLimits& limits,
                        const CaptureSpec& capture, const ReadOptions& options) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int e = errno;
    return FileErrorStatus(e, e == ENOENT
                                  ? fmt::format("{}: no such image file or directory", path)
                                  : fmt::format("{}: cannot stat: {}", path, std::strerror(e)));
  }
  if (S_ISDIR(st.st_mode)) return ReadLayoutDir(path, limits, capture, options);
  // The tar is read twice (an index pass, then each layer's byte range), so a pipe cannot serve;
  // a FIFO with no writer would block the first open forever.
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidArg(fmt::format(
        "{}: not a regular file or an OCI layout directory (a FIFO, device or socket is refused; "
        "save the image to a file first)",
        path));
  }
  return ReadTar(path, limits, capture, options);
}

}  // namespace tg::audit
