// RAII owners of the C library's file handles beside common::UniqueFd (file_util.h): a stdio
// stream, a directory stream and a read-only file mapping. Every such handle in truegreen has one
// of these as its one owner, so no early return or exception leaks it.
//
// Ownership: each object owns its handle and releases it in its destructor (fclose, closedir,
// munmap); move-only. Failure: Close reports fclose's result (a late write error); MappedFile::Map
// is UNAVAILABLE naming the file and errno. Thread safety: none (one owner).
#pragma once

#include <dirent.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "common/status.h"

namespace tg::common {

// Owns one stdio stream (std::fclose in the destructor).
class UniqueFile {
 public:
  explicit UniqueFile(std::FILE* f = nullptr) : f_(f) {}
  ~UniqueFile();
  UniqueFile(UniqueFile&& other) noexcept : f_(other.Release()) {}
  UniqueFile& operator=(UniqueFile&& other) noexcept;
  UniqueFile(const UniqueFile&) = delete;
  UniqueFile& operator=(const UniqueFile&) = delete;
  std::FILE* get() const { return f_; }  // nullptr when it holds none
  explicit operator bool() const { return f_ != nullptr; }
  std::FILE* Release() {  // gives the stream up (the caller closes it); holds none
    std::FILE* f = f_;
    f_ = nullptr;
    return f;
  }
  // Closes now and returns std::fclose's result (0 when it held none).
  int Close();

 private:
  std::FILE* f_;
};

// Owns one directory stream (closedir in the destructor).
class UniqueDir {
 public:
  // Opens `path` with opendir; holds none (get() null, errno set) when that fails.
  explicit UniqueDir(const std::string& path) : d_(::opendir(path.c_str())) {}
  ~UniqueDir();
  UniqueDir(UniqueDir&& other) noexcept : d_(other.d_) { other.d_ = nullptr; }
  UniqueDir& operator=(UniqueDir&&) = delete;
  UniqueDir(const UniqueDir&) = delete;
  UniqueDir& operator=(const UniqueDir&) = delete;
  DIR* get() const { return d_; }
  explicit operator bool() const { return d_ != nullptr; }

 private:
  DIR* d_;
};

// A read-only private mapping (PROT_READ, MAP_PRIVATE) of the first `size` bytes of a file,
// unmapped by the destructor. The mapping stays valid after the descriptor is closed.
class MappedFile {
 public:
  // Maps `size` (> 0) bytes of `fd` from offset 0; UNAVAILABLE "cannot map <what>: <errno text>"
  // when mmap fails (`what` names the file, e.g. "model file m.onnx").
  static Result<MappedFile> Map(int fd, std::size_t size, const std::string& what);
  MappedFile() = default;  // maps nothing: data() null, size() 0
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept : data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
    other.size_ = 0;
  }
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const std::uint8_t* data() const { return static_cast<const std::uint8_t*>(data_); }
  std::size_t size() const { return size_; }

 private:
  MappedFile(void* data, std::size_t size) : data_(data), size_(size) {}
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace tg::common
