// The one loader through which truegreen opens every GPU library and ONNX Runtime.
//
// Nothing in truegreen links against libcuda, libnvidia-ml, libcudart, cuDNN, TensorRT or ONNX
// Runtime: they are dlopen'ed here, so the binary starts and reports on a node where any of them is
// missing or broken, and tests substitute fake libraries by pointing --lib-path at them.
//
// Search order for a soname: each explicit search dir (--lib-path, then $TRUEGREEN_LIB_PATH), then
// the bundled dirs (third_party ONNX Runtime, <exe>/../lib/truegreen), then the normal dynamic
// linker search (LD_LIBRARY_PATH, ld.so.cache). A file that exists in a dir but fails to load is a
// failure with that file's error (we do not silently skip to another copy).
//
// Libraries are opened RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE: GLOBAL so that a provider library
// loaded later resolves its DT_NEEDED (libcuda.so.1, libcudart.so.13 ...) to the copy we found;
// NODELETE because CUDA and ORT do not survive being unloaded and re-loaded in one process.
//
// Ownership: DynamicLibrary owns one dlopen reference (move-only). LibraryLoader is immutable after
// construction and thread-safe; dlopen itself is thread-safe.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace tg::common {

class DynamicLibrary {
 public:
  DynamicLibrary() = default;  // holds nothing: loaded() is false
  ~DynamicLibrary();
  DynamicLibrary(DynamicLibrary&& other) noexcept;
  DynamicLibrary& operator=(DynamicLibrary&& other) noexcept;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;
  // Whether a library is held (false when default-constructed or moved from).
  bool loaded() const { return handle_ != nullptr; }
  // The soname or file name that was asked for.
  const std::string& name() const { return name_; }
  // Absolute, symlink-resolved path of the file the dynamic linker actually mapped.
  const std::string& resolved_path() const { return resolved_path_; }

  // Address of `symbol`, or NOT_FOUND naming library and symbol.
  Result<void*> Symbol(const char* symbol) const;
  // Typed convenience: nullptr when absent.
  template <typename Fn>
  Fn Function(const char* symbol) const {
    auto r = Symbol(symbol);
    return r.ok() ? reinterpret_cast<Fn>(r.value()) : nullptr;
  }

 private:
  friend class LibraryLoader;
  DynamicLibrary(void* handle, std::string name, std::string resolved_path)
      : handle_(handle), name_(std::move(name)), resolved_path_(std::move(resolved_path)) {}
  void* handle_ = nullptr;
  std::string name_;
  std::string resolved_path_;
};

class LibraryLoader {
 public:
  // `search_dirs` are tried in order before the normal dynamic-linker search.
  explicit LibraryLoader(std::vector<std::string> search_dirs = {});

  // Default loader for the CLI: `user_dirs` (--lib-path), then $TRUEGREEN_LIB_PATH, then the
  // bundled ONNX Runtime dirs, then the system search.
  static LibraryLoader WithDefaults(const std::vector<std::string>& user_dirs);

  // Opens `soname` (e.g. "libcuda.so.1") or an absolute path. Errors: NOT_FOUND when no copy
  // exists anywhere (message: the dynamic linker's text), UNAVAILABLE when a copy exists but fails
  // to load (message: that file and the loader's exact error, e.g. a missing dependency).
  Result<DynamicLibrary> Load(const std::string& soname) const;

  // Where `soname` would be found in the explicit dirs (first existing file), or "" if only the
  // system search could find it.
  std::string FindInSearchDirs(const std::string& soname) const;
  // The explicit dirs, in search order (immutable).
  const std::vector<std::string>& search_dirs() const { return search_dirs_; }

 private:
  std::vector<std::string> search_dirs_;
};

// The directory that holds the running executable ("" if unknown).
std::string ExecutableDir();

}  // namespace tg::common
