#include "common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "common/file_util_internal.h"

namespace tg::common {
namespace {

std::atomic<unsigned> g_tmp_counter{0};

}  // namespace

Result<std::unique_ptr<AtomicFileWriter>> AtomicFileWriter::Open(const std::string& path,
                                                                 bool create_parents) {
  bool exists = false;
  mode_t mode = 0;
  TG_ASSIGN_OR_RETURN(const std::filesystem::path tp, OutputTarget(path, &exists, &mode));
  const std::string parent = tp.has_parent_path() ? tp.parent_path().string() : ".";
  TG_RETURN_IF_ERROR(CheckParent(path, parent, create_parents));

  // O_EXCL: the temporary is always a file we just created, never someone else's.
  std::unique_ptr<AtomicFileWriter> w(new AtomicFileWriter());
  w->path_ = path;
  w->target_ = tp.string();
  for (int attempt = 0; attempt < 100 && w->fd_ < 0; ++attempt) {
    w->tmp_ = (std::filesystem::path(parent) /
               ("." + tp.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                std::to_string(g_tmp_counter.fetch_add(1))))
                  .string();
    w->fd_ = ::open(w->tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (w->fd_ < 0 && errno != EEXIST) {
      return Status::InvalidArg(path + ": cannot create a file in '" + parent +
                                "': " + std::strerror(errno));
    }
  }
  if (w->fd_ < 0) return Status::InvalidArg(path + ": cannot create a temporary file");
  if (exists && ::fchmod(w->fd_, mode) != 0) {
    return Status::InvalidArg(path + ": cannot set permissions: " + std::strerror(errno));
  }
  return w;
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !tmp_.empty()) ::unlink(tmp_.c_str());
}

void AtomicFileWriter::Write(std::string_view data) noexcept {
  constexpr std::size_t kBufferBytes = 256 << 10;
  if (!error_.ok()) return;
  if (buffer_.size() + data.size() <= kBufferBytes) {
    try {
      if (buffer_.capacity() < kBufferBytes) buffer_.reserve(kBufferBytes);
      buffer_.append(data);
      return;
    } catch (...) {
      // No buffer: write through below.
    }
  }
  // A large piece goes straight to the file (a whole document is never copied into the buffer).
  Flush();
  WriteAll(data);
}

void AtomicFileWriter::Flush() noexcept {
  WriteAll(buffer_);
  buffer_.clear();
}

void AtomicFileWriter::WriteAll(std::string_view data) noexcept {
  std::size_t off = 0;
  while (error_.ok() && off < data.size()) {
    ssize_t n = ::write(fd_, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error_ = Status::InvalidArg(path_ + ": write failed: " + std::strerror(errno));
      break;
    }
    off += static_cast<std::size_t>(n);
  }
}

Status AtomicFileWriter::Commit() {
  Flush();
  Status st = error_;
  if (st.ok() && ::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS) {
    st = Status::InvalidArg(path_ + ": write failed (fsync): " + std::strerror(errno));
  }
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 && st.ok()) {
    st = Status::InvalidArg(path_ + ": write failed (close): " + std::strerror(errno));
  }
  if (st.ok()) {
    // Re-checked just before the rename: the target may have changed since the first look.
    bool exists_now = false;
    mode_t ignored = 0;
    auto again = WriteTarget(path_, &exists_now, &ignored);
    if (!again.ok()) st = again.status();
  }
  if (st.ok() && ::rename(tmp_.c_str(), target_.c_str()) != 0) {
    st = Status::InvalidArg(path_ + ": cannot rename into place: " + std::strerror(errno));
  }
  committed_ = st.ok();
  return st;
}

}  // namespace tg::common
