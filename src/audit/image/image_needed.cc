// The GPU libraries' DT_NEEDED inside an image (see image_needed.h).
#include "audit/image/image_needed.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string>

#include "audit/image/image_ort.h"
#include "common/strings.h"
#include "probe/elf.h"

namespace tg::audit {
namespace {

constexpr const char* kNeededFix =
    "ship the library in the image where the dynamic linker finds it (scripts/build_image.sh "
    "copies every DT_NEEDED that ldd resolves on the build machine: install it there, e.g. the "
    "CUDA toolkit's libraries, and rebuild), or add its folder to LD_LIBRARY_PATH";

// "/opt/x/" -> "opt/x" (the merged filesystem's spelling).
std::string ImageDir(std::string_view d) {
  while (!d.empty() && d.front() == '/') d.remove_prefix(1);
  while (!d.empty() && d.back() == '/') d.remove_suffix(1);
  return std::string(d);
}

bool IsGpuProvider(std::string_view base) {
  return base == "libonnxruntime_providers_cuda.so" ||
         base == "libonnxruntime_providers_tensorrt.so";
}
// What the NVIDIA container toolkit mounts into a GPU container: never required of the image.
bool InjectedByToolkit(std::string_view base) {
  return base.starts_with("libcuda.so") || base.starts_with("libnvidia-") ||
         base.starts_with("libnvcuvid.so") || base.starts_with("libcudadebugger.so");
}
// The CUDA-side libraries a provider links (DT_NEEDED), whose own DT_NEEDED are read as well:
// cuBLAS/cuBLASLt, the CUDA runtime, cuRAND, cuFFT, cuDNN's loader (its sub-libraries are opened
// with dlopen, not linked) and TensorRT.
bool IsCudaSideLibrary(std::string_view base) {
  for (std::string_view stem :
       {"libcublas.so", "libcublasLt.so", "libcudart.so", "libcurand.so", "libcufft.so",
        "libcudnn.so", "libnvinfer.so", "libnvinfer_plugin.so", "libnvonnxparser.so"}) {
    if (base.starts_with(stem)) return true;
  }
  return false;
}

// The image path `soname` resolves to from `dirs` (a regular file, symlinks followed), or "".
std::string Resolve(const FileSystem& fs, const std::vector<std::string>& dirs,
                    const std::string& soname) {
  if (soname.find('/') != std::string::npos) {
    auto r = ResolvePath(fs, ImageDir(soname));
    auto it = r ? fs.find(*r) : fs.end();
    return it != fs.end() && it->type() == EntryType::kFile ? *r : "";
  }
  for (const auto& d : dirs) {
    auto r = ResolvePath(fs, d.empty() ? soname : d + "/" + soname);
    auto it = r ? fs.find(*r) : fs.end();
    if (it != fs.end() && it->type() == EntryType::kFile) return *r;
  }
  return "";
}

// Where the dynamic linker (and truegreen's loader) looks for the DT_NEEDED of `lib`.
std::vector<std::string> SearchDirs(const Image& image, const std::string& lib,
                                    const std::string& runpath) {
  std::vector<std::string> dirs;
  auto add = [&dirs](const std::string& d) {
    if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
  };
  const std::string origin(common::Dirname(lib));
  for (std::string d : common::Split(runpath, ':', common::SplitMode::kSkipEmpty)) {
    for (const char* tok : {"${ORIGIN}", "$ORIGIN"}) {
      for (auto p = d.find(tok); p != std::string::npos; p = d.find(tok)) {
        d.replace(p, std::string_view(tok).size(), "/" + origin);
      }
    }
    add(ImageDir(d));
  }
  for (const char* var : {"LD_LIBRARY_PATH", "TRUEGREEN_LIB_PATH"}) {
    auto it = image.env.find(var);
    if (it == image.env.end()) continue;
    for (const auto& d : common::Split(it->second, ':', common::SplitMode::kSkipEmpty)) {
      add(ImageDir(d));
    }
  }
  add(origin);
  for (const char* d : {"lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib64", "usr/lib64",
                        "lib", "usr/lib"}) {
    add(d);
  }
  return dirs;
}

struct Checker {
  const Image& image;
  const FileSystem& fs;
  std::vector<Finding> out;
  std::set<std::string> done;  // libraries already checked

  Finding At(std::string rule, Severity sev, const std::string& path, std::string message,
             std::string fix) const {
    auto it = fs.find(path);
    return MakeImageFinding(std::move(rule), sev, path, it == fs.end() ? -1 : it->layer(),
                            it == fs.end() ? 0 : it->size(), std::move(message), std::move(fix));
  }

  // Checks the DT_NEEDED of the library at image path `lib` (needed by `chain`, "" for a
  // provider); follows the CUDA-side libraries one level further when `depth` allows.
  void Check(const std::string& lib, const std::string& chain, int depth) {
    if (!done.insert(lib).second) return;
    std::string why;
    const std::string file = ExtractedFile(image, fs, lib, &why);
    if (file.empty()) {
      out.push_back(At("image.gpu.needed-unchecked", Severity::kWarning, lib,
                       fmt::format("the DT_NEEDED of {}{} were NOT checked: {}", lib, chain, why),
                       "audit an image whose libraries fit the extraction budget"));
      return;
    }
    auto dyn = probe::ReadElfDynamic(file);
    if (!dyn.ok()) {
      out.push_back(At("image.gpu.needed-unchecked", Severity::kWarning, lib,
                       fmt::format("the DT_NEEDED of {}{} were NOT checked: {}", lib, chain,
                                   dyn.status().message()),
                       "ship the library as its vendor builds it (an ELF64 shared object)"));
      return;
    }
    const std::vector<std::string> dirs = SearchDirs(image, lib, dyn->runpath);
    for (const auto& soname : dyn->needed) {
      if (InjectedByToolkit(common::Basename(soname))) continue;
      const std::string found = Resolve(fs, dirs, soname);
      if (found.empty()) {
        out.push_back(At("image.gpu.needed", Severity::kError, lib,
                         fmt::format("{} is not in the image: {}{} needs it (DT_NEEDED), and the "
                                     "dynamic linker would search {}",
                                     soname, lib, chain, fmt::join(dirs, ", ")),
                         kNeededFix));
      } else if (depth > 0 && IsCudaSideLibrary(common::Basename(found))) {
        Check(found, fmt::format(" (needed by {}{})", lib, chain), depth - 1);
      }
    }
  }
};

}  // namespace

bool ExtractForNeeded(std::string_view path) {
  const std::string_view base = common::Basename(path);
  return IsGpuProvider(base) || IsCudaSideLibrary(base);
}

std::vector<Finding> RunNeededRules(const Image& image, const FileSystem& fs) {
  Checker c{image, fs, {}, {}};
  for (const FsNode& n : fs) {
    if (n.type() != EntryType::kFile || !IsGpuProvider(common::Basename(n.path()))) continue;
    c.Check(std::string(n.path()), "", 1);
  }
  return std::move(c.out);
}

}  // namespace tg::audit
