// Layer scanning: sniff the compression, enable exactly that libarchive filter, walk the tar
// headers and skip data (libarchive skips without buffering), keeping only entry metadata.
#include "audit/image/layer_scan.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/file_util.h"
#include "common/strings.h"

namespace tg::audit {

using common::Result;
using common::Status;

Status FileErrorStatus(int err, std::string message) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return Status::NotFound(std::move(message));
    case ENOMEM:
    case EMFILE:
    case ENFILE:
    case EIO:
    case EAGAIN:
    case ENOBUFS:
    case ETIMEDOUT:
    case ESTALE:
      return Status::Unavailable(std::move(message));
    default:
      return Status::InvalidArg(std::move(message));
  }
}

Status ArchiveErrorStatus(struct archive* a, std::string message) {
  // Running out of memory or descriptors is never the data's fault; other numbers (EIO included)
  // are what libarchive reports for data it cannot decode as well.
  const int err = archive_errno(a);
  if (err == ENOMEM || err == EMFILE || err == ENFILE) {
    return Status::Unavailable(std::move(message));
  }
  return Status::InvalidArg(std::move(message));
}

std::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone:
      return "none";
    case Compression::kGzip:
      return "gzip";
    case Compression::kZstd:
      return "zstd";
  }
  return "none";
}

std::optional<Compression> SniffCompression(std::string_view p) {
  auto b = [&](std::size_t i) { return static_cast<unsigned char>(p[i]); };
  if (p.size() >= 2 && b(0) == 0x1f && b(1) == 0x8b) return Compression::kGzip;
  if (p.size() >= 4 && b(0) == 0x28 && b(1) == 0xb5 && b(2) == 0x2f && b(3) == 0xfd) {
    return Compression::kZstd;
  }
  // A plain tar has no magic at offset 0 (the name comes first), so anything that is not a
  // known compressor's magic is handed to the tar reader, except well-known other compressors
  // that we do not support (xz, bzip2) which are reported instead of mis-read.
  if (p.size() >= 3 && b(0) == 'B' && b(1) == 'Z' && b(2) == 'h') return std::nullopt;
  if (p.size() >= 4 && b(0) == 0xfd && b(1) == '7' && b(2) == 'z' && b(3) == 'X') {
    return std::nullopt;
  }
  return Compression::kNone;
}

std::string_view EntryTypeName(EntryType t) {
  switch (t) {
    case EntryType::kFile:
      return "file";
    case EntryType::kDir:
      return "dir";
    case EntryType::kSymlink:
      return "symlink";
    case EntryType::kHardlink:
      return "hardlink";
    case EntryType::kWhiteout:
      return "whiteout";
    case EntryType::kOpaque:
      return "opaque";
    case EntryType::kOther:
      return "other";
  }
  return "other";
}

// ---- FileSource -------------------------------------------------------------------------------

namespace {

// Image files and blobs are read with seeks, so only a regular file will do. The open never
// blocks (a FIFO with no writer would wait forever) and the type is checked before any read.
Result<int> OpenReadOnly(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    return FileErrorStatus(e, fmt::format("{}: cannot open: {}", path, std::strerror(e)));
  }
  common::UniqueFd owner(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    return FileErrorStatus(e, fmt::format("{}: cannot stat: {}", path, std::strerror(e)));
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidArg(fmt::format(
        "{}: not a regular file (a FIFO, device, socket or directory is refused)", path));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return owner.Release();
}

}  // namespace

Result<std::unique_ptr<FileSource>> FileSource::Open(const std::string& path) {
  TG_ASSIGN_OR_RETURN(int fd, OpenReadOnly(path));
  return std::unique_ptr<FileSource>(new FileSource(fd, path, 0, std::nullopt));
}

Result<std::unique_ptr<FileSource>> FileSource::OpenRange(const std::string& path,
                                                          std::uint64_t offset,
                                                          std::uint64_t length) {
  TG_ASSIGN_OR_RETURN(int fd, OpenReadOnly(path));
  std::unique_ptr<FileSource> src(new FileSource(fd, path, offset, offset + length));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    return FileErrorStatus(e, fmt::format("{}: cannot stat: {}", path, std::strerror(e)));
  }
  // The index pass checked this too; re-check here so a range never reads past the file.
  if (offset > static_cast<std::uint64_t>(st.st_size) ||
      length > static_cast<std::uint64_t>(st.st_size) - offset) {
    return Status::InvalidArg(fmt::format(
        "{}: member data [{}, {}) runs past the end of the file ({} bytes): truncated archive",
        path, offset, offset + length, st.st_size));
  }
  return src;
}

FileSource::~FileSource() = default;

Result<std::span<const char>> FileSource::Next() {
  // Adaptive read size: right after a skip the next bytes are most likely just a 512-byte tar
  // header, so read little (copying a whole 1 MiB block of file data the tar reader will skip
  // anyway is what made plain layers slower than `tar -tvf`); sequential reads (compressed
  // blobs, captured files, hashing) double up to kMaxRead.
  std::size_t want = next_read_;
  next_read_ = std::min(next_read_ * 2, kMaxRead);
  if (end_) want = static_cast<std::size_t>(std::min<std::uint64_t>(want, *end_ - pos_));
  if (want == 0) return std::span<const char>();
  for (;;) {
    // pread keeps a range source independent of the descriptor's offset and of its neighbours.
    ssize_t n = ::pread(fd_.get(), buf_.data(), want, static_cast<off_t>(pos_));
    if (n > 0) {
      pos_ += static_cast<std::uint64_t>(n);
      return std::span<const char>(buf_.data(), static_cast<std::size_t>(n));
    }
    if (n == 0) {
      if (end_) {
        return Status::InvalidArg(
            fmt::format("{}: unexpected end of file at offset {} (member data should end at {})",
                        path_, pos_, *end_));
      }
      return std::span<const char>();
    }
    const int e = errno;
    if (e == EINTR) continue;
    return FileErrorStatus(e, fmt::format("{}: read failed: {}", path_, std::strerror(e)));
  }
}

std::int64_t FileSource::Skip(std::int64_t n) {
  // Seeking past file data is what makes `tar -tvf` on an uncompressed tar fast; do the same.
  if (n <= 0) return 0;
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) return 0;
  std::uint64_t limit = static_cast<std::uint64_t>(st.st_size);
  if (end_) limit = std::min(limit, *end_);
  if (pos_ >= limit) return 0;
  std::uint64_t k = std::min(static_cast<std::uint64_t>(n), limit - pos_);
  pos_ += k;
  next_read_ = kMinRead;
  return static_cast<std::int64_t>(k);
}

// ---- HashingSource ----------------------------------------------------------------------------

void HashingSource::CtxFree::operator()(evp_md_ctx_st* c) const { EVP_MD_CTX_free(c); }

Result<std::unique_ptr<HashingSource>> HashingSource::Create(ByteSource& inner,
                                                             std::string_view algorithm) {
  const EVP_MD* md = algorithm == "sha256"   ? EVP_sha256()
                     : algorithm == "sha512" ? EVP_sha512()
                                             : nullptr;
  if (md == nullptr) {
    return Status::InvalidArg(
        fmt::format("unsupported digest algorithm '{}': expected sha256 or sha512", algorithm));
  }
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  if (ctx == nullptr) return Status::Unavailable("EVP_MD_CTX_new failed");
  std::unique_ptr<HashingSource> h(new HashingSource(inner, std::string(algorithm), ctx));
  if (EVP_DigestInit_ex(ctx, md, nullptr) != 1) return Status::Unavailable("EVP_DigestInit failed");
  return h;
}

Result<std::string> DigestOf(std::string_view algorithm, std::string_view data) {
  // A throwaway source over `data` keeps one hashing implementation for blobs and documents.
  class Once : public ByteSource {
   public:
    explicit Once(std::string_view d) : d_(d) {}
    Result<std::span<const char>> Next() override {
      std::span<const char> out(d_.data(), d_.size());
      d_ = {};
      return out;
    }

   private:
    std::string_view d_;
  };
  Once once(data);
  TG_ASSIGN_OR_RETURN(auto h, HashingSource::Create(once, algorithm));
  for (;;) {
    TG_ASSIGN_OR_RETURN(std::span<const char> b, h->Next());
    if (b.empty()) break;
  }
  return h->HexDigest();
}

Result<std::span<const char>> HashingSource::Next() {
  TG_ASSIGN_OR_RETURN(std::span<const char> block, inner_.Next());
  if (!block.empty() && digest_.empty()) {
    EVP_DigestUpdate(ctx_.get(), block.data(), block.size());
    bytes_ += block.size();
  }
  return block;
}

std::string HashingSource::HexDigest() {
  if (!digest_.empty()) return digest_;
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx_.get(), md, &len);
  digest_ = algorithm_ + ":" + common::HexLower(md, len);
  return digest_;
}

// ---- ArchiveEntrySource -----------------------------------------------------------------------

Result<std::span<const char>> ArchiveEntrySource::Next() {
  const void* buf = nullptr;
  size_t size = 0;
  la_int64_t offset = 0;
  // Zero-copy block reads: no per-byte copy of the (possibly large) layer blob.
  int r = archive_read_data_block(outer_, &buf, &size, &offset);
  if (r == ARCHIVE_EOF) return std::span<const char>();
  if (r < ARCHIVE_WARN) {
    const char* e = archive_error_string(outer_);
    return ArchiveErrorStatus(outer_, fmt::format("{}: {}", name_, e ? e : "read error"));
  }
  return std::span<const char>(static_cast<const char*>(buf), size);
}

// ---- NameStore ------------------------------------------------------------------------------

std::string_view NameStore::Add(std::string_view s) {
  if (s.empty()) return {};
  bytes_ += s.size();
  if (s.size() > kBlock / 4) {
    // A long name gets a block of its own; the current block (next_) stays in use.
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(s.size()));
    std::memcpy(blocks_.back().get(), s.data(), s.size());
    return std::string_view(blocks_.back().get(), s.size());
  }
  if (s.size() > left_) {
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(kBlock));
    next_ = blocks_.back().get();
    left_ = kBlock;
  }
  std::memcpy(next_, s.data(), s.size());
  const std::string_view out(next_, s.size());
  next_ += s.size();
  left_ -= s.size();
  return out;
}

// ---- Name normalisation -----------------------------------------------------------------------

std::optional<std::string> NormalizeMemberName(std::string_view name, bool* absolute) {
  *absolute = !name.empty() && name.front() == '/';
  std::string out;
  out.reserve(name.size());
  std::size_t i = 0;
  while (i <= name.size()) {
    std::size_t j = name.find('/', i);
    if (j == std::string_view::npos) j = name.size();
    std::string_view comp = name.substr(i, j - i);
    if (comp == "..") return std::nullopt;
    if (!comp.empty() && comp != ".") {
      if (!out.empty()) out.push_back('/');
      out.append(comp);
    }
    i = j + 1;
  }
  return out;
}

// ---- ScanLayer --------------------------------------------------------------------------------

namespace {

// Client state for libarchive's read callback: serves the sniffed prefix first, then the source.
struct ReadClient {
  ByteSource* source = nullptr;
  std::string prefix;
  bool prefix_served = false;
  std::uint64_t bytes = 0;
  Status error;
};

la_ssize_t ReadCallback(struct archive* a, void* client_data, const void** buffer) {
  auto* c = static_cast<ReadClient*>(client_data);
  if (!c->prefix_served) {
    c->prefix_served = true;
    if (!c->prefix.empty()) {
      *buffer = c->prefix.data();
      return static_cast<la_ssize_t>(c->prefix.size());
    }
  }
  auto block = c->source->Next();
  if (!block.ok()) {
    c->error = block.status();
    archive_set_error(a, EIO, "%s", c->error.message().c_str());
    return -1;
  }
  c->bytes += block->size();
  *buffer = block->data();
  return static_cast<la_ssize_t>(block->size());
}

la_int64_t SkipCallback(struct archive*, void* client_data, la_int64_t request) {
  auto* c = static_cast<ReadClient*>(client_data);
  if (!c->prefix_served) return 0;
  std::int64_t k = c->source->Skip(request);
  c->bytes += static_cast<std::uint64_t>(k);
  return k;
}

Finding HostileFinding(std::string rule, std::string path, int layer, std::uint64_t bytes,
                       std::string message) {
  return MakeImageFinding(std::move(rule), Severity::kError, std::move(path), layer, bytes,
                          std::move(message),
                          "rebuild the image from trusted inputs; do not ship this layer");
}

// Gathers at least 4 bytes for the magic (blocks may be tiny in pathological archives) and
// sniffs the compression from them.
Result<Compression> SniffSource(ByteSource& source, ReadClient* client, int layer,
                                const std::string& name) {
  while (client->prefix.size() < 4) {
    auto block = source.Next();
    if (!block.ok()) return block.status().WithPrefix(fmt::format("layer {}", layer));
    if (block->empty()) break;
    client->bytes += block->size();
    client->prefix.append(block->data(), block->size());
  }
  if (client->prefix.empty()) {
    return Status::InvalidArg(
        fmt::format("layer {} ({}): empty blob, expected a tar", layer, name));
  }
  auto comp = SniffCompression(client->prefix);
  if (!comp) {
    return Status::InvalidArg(fmt::format(
        "layer {} ({}): unsupported compression (magic {:02x} {:02x} {:02x}); expected gzip, "
        "zstd or an uncompressed tar",
        layer, name, static_cast<unsigned char>(client->prefix[0]),
        static_cast<unsigned char>(client->prefix[1]),
        static_cast<unsigned char>(client->prefix[2])));
  }
  return *comp;
}

Result<ArchiveReadPtr> OpenLayerArchive(ReadClient* client, Compression comp, int layer,
                                        const std::string& name) {
  ArchiveReadPtr a(archive_read_new());
  if (!a) return Status::Unavailable("archive_read_new failed");
  archive_read_support_format_tar(a.get());
  if (comp == Compression::kGzip) archive_read_support_filter_gzip(a.get());
  if (comp == Compression::kZstd) archive_read_support_filter_zstd(a.get());
  archive_read_set_read_callback(a.get(), ReadCallback);
  archive_read_set_skip_callback(a.get(), SkipCallback);
  archive_read_set_callback_data(a.get(), client);
  if (archive_read_open1(a.get()) != ARCHIVE_OK) {
    // A failing source is its own error (a read error of the file is not a "not a tar").
    if (!client->error.ok()) return client->error.WithPrefix(fmt::format("layer {}", layer));
    const char* e = archive_error_string(a.get());
    return ArchiveErrorStatus(a.get(), fmt::format("layer {} ({}): not a {} tar: {}", layer, name,
                                                   CompressionName(comp), e ? e : "unknown error"));
  }
  return a;
}

// Type, link and size of a non-whiteout entry; false (with a finding) for a hard link that
// escapes the root.
bool FillEntryType(struct archive_entry* entry, int layer, LayerEntry* e, NameStore* names,
                   LayerScan* scan) {
  const char* hard = archive_entry_hardlink(entry);
  mode_t ft = archive_entry_filetype(entry);
  if (hard != nullptr) {
    bool abs2 = false;
    auto target = NormalizeMemberName(hard, &abs2);
    if (!target) {
      scan->findings.push_back(
          HostileFinding("image.hostile.path-traversal", std::string(e->path), layer, 0,
                         fmt::format("hard link target '{}' escapes the image root", hard)));
      return false;
    }
    e->type = EntryType::kHardlink;
    e->link = names->Add(*target);
  } else if (ft == AE_IFREG) {
    e->type = EntryType::kFile;
    e->size = archive_entry_size_is_set(entry) && archive_entry_size(entry) > 0
                  ? static_cast<std::uint64_t>(archive_entry_size(entry))
                  : 0;
  } else if (ft == AE_IFDIR) {
    e->type = EntryType::kDir;
  } else if (ft == AE_IFLNK) {
    e->type = EntryType::kSymlink;
    const char* t = archive_entry_symlink(entry);
    e->link = names->Add(t ? t : "");
  } else {
    e->type = EntryType::kOther;
  }
  return true;
}

// The normalised entry, or nullopt when it is skipped (traversal, the root itself); hostile
// names become findings.
std::optional<LayerEntry> ToEntry(struct archive_entry* entry, int layer, NameStore* names,
                                  LayerScan* scan) {
  const char* raw = archive_entry_pathname(entry);
  std::string raw_name = raw ? raw : "";
  bool absolute = false;
  auto norm = NormalizeMemberName(raw_name, &absolute);
  if (!norm) {
    scan->findings.push_back(
        HostileFinding("image.hostile.path-traversal", raw_name, layer, 0,
                       "member name contains '..' and would escape the image root; entry ignored"));
    return std::nullopt;
  }
  if (absolute) {
    Finding f = HostileFinding("image.hostile.absolute-path", raw_name, layer, 0,
                               "member name is absolute; layer tars must hold relative paths");
    f.severity = Severity::kWarning;
    scan->findings.push_back(std::move(f));
  }
  if (norm->empty()) return std::nullopt;  // the root directory itself
  LayerEntry e;
  e.mode = archive_entry_perm(entry);
  e.mtime = archive_entry_mtime(entry);
  std::string_view base = *norm;
  std::string_view dir;
  if (auto slash = base.rfind('/'); slash != std::string_view::npos) {
    dir = base.substr(0, slash);
    base = base.substr(slash + 1);
  }
  if (base == ".wh..wh..opq") {
    e.type = EntryType::kOpaque;
    e.path = names->Add(dir);
  } else if (base.starts_with(".wh.")) {
    e.type = EntryType::kWhiteout;
    e.path = names->Add(dir.empty() ? std::string(base.substr(4))
                                    : fmt::format("{}/{}", dir, base.substr(4)));
  } else {
    e.path = names->Add(*norm);
    if (!FillEntryType(entry, layer, &e, names, scan)) return std::nullopt;
  }
  return e;
}

// Bomb guards run on declared sizes *before* any data is decompressed, so a tiny blob that
// claims terabytes is refused without doing the work. False (with a finding) stops the scan.
bool WithinSizeLimits(const LayerEntry& e, int layer, std::uint64_t declared_compressed,
                      const ReaderLimits& limits, std::uint64_t* declared,
                      std::uint64_t* budget_left, LayerScan* scan) {
  if (e.size > *budget_left) {
    scan->findings.push_back(HostileFinding(
        "image.hostile.size-limit", std::string(e.path), layer, e.size,
        fmt::format("entry declares {} but only {} of the image's uncompressed allowance ({}) "
                    "is left (decompression bomb or oversized image); scanning stopped",
                    HumanBytes(e.size), HumanBytes(*budget_left),
                    HumanBytes(limits.max_uncompressed_bytes))));
    return false;
  }
  *declared += e.size;
  *budget_left -= e.size;
  if (declared_compressed > 0 && *declared > limits.ratio_floor_bytes &&
      *declared / declared_compressed > limits.max_ratio) {
    scan->findings.push_back(HostileFinding(
        "image.hostile.bomb", std::string(e.path), layer, *declared,
        fmt::format("layer expands {}x ({} from a {} blob), above the {}x limit; scanning "
                    "stopped",
                    *declared / declared_compressed, HumanBytes(*declared),
                    HumanBytes(declared_compressed), limits.max_ratio)));
    return false;
  }
  return true;
}

// Streams the current entry's data to `<extract_dir>/<n>/<basename>` (see CaptureSpec). The file
// is created exclusively (a name we did not make is never overwritten) and removed again when the
// data cannot be read completely, so a half-written library is never inspected.
template <typename Fail>
Status ExtractEntry(struct archive* a, const LayerEntry& e, const CaptureSpec& capture,
                    LayerScan* scan, const Fail& fail) {
  CaptureSpec::Budget* budget = capture.extract_budget.get();
  const std::string path(e.path);
  if (capture.extract_dir.empty() || budget == nullptr) {
    scan->extract_skipped[path] = "no extraction directory";
    return Status::Ok();
  }
  if (budget->files_left <= 0 || e.size > budget->bytes_left) {
    scan->extract_skipped[path] = fmt::format("over the extraction budget ({} files, {} left)",
                                              budget->files_left, HumanBytes(budget->bytes_left));
    return Status::Ok();
  }
  --budget->files_left;
  budget->bytes_left -= e.size;
  const std::string dir = fmt::format("{}/{}", capture.extract_dir, budget->next_id++);
  const auto slash = path.rfind('/');
  const std::string file = dir + "/" + (slash == std::string::npos ? path : path.substr(slash + 1));
  if (::mkdir(dir.c_str(), 0700) != 0) {
    scan->extract_skipped[path] = fmt::format("cannot create {}: {}", dir, std::strerror(errno));
    return Status::Ok();
  }
  common::UniqueFd fd(
      ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.get() < 0) {
    scan->extract_skipped[path] = fmt::format("cannot create {}: {}", file, std::strerror(errno));
    return Status::Ok();
  }
  std::vector<char> buf(1 << 20);
  std::uint64_t written = 0;
  std::string error;
  while (error.empty()) {
    const la_ssize_t got = archive_read_data(a, buf.data(), buf.size());
    if (got < 0) {
      fd.Close();
      ::unlink(file.c_str());
      return fail("cannot read file data");
    }
    if (got == 0) break;
    for (la_ssize_t off = 0; off < got;) {
      const ssize_t w = ::write(fd.get(), buf.data() + off, static_cast<std::size_t>(got - off));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        error = fmt::format("cannot write {}: {}", file, std::strerror(errno));
        break;
      }
      off += w;
      written += static_cast<std::uint64_t>(w);
    }
  }
  if (fd.Close() != 0 && error.empty()) {
    error = fmt::format("cannot write {}: {}", file, std::strerror(errno));
  }
  if (!error.empty() || written != e.size) {
    ::unlink(file.c_str());
    scan->extract_skipped[path] =
        error.empty() ? fmt::format("short file: {} of {} bytes", written, e.size) : error;
    return Status::Ok();
  }
  scan->extracted[path] = file;
  return Status::Ok();
}

}  // namespace

Result<LayerScan> ScanLayer(ByteSource& source, int layer, const std::string& name,
                            std::uint64_t declared_compressed, const ReaderLimits& limits,
                            std::uint64_t* budget_left, const CaptureSpec& capture) {
  LayerScan scan;
  auto names = std::make_shared<NameStore>();
  scan.names = names;
  ReadClient client;
  client.source = &source;
  TG_ASSIGN_OR_RETURN(scan.compression, SniffSource(source, &client, layer, name));
  TG_ASSIGN_OR_RETURN(ArchiveReadPtr a, OpenLayerArchive(&client, scan.compression, layer, name));
  // The filter chain is chosen at open: the format reader plus one filter per compression layer.
  scan.compression_depth = std::max(0, archive_filter_count(a.get()) - 1);
  auto fail = [&](const char* what) -> Status {
    if (!client.error.ok()) return client.error.WithPrefix(fmt::format("layer {}", layer));
    const char* e = archive_error_string(a.get());
    return ArchiveErrorStatus(
        a.get(), fmt::format("layer {} ({}, {}): {} after {} entries: {}", layer, name,
                             CompressionName(scan.compression), what, scan.entries.size(),
                             e ? e : "unknown error"));
  };
  std::uint64_t declared = 0;
  std::uint64_t count = 0;
  struct archive_entry* entry = nullptr;
  for (;;) {
    int r = archive_read_next_header(a.get(), &entry);
    if (r == ARCHIVE_EOF) break;
    if (r == ARCHIVE_RETRY) continue;
    if (r == ARCHIVE_FATAL) return fail("corrupt or truncated layer");
    // ARCHIVE_WARN (odd headers) still yields a usable entry.
    if (++count > limits.max_entries) {
      scan.findings.push_back(HostileFinding(
          "image.hostile.entry-limit", "", layer, 0,
          fmt::format("layer has more than {} entries; scanning stopped", limits.max_entries)));
      scan.stopped_early = true;
      break;
    }
    std::optional<LayerEntry> e = ToEntry(entry, layer, names.get(), &scan);
    if (!e) continue;
    if (!WithinSizeLimits(*e, layer, declared_compressed, limits, &declared, budget_left, &scan)) {
      scan.stopped_early = true;
      break;
    }
    if (e->type == EntryType::kFile && capture.keep && e->size <= limits.max_capture_bytes &&
        capture.keep(e->path)) {
      std::string data;
      data.resize(e->size);
      la_ssize_t got = archive_read_data(a.get(), data.data(), data.size());
      if (got < 0) return fail("cannot read file data");
      data.resize(static_cast<std::size_t>(got));
      scan.captured[std::string(e->path)] = std::move(data);
    } else if (e->type == EntryType::kFile && capture.extract && capture.extract(e->path)) {
      TG_RETURN_IF_ERROR(ExtractEntry(a.get(), *e, capture, &scan, fail));
    }
    scan.entries.push_back(*e);
  }
  if (!scan.stopped_early) {
    // Drain the source so compressed_bytes counts the whole blob (a tar ends with padding that
    // libarchive need not read).
    for (;;) {
      auto block = source.Next();
      if (!block.ok()) return block.status().WithPrefix(fmt::format("layer {}", layer));
      if (block->empty()) break;
      client.bytes += block->size();
    }
  }
  scan.uncompressed_bytes = static_cast<std::uint64_t>(archive_filter_bytes(a.get(), 0));
  scan.compressed_bytes = client.bytes;
  return scan;
}

}  // namespace tg::audit
