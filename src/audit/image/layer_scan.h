// Streaming reader for one image layer (a tar, optionally gzip- or zstd-compressed).
//
// Layers are pulled from a ByteSource (a file, or the data of an entry of an enclosing tar) and
// read with libarchive without ever extracting anything to disk. Compression is sniffed from the
// first bytes (gzip 1f 8b, zstd 28 b5 2f fd, else plain tar), never from names or media types.
// Hostile content (path traversal, absolute paths, size/entry/ratio limits) becomes Findings and
// the scan stops early where continuing would be unbounded; corrupt or truncated streams are a
// non-OK Status naming the layer and libarchive's reason. Memory is bounded by the number of
// entries (capped) plus captured file contents (capped per file).
// Every libarchive handle is owned by an ArchiveReadPtr. Not thread-safe per object; independent
// scans may run on different threads.
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "audit/report/finding.h"
#include "common/file_util.h"
#include "common/status.h"

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX (kept opaque so <openssl/evp.h> stays in the .cc)

namespace tg::audit {

struct ArchiveReadDeleter {
  void operator()(struct archive* a) const { archive_read_free(a); }
};
// The one owner of a libarchive read handle.
using ArchiveReadPtr = std::unique_ptr<struct archive, ArchiveReadDeleter>;

// The Status of a failed system call (open, stat, read) on an image file, `err` its errno:
// NOT_FOUND when the file is not there (ENOENT, ENOTDIR); UNAVAILABLE when this machine could not
// serve it (out of memory or descriptors, an I/O error of the device, a stale or timed-out
// network file system); INVALID_ARG for what the input itself causes (permissions, a name too
// long, a symlink loop). Pure.
common::Status FileErrorStatus(int err, std::string message);
// The Status of a failed libarchive call on `a`: UNAVAILABLE when libarchive ran out of memory or
// descriptors, INVALID_ARG otherwise (corrupt, truncated or unsupported data: libarchive's error
// numbers do not tell a read error of the device from bad data). Pure.
common::Status ArchiveErrorStatus(struct archive* a, std::string message);

enum class Compression { kNone, kGzip, kZstd };
std::string_view CompressionName(Compression c);  // "none" | "gzip" | "zstd"; pure
// Compression from the first bytes of a blob; nullopt when it is neither gzip, zstd nor a tar
// (an unknown magic is reported rather than guessed). `prefix` may be shorter than 4 bytes.
std::optional<Compression> SniffCompression(std::string_view prefix);

// A pull source of bytes, used from one thread. Next() returns the next block (empty span = end
// of data; an error names the source); the block stays valid until the following call.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual common::Result<std::span<const char>> Next() = 0;
  // Skips up to `n` bytes without reading them when the source can seek; returns the bytes
  // skipped (0 = cannot skip; the caller then reads). Used for uncompressed layers only.
  virtual std::int64_t Skip(std::int64_t n) { return 0; }
};

// Reads a regular file, or the byte range [offset, offset + length) of one (a layer stored
// uncompressed inside an outer tar), with pread so the range never leaks into neighbouring
// members. Skip() seeks (bounded by the range and the file's size). Owns its descriptor.
// Errors: FileErrorStatus's codes from Open and Next() (a failing open, stat or read); Next()
// reports a range that ends before `length` bytes (the file shrank or was truncated) as
// INVALID_ARG naming the file and offset.
class FileSource : public ByteSource {
 public:
  static common::Result<std::unique_ptr<FileSource>> Open(const std::string& path);
  static common::Result<std::unique_ptr<FileSource>> OpenRange(const std::string& path,
                                                               std::uint64_t offset,
                                                               std::uint64_t length);
  ~FileSource() override;
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;
  common::Result<std::span<const char>> Next() override;
  std::int64_t Skip(std::int64_t n) override;

 private:
  static constexpr std::size_t kMinRead = 4 << 10;
  static constexpr std::size_t kMaxRead = 1 << 20;
  FileSource(int fd, std::string path, std::uint64_t pos, std::optional<std::uint64_t> end)
      : fd_(fd), path_(std::move(path)), pos_(pos), end_(end), buf_(kMaxRead) {}
  common::UniqueFd fd_;
  std::string path_;
  std::uint64_t pos_;                 // absolute file offset of the next byte
  std::optional<std::uint64_t> end_;  // absolute end of the range; nullopt = end of file
  std::size_t next_read_ = kMinRead;  // grows while reads are sequential, shrinks after a skip
  std::vector<char> buf_;
};

// Passes another source through while hashing every byte with OpenSSL's EVP digest named by
// `algorithm` ("sha256" or "sha512"; Create refuses another with INVALID_ARG); Skip() is refused
// so every byte is hashed. Does not own `inner`. HexDigest() finalises once (then stays the same).
class HashingSource : public ByteSource {
 public:
  static common::Result<std::unique_ptr<HashingSource>> Create(ByteSource& inner,
                                                               std::string_view algorithm);
  ~HashingSource() override = default;
  HashingSource(const HashingSource&) = delete;
  HashingSource& operator=(const HashingSource&) = delete;
  common::Result<std::span<const char>> Next() override;
  std::uint64_t bytes() const { return bytes_; }  // read (and hashed) so far
  // "<algorithm>:<hex>" of everything read so far.
  std::string HexDigest();

 private:
  struct CtxFree {
    void operator()(evp_md_ctx_st* c) const;
  };
  HashingSource(ByteSource& inner, std::string algorithm, evp_md_ctx_st* ctx)
      : inner_(inner), algorithm_(std::move(algorithm)), ctx_(ctx) {}
  ByteSource& inner_;
  std::string algorithm_;
  std::unique_ptr<evp_md_ctx_st, CtxFree> ctx_;  // the EVP_MD_CTX (owned)
  std::uint64_t bytes_ = 0;
  std::string digest_;
};

// Reads the data of the current entry of an enclosing archive (not owned; must outlive this).
class ArchiveEntrySource : public ByteSource {
 public:
  ArchiveEntrySource(struct archive* outer, std::string name)
      : outer_(outer), name_(std::move(name)) {}
  common::Result<std::span<const char>> Next() override;

 private:
  struct archive* outer_;
  std::string name_;
};

// "<algorithm>:<hex>" of `data` for "sha256" or "sha512"; INVALID_ARG for another algorithm.
common::Result<std::string> DigestOf(std::string_view algorithm, std::string_view data);

enum class EntryType : std::uint8_t {
  kFile,
  kDir,
  kSymlink,
  kHardlink,
  kWhiteout,
  kOpaque,
  kOther
};
std::string_view EntryTypeName(EntryType t);

// Append-only storage for the names of one layer's entries (paths and link targets): one copy of
// each name in large blocks instead of a heap string per entry. A view it returns stays valid,
// at the same address, for the store's lifetime (blocks never move). Not thread-safe.
class NameStore {
 public:
  NameStore() = default;
  NameStore(const NameStore&) = delete;
  NameStore& operator=(const NameStore&) = delete;
  // Copies `s` into the store and returns the copy ("" needs no storage). Never fails (a
  // std::bad_alloc propagates, as from any container).
  std::string_view Add(std::string_view s);
  std::size_t bytes() const { return bytes_; }  // name bytes held

 private:
  static constexpr std::size_t kBlock = 1 << 20;
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* next_ = nullptr;  // free space in the last block
  std::size_t left_ = 0;  // bytes free at next_
  std::size_t bytes_ = 0;
};

// One tar entry after normalisation: `path` is relative ("usr/bin/gcc"), without "./", leading
// or trailing slashes. A whiteout ".wh.x" becomes kWhiteout with path "dir/x"; an opaque marker
// ".wh..wh..opq" becomes kOpaque with the directory's path. `path` and `link` view the
// LayerScan's NameStore (LayerScan::names), which every copy of the scan shares.
struct LayerEntry {
  std::string_view path;
  std::string_view link;   // symlink target (as written) or normalised hardlink target
  std::uint64_t size = 0;  // declared size of regular files, 0 otherwise
  std::int64_t mtime = 0;
  std::uint32_t mode = 0;
  EntryType type = EntryType::kFile;
};

struct ReaderLimits {
  // Sum of declared entry sizes over the whole image (decompression-bomb guard).
  std::uint64_t max_uncompressed_bytes = 64ull << 30;
  // Entries per layer.
  std::uint64_t max_entries = 4'000'000;
  // Entries over the whole image, a blob counted at every manifest position that names it (the
  // reader keeps one copy per position): bounds memory by the total, not entries x references.
  std::uint64_t max_total_entries = 8'000'000;
  // Layer references in one manifest (overlayfs stacks at most 128 lower layers).
  std::uint64_t max_layers = 256;
  // Declared uncompressed / compressed size ratio above which a layer larger than
  // `ratio_floor_bytes` is treated as a bomb.
  std::uint64_t max_ratio = 1000;
  std::uint64_t ratio_floor_bytes = 256ull << 20;
  // Largest file whose content may be captured (dpkg status and the like).
  std::uint64_t max_capture_bytes = 16ull << 20;
};

// Decides which file contents to keep in LayerScan::captured (by normalised path).
using CapturePredicate = std::function<bool(std::string_view path)>;

// What a scan keeps of file contents: small files in memory (`keep`, at most
// ReaderLimits::max_capture_bytes each) and large ones streamed to disk (`extract`: written under
// `extract_dir`, which the caller creates and removes, as `<extract_dir>/<n>/<basename>`, mode
// 0600, created exclusively). Extraction is bounded by `max_extract_files` and
// `max_extract_bytes` over the whole image (shared through `extract_budget`, which the scan
// decrements); a file over the remaining budget is not written and is listed in
// LayerScan::extract_skipped with the reason. Converts implicitly from a CapturePredicate (or
// nullptr) for the common keep-only case.
struct CaptureSpec {
  struct Budget {
    int files_left = 16;
    std::uint64_t bytes_left = 2ull << 30;
    int next_id = 0;
  };
  CaptureSpec() = default;
  template <typename F>
  requires std::is_constructible_v<CapturePredicate, F> CaptureSpec(F&& f)
      : keep(std::forward<F>(f)) {}  // NOLINT: implicit on purpose
  CapturePredicate keep;
  CapturePredicate extract;
  std::string extract_dir;
  std::shared_ptr<Budget> extract_budget;
};

struct LayerScan {
  Compression compression = Compression::kNone;
  // Decompression filters libarchive stacked on the blob (0 plain, 1 compressed, 2+ compressed
  // data inside compressed data).
  int compression_depth = 0;
  std::uint64_t compressed_bytes = 0;    // bytes pulled from the source
  std::uint64_t uncompressed_bytes = 0;  // tar stream bytes after decompression
  std::vector<LayerEntry> entries;
  // Storage of the entries' names, shared by copies of the scan (a blob named at several
  // manifest positions): the views in `entries` stay valid while any copy is alive.
  std::shared_ptr<const NameStore> names;
  std::map<std::string, std::string> captured;
  std::map<std::string, std::string> extracted;        // image path -> file on disk
  std::map<std::string, std::string> extract_skipped;  // image path -> why it was not written
  std::vector<Finding> findings;  // hostile content; the layer index is already filled in
  bool stopped_early = false;     // a limit stopped the scan (the entries are incomplete)
};

// Scans one layer. `layer` is the index used in findings and messages, `name` names the blob in
// error messages, `declared_compressed` is the descriptor size (0 if unknown; used by the ratio
// guard), `budget_left` the remaining image-wide uncompressed allowance (decremented).
// Errors: INVALID_ARG for an unknown compression, a corrupt or truncated stream, or a non-tar;
// the source's own Status when reading it fails; UNAVAILABLE when libarchive runs out of memory.
common::Result<LayerScan> ScanLayer(ByteSource& source, int layer, const std::string& name,
                                    std::uint64_t declared_compressed, const ReaderLimits& limits,
                                    std::uint64_t* budget_left, const CaptureSpec& capture);

// Normalises a tar member name. Returns nullopt for names containing a ".." component (path
// traversal); sets *absolute when the name started with "/". "" means the root itself.
std::optional<std::string> NormalizeMemberName(std::string_view name, bool* absolute);

}  // namespace tg::audit
