#include "common/file_util.h"

#include "common/atomic_file.h"
#include "common/file_util_internal.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "common/strings.h"

namespace tg::common {
namespace {

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

// What a non-regular file is, for "found ..." messages.
std::string KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISREG(mode)) return "a regular file";
  return "not a regular file";
}

// Anonymous pipes (`<(cmd)`, `cmd |`) show as "pipe:[inode]" in /proc/self/fd; named FIFOs show
// their path. Only a named FIFO can have "no writer yet" — an anonymous pipe's writer exists.
bool IsAnonymousPipe(int fd) {
  char link[64];
  const std::string self = "/proc/self/fd/" + std::to_string(fd);
  ssize_t n = ::readlink(self.c_str(), link, sizeof(link) - 1);
  return n > 5 && std::strncmp(link, "pipe:", 5) == 0;
}

Status TooLarge(const std::string& name, std::uint64_t max_bytes) {
  return Status::InvalidArg(name + ": larger than the limit of " + std::to_string(max_bytes) +
                            " bytes");
}

// Errors of this machine, not of the file named: out of descriptors or memory, a failing disk.
// The same file can be read on a retry or elsewhere, so they are UNAVAILABLE, not INVALID_ARG.
bool MachineFault(int err) {
  return err == EMFILE || err == ENFILE || err == ENOMEM || err == ENOBUFS || err == EIO ||
         err == EAGAIN || err == EINTR || err == ENOSPC;
}

Status OpenError(const std::string& what, int err) {
  if (MachineFault(err)) {
    return Status::Unavailable(what + ": " + std::strerror(err) +
                               " (a failure of this machine, not of the file)");
  }
  return Status::InvalidArg(what + ": " + std::strerror(err));
}

// Reads `fd` to its end. A pipe opened non-blocking waits in poll() with an idle timeout, so a
// writer that never writes is reported instead of hanging the command.
Result<std::string> ReadAll(int fd, const std::string& name, std::uint64_t max_bytes) {
  std::string data;
  std::unique_ptr<char[]> buf(new char[65536]);
  for (;;) {
    ssize_t n = ::read(fd, buf.get(), 65536);
    if (n > 0) {
      data.append(buf.get(), static_cast<std::size_t>(n));
      if (data.size() > max_bytes) return TooLarge(name, max_bytes);
      continue;
    }
    if (n == 0) return data;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      pollfd p{fd, POLLIN, 0};
      int r = ::poll(&p, 1, kPipeIdleTimeoutMs);
      if (r == 0) {
        return Status::InvalidArg(name + ": the pipe delivered no data for " +
                                  std::to_string(kPipeIdleTimeoutMs / 1000) + " s");
      }
      if (r < 0 && errno != EINTR) {
        return Status::InvalidArg(name + ": cannot wait for data: " + std::strerror(errno));
      }
      continue;
    }
    return OpenError(name + ": read error", errno);
  }
}

Status CheckStdin() {
  const std::string name = "standard input";
  struct stat st {};
  if (::fstat(STDIN_FILENO, &st) != 0) {
    return Status::InvalidArg(name + ": " +
                              (errno == EBADF ? std::string("is closed") : std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) return Status::InvalidArg(name + ": is a directory, expected data");
  if (S_ISSOCK(st.st_mode) || S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
    // fcntl tells a write-only descriptor apart before read() would (EBADF either way).
    int fl = ::fcntl(STDIN_FILENO, F_GETFL);
    if (fl >= 0 && (fl & O_ACCMODE) == O_WRONLY) {
      return Status::InvalidArg(name + ": is open for writing only, cannot read it");
    }
  }
  return Status::Ok();
}

Result<std::string> ReadStdin(std::uint64_t max_bytes) {
  TG_RETURN_IF_ERROR(CheckStdin());
  return ReadAll(STDIN_FILENO, "standard input", max_bytes);
}

// Opens `path` for reading and checks what it is. Never blocks: O_NONBLOCK makes open() of a FIFO
// return at once even when nothing writes to it.
Result<int> OpenForReading(const std::string& path, struct stat* st) {
  if (path.empty()) return Status::InvalidArg("empty file name");
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return Status::NotFound(path + ": file not found");
    if (err == ENXIO) return Status::InvalidArg(path + ": is a socket or device without a reader");
    return OpenError(path + ": cannot open for reading", err);
  }
  UniqueFd owner(fd);
  if (::fstat(fd, st) != 0) return OpenError(path + ": cannot access", errno);
  if (!S_ISREG(st->st_mode) && !S_ISFIFO(st->st_mode)) {
    return Status::InvalidArg(path + ": is " + KindOf(st->st_mode) + ", expected a regular file");
  }
  if (S_ISREG(st->st_mode)) {
    // Regular files never block; clear the flag so reads behave normally on every file system.
    int fl = ::fcntl(fd, F_GETFL);
    if (fl >= 0) (void)::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  }
  return owner.Release();
}

}  // namespace

Result<std::string> ReadFileLimited(const std::string& path, std::uint64_t max_bytes) {
  if (path == "-") return ReadStdin(max_bytes);
  struct stat st {};
  TG_ASSIGN_OR_RETURN(int raw, OpenForReading(path, &st));
  UniqueFd fd(raw);
  if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    return Status::InvalidArg(path + ": file is " + std::to_string(st.st_size) +
                              " bytes, larger than the limit of " + std::to_string(max_bytes) +
                              " bytes");
  }
  TG_ASSIGN_OR_RETURN(std::string data, ReadAll(fd.get(), path, max_bytes));
  // A named FIFO read with nobody writing gives an immediate end of file: say so rather than
  // hand an empty "file" to a parser whose error would be misleading.
  if (data.empty() && S_ISFIFO(st.st_mode) && !IsAnonymousPipe(fd.get())) {
    return Status::InvalidArg(path + ": is a FIFO (named pipe) with no writer, expected a file");
  }
  return data;
}

Result<int> OpenInputFd(const std::string& path, bool* named_fifo) {
  if (named_fifo != nullptr) *named_fifo = false;
  if (path == "-") {
    TG_RETURN_IF_ERROR(CheckStdin());
    int fd = ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return Status::InvalidArg(std::string("standard input: ") + std::strerror(errno));
    return fd;
  }
  struct stat st {};
  TG_ASSIGN_OR_RETURN(int raw, OpenForReading(path, &st));
  if (named_fifo != nullptr) *named_fifo = S_ISFIFO(st.st_mode) && !IsAnonymousPipe(raw);
  int fl = ::fcntl(raw, F_GETFL);
  if (fl >= 0) (void)::fcntl(raw, F_SETFL, fl & ~O_NONBLOCK);
  return raw;
}

// The file a write to `path` replaces: `path` itself, or the regular file a symbolic link names.
// Refuses anything that is not a regular file. Sets *exists and *mode (permission bits to keep).
Result<std::string> WriteTarget(const std::string& path, bool* exists, mode_t* mode) {
  struct stat st {};
  *exists = false;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return path;
    return Status::InvalidArg(path + ": cannot access: " + std::strerror(errno));
  }
  std::string target = path;
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    std::filesystem::path resolved = std::filesystem::canonical(path, ec);
    if (ec) {
      return Status::InvalidArg(path + ": is a symbolic link to a missing or unreadable file (" +
                                ec.message() + "); refusing to replace the link");
    }
    target = resolved.string();
    if (::stat(target.c_str(), &st) != 0) {
      return Status::InvalidArg(path + ": cannot access: " + std::strerror(errno));
    }
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidArg(path + ": is " + KindOf(st.st_mode) +
                              ", not a regular file; refusing to write over it");
  }
  *exists = true;
  *mode = st.st_mode & 07777;
  return target;
}

Status CheckParent(const std::string& path, const std::string& parent, bool create_parents) {
  struct stat st {};
  if (::stat(parent.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return Status::Ok();
    return Status::InvalidArg(path + ": parent '" + parent + "' is " + KindOf(st.st_mode) +
                              ", not a directory");
  }
  if (errno != ENOENT || !create_parents) {
    return Status::InvalidArg(path + ": parent directory '" + parent + "' " +
                              (errno == ENOENT
                                   ? std::string("does not exist (create it first)")
                                   : std::string("cannot be accessed: ") + std::strerror(errno)));
  }
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec) return Status::InvalidArg(parent + ": cannot create directory: " + ec.message());
  return Status::Ok();
}

// The file an output path names (symlinks followed by WriteTarget), refused when the path is
// empty or names a directory; shared by the writer and its pre-check so they cannot disagree.
Result<std::filesystem::path> OutputTarget(const std::string& path, bool* exists, mode_t* mode) {
  if (path.empty()) return Status::InvalidArg("empty output file name");
  TG_ASSIGN_OR_RETURN(std::string target, WriteTarget(path, exists, mode));
  std::filesystem::path tp(target);
  if (!tp.has_filename() || tp.filename() == "." || tp.filename() == "..") {
    return Status::InvalidArg(path + ": names a directory, expected a file name");
  }
  // A file of the kernel's /proc or /sys is "regular" to stat, but no output of ours: writing one
  // fails at best (after the work is done) and changes a kernel setting at worst.
  constexpr long kProcMagic = 0x9fa0, kSysfsMagic = 0x62656572;
  struct statfs fs {};
  const std::string probe =
      *exists ? target : (tp.has_parent_path() ? tp.parent_path().string() : std::string("."));
  if (::statfs(probe.c_str(), &fs) == 0 &&
      (static_cast<long>(fs.f_type) == kProcMagic || static_cast<long>(fs.f_type) == kSysfsMagic)) {
    return Status::InvalidArg(path + ": is on the kernel's /proc or /sys file system, not a file " +
                              "of ours; refusing to write there");
  }
  return tp;
}

Status WriteFileAtomic(const std::string& path, const std::string& data, bool create_parents) {
  TG_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> w,
                      AtomicFileWriter::Open(path, create_parents));
  w->Write(data);
  return w->Commit();
}

Status CheckOutputPath(const std::string& path) {
  bool exists = false;
  mode_t mode = 0;
  TG_ASSIGN_OR_RETURN(const std::filesystem::path tp, OutputTarget(path, &exists, &mode));
  return CheckParent(path, tp.has_parent_path() ? tp.parent_path().string() : ".", false);
}

TextPosition PositionOfOffset(const std::string& text, std::size_t offset) {
  TextPosition pos;
  if (offset > text.size()) offset = text.size();
  for (std::size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++pos.line;
      pos.column = 1;
    } else {
      ++pos.column;
    }
  }
  return pos;
}

std::string Sha256Hex(const void* data, std::size_t size) {
  std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  EVP_DigestUpdate(ctx.get(), data, size);
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  return HexLower(md, len);
}

Result<std::string> Sha256File(const std::string& path) {
  struct stat st {};
  TG_ASSIGN_OR_RETURN(int raw, OpenForReading(path, &st));
  UniqueFd fd(raw);
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidArg(path + ": is " + KindOf(st.st_mode) + ", expected a regular file");
  }
  std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  std::unique_ptr<char[]> buf(new char[1 << 20]);
  for (;;) {
    ssize_t n = ::read(fd.get(), buf.get(), 1 << 20);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::InvalidArg(path + ": read error: " + std::strerror(errno));
    if (n == 0) break;
    EVP_DigestUpdate(ctx.get(), buf.get(), static_cast<std::size_t>(n));
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  return HexLower(md, len);
}

bool IsRegularFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Status CheckInputPath(const std::string& path, std::string_view what, bool dir) {
  const std::string name = std::string(what) + " " + path;
  const char* kind = dir ? "a directory" : "a regular file";
  struct stat st {};
  if (path.empty()) {
    return Status::InvalidArg(std::string(what) + ": empty path; " + kind + " is required");
  }
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      return Status::NotFound(name + ": no such file or directory; " + kind + " is required");
    }
    return Status::InvalidArg(name + ": cannot access: " + std::strerror(errno));
  }
  // A pipe (`<(cmd)`) or FIFO passes: the reader handles it (and a FIFO without a writer).
  const bool right_kind = dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode);
  if (!right_kind) {
    return Status::InvalidArg(name + (dir ? " is not a directory" : " is not a file") + ": found " +
                              KindOf(st.st_mode) + ", " + kind + " is required");
  }
  if (::access(path.c_str(), dir ? (R_OK | X_OK) : R_OK) != 0) {
    return Status::InvalidArg(name + ": not readable: " + std::strerror(errno));
  }
  return Status::Ok();
}

Result<ScopedTempDir> ScopedTempDir::Create(const std::string& prefix) {
  std::error_code ec;
  std::string tmpl = (std::filesystem::temp_directory_path(ec) / (prefix + "-XXXXXX")).string();
  if (ec) tmpl = "/tmp/" + prefix + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return Status::Unavailable("cannot create a temporary directory " + tmpl + ": " +
                               std::strerror(errno));
  }
  return ScopedTempDir(std::move(tmpl));
}

ScopedTempDir::~ScopedTempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);  // best effort: a destructor cannot report
}

ScopedTempDir& ScopedTempDir::operator=(ScopedTempDir&& other) noexcept {
  if (this != &other) {
    ScopedTempDir old(std::move(path_));
    path_ = std::move(other.path_);
    other.path_.clear();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    UniqueFd old(Release());
    fd_ = other.Release();
  }
  return *this;
}

int UniqueFd::Close() {
  const int rc = fd_ >= 0 ? ::close(fd_) : 0;
  fd_ = -1;
  return rc;
}

}  // namespace tg::common
