#include "common/dynlib.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <utility>

#include "common/file_util.h"
#include "common/strings.h"
#include "common/telemetry.h"

#ifndef TG_BUNDLED_LIB_DIRS
#define TG_BUNDLED_LIB_DIRS ""
#endif

namespace tg::common {
namespace {

constexpr int kOpenFlags = RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE;

std::string RealPath(const std::string& p) {
  char buf[PATH_MAX];
  if (::realpath(p.c_str(), buf) != nullptr) return buf;
  return p;
}

std::string LastDlError() {
  const char* e = ::dlerror();
  return e ? e : "unknown dlopen error";
}

}  // namespace

DynamicLibrary::~DynamicLibrary() {
  // RTLD_NODELETE keeps the mapping; dlclose only drops our reference count.
  if (handle_ != nullptr) ::dlclose(handle_);
}

DynamicLibrary::DynamicLibrary(DynamicLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      name_(std::move(other.name_)),
      resolved_path_(std::move(other.resolved_path_)) {}

DynamicLibrary& DynamicLibrary::operator=(DynamicLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) ::dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    name_ = std::move(other.name_);
    resolved_path_ = std::move(other.resolved_path_);
  }
  return *this;
}

Result<void*> DynamicLibrary::Symbol(const char* symbol) const {
  if (handle_ == nullptr) return Status::Internal(name_ + ": library not loaded");
  ::dlerror();
  void* p = ::dlsym(handle_, symbol);
  if (p == nullptr) {
    return Status::NotFound(name_ + " (" + resolved_path_ + "): symbol '" + symbol + "' not found");
  }
  return p;
}

LibraryLoader::LibraryLoader(std::vector<std::string> search_dirs)
    : search_dirs_(std::move(search_dirs)) {}

LibraryLoader LibraryLoader::WithDefaults(const std::vector<std::string>& user_dirs) {
  std::vector<std::string> dirs = user_dirs;
  if (const char* env = std::getenv("TRUEGREEN_LIB_PATH")) {
    for (auto& d : Split(env, ':', SplitMode::kSkipEmpty)) dirs.push_back(d);
  }
  std::string exe = ExecutableDir();
  if (!exe.empty()) dirs.push_back(exe + "/../lib/truegreen");
  for (auto& d : Split(TG_BUNDLED_LIB_DIRS, ':', SplitMode::kSkipEmpty)) dirs.push_back(d);
  return LibraryLoader(std::move(dirs));
}

std::string LibraryLoader::FindInSearchDirs(const std::string& soname) const {
  if (!soname.empty() && soname[0] == '/') return IsRegularFile(soname) ? soname : "";
  for (const auto& d : search_dirs_) {
    std::string p = d + "/" + soname;
    if (IsRegularFile(p)) return p;
  }
  return "";
}

Result<DynamicLibrary> LibraryLoader::Load(const std::string& soname) const {
  // ORT reads its telemetry opt-out when its environment is created: decided before any load.
  ApplyOrtTelemetryPolicy();
  std::string candidate = FindInSearchDirs(soname);
  const std::string& target = candidate.empty() ? soname : candidate;
  ::dlerror();
  void* h = ::dlopen(target.c_str(), kOpenFlags);
  if (h == nullptr) {
    std::string err = LastDlError();
    if (candidate.empty() && soname[0] != '/') {
      // dlerror() usually starts with the name already ("libcuda.so.1: cannot open ...").
      return Status::NotFound(err.rfind(soname, 0) == 0 ? err : soname + ": " + err);
    }
    return Status::Unavailable(err);
  }
  std::string resolved = candidate;
  struct link_map* lm = nullptr;
  if (::dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm != nullptr && lm->l_name && lm->l_name[0]) {
    resolved = lm->l_name;
  }
  return DynamicLibrary(h, soname, RealPath(resolved.empty() ? soname : resolved));
}

std::string ExecutableDir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  buf[n] = '\0';
  return std::string(Dirname(buf));
}

}  // namespace tg::common
