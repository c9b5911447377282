// The ONNX Runtime pair rules (see image_ort.h).
#include "audit/image/image_ort.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <map>
#include <set>

#include "common/file_util.h"
#include "common/strings.h"

namespace tg::audit {

namespace {

constexpr std::string_view kCore = "libonnxruntime.so";
constexpr std::string_view kShared = "libonnxruntime_providers_shared.so";
constexpr const char* kPairFix =
    "ship the ONNX Runtime core and its providers from one GPU release archive of the same "
    "version (onnxruntime-linux-x64-gpu-<version>); with deploy/Dockerfile, unpack it under "
    "third_party/ and pass --build-arg ORT_DIR=<that folder>";

using common::Basename;
using common::Dirname;

// libonnxruntime.so, libonnxruntime.so.1, libonnxruntime.so.1.29.0.
bool IsCoreName(std::string_view base) {
  if (!base.starts_with(kCore)) return false;
  std::string_view rest = base.substr(kCore.size());
  if (rest.empty()) return true;
  if (rest.front() != '.' || rest.size() < 2) return false;
  return std::all_of(rest.begin(), rest.end(), [](char c) {
    return c == '.' || std::isdigit(static_cast<unsigned char>(c));
  });
}

bool IsGpuProviderName(std::string_view base) {
  return base == "libonnxruntime_providers_cuda.so" ||
         base == "libonnxruntime_providers_tensorrt.so";
}

Finding Make(std::string rule, Severity sev, const std::string& path, const FileSystem& fs,
             std::string message, std::string fix) {
  auto it = fs.find(path);
  const int layer = it == fs.end() ? -1 : it->layer();
  const std::uint64_t bytes = it == fs.end() ? 0 : it->size();
  return MakeImageFinding(std::move(rule), sev, path, layer, bytes, std::move(message),
                          std::move(fix));
}

// The core ORT would load from `dir`: libonnxruntime.so resolved through symlinks, else the
// first regular core file there.
std::string CoreIn(const FileSystem& fs, const std::string& dir,
                   const std::vector<std::string>& cores) {
  if (auto r = ResolvePath(fs, dir + "/" + std::string(kCore))) {
    auto it = fs.find(*r);
    if (it != fs.end() && it->type() == EntryType::kFile && IsCoreName(Basename(*r))) {
      return *r;
    }
  }
  for (const auto& c : cores) {
    if (Dirname(c) == dir) return c;
  }
  return "";
}

bool HasShared(const FileSystem& fs, const std::string& dir) {
  auto r = ResolvePath(fs, dir + "/" + std::string(kShared));
  if (!r) return false;
  auto it = fs.find(*r);
  return it != fs.end() && it->type() == EntryType::kFile;
}

struct Ctx {
  const Image& image;
  const FileSystem& fs;
  const OrtCoreInspector& inspect;
  std::string_view off_reason;  // why `inspect` is empty
  OrtPairReport* report;
  std::vector<Finding> out;

  void Unchecked(const std::string& path, const std::string& why) {
    out.push_back(Make("image.ort.unchecked", Severity::kWarning, path, fs,
                       "the ONNX Runtime core/provider pair was NOT checked: " + why,
                       "audit the image on an x86-64 Linux host where its core can be loaded, "
                       "or check the pair by hand (docs/AUDIT_IMAGE.md)"));
    if (report->skipped_reason.empty()) report->skipped_reason = why;
  }

  void CheckVersion(const std::string& provider, const std::string& core_version) {
    std::string why;
    const std::string file = ExtractedFile(image, fs, provider, &why);
    if (file.empty()) return Unchecked(provider, "the provider's release: " + why);
    const std::vector<std::string> found = VersionStringsInFile(file);
    if (found.empty()) {
      return Unchecked(provider,
                       "the provider carries no version string, so its release "
                       "could not be compared with the core's " +
                           core_version);
    }
    if (std::find(found.begin(), found.end(), core_version) != found.end()) return;
    out.push_back(Make(
        "image.ort.pair", Severity::kError, provider, fs,
        fmt::format("{} is from another ONNX Runtime release than the core beside it (core {}; "
                    "versions in the provider: {})",
                    provider, core_version, fmt::join(found, ", ")),
        kPairFix));
  }

  void CheckCore(const std::string& dir, const std::vector<std::string>& providers) {
    const std::string core = CoreIn(fs, dir, report->cores);
    if (core.empty()) {
      for (const auto& p : providers) {
        out.push_back(Make("image.ort.layout", Severity::kError, p, fs,
                           fmt::format("GPU provider {} has no ONNX Runtime core in its "
                                       "directory /{}",
                                       p, dir),
                           kPairFix));
      }
      return;
    }
    if (!HasShared(fs, dir)) {
      out.push_back(Make("image.ort.layout", Severity::kError, core, fs,
                         fmt::format("no {} beside the core {}: ORT opens it from the core's "
                                     "directory before any GPU provider",
                                     kShared, core),
                         kPairFix));
    }
    report->core = core;
    std::string why;
    const std::string file = ExtractedFile(image, fs, core, &why);
    if (file.empty()) return Unchecked(core, "the core " + core + ": " + why);
    if (!inspect) return Unchecked(core, std::string(off_reason));
    auto info = inspect(file);
    if (!info.ok()) {
      return Unchecked(
          core, "the core " + core + " could not be loaded here: " + info.status().message());
    }
    report->checked = true;
    report->core_version = info->version;
    report->build_info = info->build_info;
    const bool gpu = std::find(info->providers.begin(), info->providers.end(),
                               "CUDAExecutionProvider") != info->providers.end();
    report->core_flavor = gpu ? "gpu" : "cpu";
    for (const auto& p : providers) {
      if (!gpu) {
        out.push_back(Make(
            "image.ort.pair", Severity::kError, p, fs,
            fmt::format("GPU provider {} is paired with a CPU-built ONNX Runtime core {} ({}; it "
                        "compiles in only {}): the provider calls core entries that only a CUDA "
                        "build has, and crashes on Slice, Einsum, Tile and Resize",
                        p, core, info->version, fmt::join(info->providers, ", ")),
            kPairFix));
      }
      CheckVersion(p, info->version);
    }
  }
};

}  // namespace

std::string ExtractedFile(const Image& image, const FileSystem& fs, const std::string& path,
                          std::string* why) {
  auto it = fs.find(path);
  const int layer = it == fs.end() ? -1 : it->layer();
  if (layer < 0 || layer >= static_cast<int>(image.layers.size())) {
    *why = "its layer is unknown";
    return "";
  }
  const LayerScan& scan = image.layers[layer].scan;
  if (auto e = scan.extracted.find(path); e != scan.extracted.end()) return e->second;
  auto s = scan.extract_skipped.find(path);
  *why = s != scan.extract_skipped.end() ? "it was not extracted: " + s->second
                                         : "it was not extracted from its layer";
  return "";
}

bool ExtractForOrtPair(std::string_view path) {
  const std::string_view base = Basename(path);
  return IsCoreName(base) || IsGpuProviderName(base);
}

std::vector<Finding> RunOrtPairRules(const Image& image, const FileSystem& fs,
                                     const OrtCoreInspector& inspect, std::string_view off_reason,
                                     OrtPairReport* report) {
  *report = OrtPairReport{};
  std::map<std::string, std::vector<std::string>> providers_by_dir;
  for (const FsNode& node : fs) {
    if (node.type() != EntryType::kFile) continue;
    const std::string_view p = node.path();
    const std::string_view base = Basename(p);
    if (!IsCoreName(base) && !IsGpuProviderName(base)) continue;  // no copy of other paths
    const std::string path(p);
    if (IsCoreName(base)) report->cores.push_back(path);
    if (IsGpuProviderName(base)) {
      report->gpu_providers.push_back(path);
      providers_by_dir[std::string(Dirname(path))].push_back(path);
    }
  }
  Ctx ctx{image, fs, inspect, off_reason, report, {}};
  for (const auto& [dir, providers] : providers_by_dir) ctx.CheckCore(dir, providers);
  return std::move(ctx.out);
}

common::Json OrtPairToJson(const OrtPairReport& r) {
  common::Json j;
  j["cores"] = r.cores;
  j["gpu_providers"] = r.gpu_providers;
  j["core"] = r.core;
  j["core_version"] = r.core_version;
  j["core_flavor"] = r.core_flavor;
  j["build_info"] = r.build_info;
  j["checked"] = r.checked;
  j["skipped_reason"] = r.skipped_reason;
  return j;
}

std::vector<std::string> VersionStringsInFile(const std::string& path) {
  // Through the one input opener: a FIFO or device swapped in for the extracted file is refused,
  // never waited on. An unopenable file has no version strings.
  auto fd_or = common::OpenInputFd(path);
  if (!fd_or.ok()) return {};
  common::UniqueFd fd(*fd_or);
  std::set<std::string> found;
  std::string cur;
  bool valid = true;  // the current NUL-delimited string so far is digits and dots
  auto finish = [&] {
    int dots = 0;
    for (char c : cur) dots += c == '.';
    if (valid && dots == 2 && !cur.empty() && cur.front() != '.' && cur.back() != '.' &&
        cur.find("..") == std::string::npos && found.size() < 64) {
      found.insert(cur);
    }
    cur.clear();
    valid = true;
  };
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      const char c = buf[static_cast<std::size_t>(i)];
      if (c == '\0') {
        finish();
      } else if (valid && (c == '.' || std::isdigit(static_cast<unsigned char>(c))) &&
                 cur.size() < 11) {
        cur.push_back(c);
      } else {
        valid = false;
      }
    }
  }
  return {found.begin(), found.end()};
}

}  // namespace tg::audit
