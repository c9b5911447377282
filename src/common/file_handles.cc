#include "common/file_handles.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace tg::common {

UniqueFile::~UniqueFile() {
  if (f_ != nullptr) std::fclose(f_);
}

UniqueFile& UniqueFile::operator=(UniqueFile&& other) noexcept {
  if (this != &other) {
    UniqueFile old(Release());
    f_ = other.Release();
  }
  return *this;
}

int UniqueFile::Close() {
  const int rc = f_ != nullptr ? std::fclose(f_) : 0;
  f_ = nullptr;
  return rc;
}

UniqueDir::~UniqueDir() {
  if (d_ != nullptr) ::closedir(d_);
}

Result<MappedFile> MappedFile::Map(int fd, std::size_t size, const std::string& what) {
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) {
    return Status::Unavailable("cannot map " + what + ": " + std::strerror(errno));
  }
  return MappedFile(p, size);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    MappedFile old(std::move(*this));
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

}  // namespace tg::common
