// Image rules. Each rule looks at the *final* filesystem (what a container sees); bytes hidden by
// later deletions are the efficiency rules' business (image_audit.cc).
#include "audit/image/image_rules.h"

#include "audit/report/byte_size.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <regex>
#include <sstream>

#include "common/strings.h"

namespace tg::audit {

using common::Json;
using common::Result;
using common::Status;
using common::YamlMap;

// ---- policy -------------------------------------------------------------------------------------

namespace {

Status GetSize(YamlMap& m, std::string_view key, std::optional<std::uint64_t>* out) {
  std::optional<std::string> text;
  TG_RETURN_IF_ERROR(m.Get(key, &text));
  if (!text) return Status::Ok();
  auto v = ParseByteSizeOrError(*text);
  if (!v.ok()) return m.FieldError(key, "a size of at most 16 EiB, such as 2GiB, 500MB or 1048576");
  *out = *v;
  return Status::Ok();
}

Status GetFraction(YamlMap& m, std::string_view key, double* out, double max = 1.0) {
  std::optional<double> v;
  TG_RETURN_IF_ERROR(m.Get(key, &v));
  if (!v) return Status::Ok();
  if (*v < 0 || *v > max) {
    return m.FieldError(key, max == 1.0 ? "a fraction between 0 and 1" : "a non-negative fraction");
  }
  *out = *v;
  return Status::Ok();
}

Result<ImagePolicy> ParseImageSection(const YAML::Node& node, const std::string& source) {
  ImagePolicy p;
  p.source = source;
  TG_ASSIGN_OR_RETURN(YamlMap m, YamlMap::From(node, source, "image"));
  TG_RETURN_IF_ERROR(GetSize(m, "budget", &p.budget));
  TG_RETURN_IF_ERROR(GetSize(m, "compressed_budget", &p.compressed_budget));
  TG_RETURN_IF_ERROR(GetSize(m, "layer_budget", &p.layer_budget));
  TG_RETURN_IF_ERROR(GetFraction(m, "lowest_efficiency", &p.lowest_efficiency));
  TG_RETURN_IF_ERROR(GetSize(m, "highest_wasted_bytes", &p.highest_wasted_bytes));
  TG_RETURN_IF_ERROR(
      GetFraction(m, "highest_user_wasted_percent", &p.highest_user_wasted_percent, 1e9));
  std::optional<std::string> fail_on;
  TG_RETURN_IF_ERROR(m.Get("fail_on", &fail_on));
  if (fail_on) {
    auto s = ParseSeverity(*fail_on);
    if (!s || *s == Severity::kInfo) return m.FieldError("fail_on", "'error' or 'warning'");
    p.fail_on = *s;
  }
  std::vector<std::string> disabled;
  TG_RETURN_IF_ERROR(m.Get("disable", &disabled));
  p.disabled.insert(disabled.begin(), disabled.end());
  std::map<std::string, std::string> sev;
  TG_RETURN_IF_ERROR(m.Get("severity", &sev));
  for (const auto& [rule, level] : sev) {
    if (level == "off") {
      p.disabled.insert(rule);
      continue;
    }
    auto s = ParseSeverity(level);
    if (!s) {
      return m.FieldError(
          "severity",
          fmt::format("off|info|warning|error for rule '{}' (found '{}')", rule, level));
    }
    p.severity[rule] = *s;
  }
  TG_ASSIGN_OR_RETURN(auto limits, m.GetMap("limits"));
  if (limits) {
    std::optional<std::uint64_t> v;
    TG_RETURN_IF_ERROR(GetSize(*limits, "max_uncompressed_bytes", &v));
    if (v) p.limits.max_uncompressed_bytes = *v;
    std::optional<std::int64_t> n;
    TG_RETURN_IF_ERROR(limits->Get("max_entries", &n));
    if (n) {
      if (*n <= 0) return limits->FieldError("max_entries", "a positive integer");
      p.limits.max_entries = static_cast<std::uint64_t>(*n);
    }
    std::optional<std::int64_t> ratio;
    TG_RETURN_IF_ERROR(limits->Get("max_ratio", &ratio));
    if (ratio) {
      if (*ratio <= 0) return limits->FieldError("max_ratio", "a positive integer");
      p.limits.max_ratio = static_cast<std::uint64_t>(*ratio);
    }
    TG_RETURN_IF_ERROR(limits->Finish());
  }
  TG_RETURN_IF_ERROR(m.Finish());
  return p;
}

}  // namespace

Result<ImagePolicy> ParseImagePolicy(const std::string& yaml_text, const std::string& source) {
  TG_ASSIGN_OR_RETURN(YAML::Node root, common::ParseYaml(yaml_text, source));
  if (root.IsNull()) {
    ImagePolicy p;
    p.source = source;
    return p;
  }
  TG_ASSIGN_OR_RETURN(YamlMap m, YamlMap::From(root, source, ""));
  ImagePolicy p;
  p.source = source;
  TG_ASSIGN_OR_RETURN(auto image_map, m.GetMap("image"));
  if (image_map) {
    TG_ASSIGN_OR_RETURN(p, ParseImageSection(image_map->node(), source));
  }
  // The other audits' sections share the file; they are validated by their own commands, here
  // they are only marked as known so that Finish() still rejects typos at the top level.
  for (const char* other : {"dockerfile", "k8s"}) {
    TG_ASSIGN_OR_RETURN(auto section, m.GetMap(other));
    (void)section;
  }
  std::int64_t schema = 1;
  TG_RETURN_IF_ERROR(m.Get("schema", &schema));
  if (schema != 1) return m.FieldError("schema", "1");
  p.source = source;
  TG_RETURN_IF_ERROR(m.Finish());
  return p;
}

Result<LoadedPolicy> LoadImagePolicy(const std::string& path) {
  TG_ASSIGN_OR_RETURN(std::string text, common::ReadFileLimited(path, common::kMaxConfigBytes));
  TG_ASSIGN_OR_RETURN(YAML::Node root, common::ParseYaml(text, path));
  LoadedPolicy lp;
  bool audit_file =
      root.IsNull() || (root.IsMap() && (root["image"] || root["dockerfile"] || root["k8s"]));
  if (!audit_file && root.IsMap() &&
      (root["cuda"] || root["onnxruntime"] || root["driver"] || root["cudnn"] || root["tensorrt"] ||
       root["require_gpu"] || root["devices"] || root["container"])) {
    // --policy is also the global "matrix file" option: accept a matrix here too.
    TG_ASSIGN_OR_RETURN(lp.matrix, policy::ParseMatrix(text, path));
    lp.image.source = path;
    return lp;
  }
  TG_ASSIGN_OR_RETURN(lp.image, ParseImagePolicy(text, path));
  return lp;
}

std::vector<Finding> ApplyPolicy(std::vector<Finding> findings, const ImagePolicy& policy) {
  std::vector<Finding> out;
  for (auto& f : findings) {
    bool off = policy.disabled.count(f.rule) > 0;
    for (const auto& d : policy.disabled) {
      if (d.ends_with(".*") && f.rule.starts_with(d.substr(0, d.size() - 1))) off = true;
    }
    if (off) continue;
    auto it = policy.severity.find(f.rule);
    if (it != policy.severity.end()) f.severity = it->second;
    out.push_back(std::move(f));
  }
  return out;
}

// ---- helpers ------------------------------------------------------------------------------------

namespace {

using common::Basename;
using common::Dirname;
std::vector<std::string_view> Components(std::string_view p) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i <= p.size()) {
    std::size_t j = p.find('/', i);
    if (j == std::string_view::npos) j = p.size();
    if (j > i) out.push_back(p.substr(i, j - i));
    i = j + 1;
  }
  return out;
}
bool HasComponent(std::string_view p, std::string_view c) {
  for (auto x : Components(p)) {
    if (x == c) return true;
  }
  return false;
}

constexpr auto Make = MakeImageFinding;

// Sums files under grouped roots ("usr/include", ".../.git"): one finding per root.
struct Group {
  std::uint64_t bytes = 0;
  std::uint64_t files = 0;
  std::map<int, std::uint64_t> by_layer;
  int MainLayer() const {
    int best = -1;
    std::uint64_t b = 0;
    for (auto [l, n] : by_layer) {
      if (best < 0 || n > b) {
        best = l;
        b = n;
      }
    }
    return best;
  }
};

void AddTo(std::map<std::string, Group>* groups, const std::string& root, const FsNode& n) {
  Group& g = (*groups)[root];
  if (n.type() == EntryType::kFile) {
    g.bytes += n.size();
    ++g.files;
  }
  g.by_layer[n.layer()] += n.size();
}

// Prefix of `p` up to and including the first component satisfying `pred`, or "".
template <typename Pred>
std::string RootAt(std::string_view p, Pred pred, bool must_have_below) {
  auto comps = Components(p);
  std::string root;
  for (std::size_t i = 0; i < comps.size(); ++i) {
    if (!root.empty()) root.push_back('/');
    root.append(comps[i]);
    if (pred(comps, i)) {
      if (must_have_below && i + 1 == comps.size()) return "";
      return root;
    }
  }
  return "";
}

const std::regex& BuildToolRe() {
  static const std::regex re(
      R"(^((x86_64|aarch64|i686|powerpc64le)-linux-gnu-)?(gcc|g\+\+|c\+\+|cc|cpp|clang|clang\+\+|gfortran)(-[0-9]+(\.[0-9]+)*)?$)");
  return re;
}

bool IsBuildTool(std::string_view path) {
  std::string_view base = Basename(path);
  std::string_view dir = Dirname(path);
  bool in_bin = dir.ends_with("bin");
  if (base == "cc1" || base == "cc1plus" || base == "cc1obj") return true;
  if (base == "nvcc") return true;
  if (!in_bin) return false;
  if (base == "make" || base == "gmake" || base == "cmake" || base == "ninja") return true;
  return std::regex_match(std::string(base), BuildToolRe());
}

bool IsCertStore(std::string_view p) {
  return p.starts_with("etc/ssl/") || p.starts_with("usr/share/ca-certificates/") ||
         p.starts_with("usr/lib/ssl/") || p.starts_with("etc/pki/") ||
         p.starts_with("etc/ca-certificates/") || Basename(p) == "cacert.pem" ||
         HasComponent(p, "certifi") || HasComponent(p, "certs");
}

struct DpkgPackage {
  std::string name;
  std::string status;
  std::uint64_t installed_kib = 0;
};

std::vector<DpkgPackage> ParseDpkgStatus(const std::string& text) {
  std::vector<DpkgPackage> out;
  DpkgPackage cur;
  std::istringstream in(text);
  std::string line;
  auto flush = [&] {
    if (!cur.name.empty()) out.push_back(cur);
    cur = DpkgPackage{};
  };
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      flush();
      continue;
    }
    auto value = [&](std::string_view key) -> std::optional<std::string> {
      if (!line.starts_with(key)) return std::nullopt;
      std::string v = line.substr(key.size());
      auto first = v.find_first_not_of(' ');
      return first == std::string::npos ? "" : v.substr(first);
    };
    if (auto v = value("Package:")) cur.name = *v;
    if (auto v = value("Status:")) cur.status = *v;
    if (auto v = value("Installed-Size:"))
      cur.installed_kib = std::strtoull(v->c_str(), nullptr, 10);
  }
  flush();
  return out;
}

}  // namespace

bool CaptureForRules(std::string_view path) {
  return path == "var/lib/dpkg/status" || path.starts_with("var/lib/dpkg/status.d/");
}

// ---- file rules ---------------------------------------------------------------------------------

namespace {

// Directories whose files are reported as one finding each (root -> sizes).
struct FileGroups {
  std::map<std::string, Group> headers, tests, caches, vcs, checkpoints;
};

// /usr/include and CUDA include directories (toolkit and pip nvidia-* wheels).
std::string HeaderRoot(std::string_view path) {
  if (path.starts_with("usr/include/")) return "usr/include";
  return RootAt(
      path,
      [](const auto& c, std::size_t i) {
        if (c[i] != "include" || i == 0) return false;
        for (std::size_t k = 0; k < i; ++k) {
          if (c[k].starts_with("cuda") || c[k] == "nvidia" || c[k] == "tensorrt" ||
              c[k] == "TensorRT") {
            return true;
          }
        }
        return false;
      },
      true);
}

std::string CacheRoot(std::string_view path, std::string_view base) {
  std::string croot = RootAt(
      path,
      [](const auto& c, std::size_t i) {
        return i > 0 && c[i - 1] == ".cache" && (c[i] == "pip" || c[i] == "huggingface");
      },
      false);
  if (croot.empty() && path.starts_with("var/lib/apt/lists/") && base != "lock" &&
      !HasComponent(path, "partial")) {
    croot = "var/lib/apt/lists";
  }
  if (croot.empty() && path.starts_with("var/cache/apt/archives/") && base.ends_with(".deb")) {
    croot = "var/cache/apt/archives";
  }
  return croot;
}

bool LooksLikeSecretFile(std::string_view path, std::string_view base) {
  if (base == ".env" ||
      (base.starts_with(".env.") && !base.ends_with(".example") && !base.ends_with(".sample"))) {
    return true;
  }
  if (base == "id_rsa" || base == "id_dsa" || base == "id_ecdsa" || base == "id_ed25519") {
    return true;
  }
  return base.ends_with(".pem") && !IsCertStore(path);
}

// One path of the final filesystem: direct findings into `out`, grouped ones into `g`.
void ClassifyPath(std::string_view path, const FsNode& n, FileGroups* g,
                  std::vector<Finding>* out) {
  bool leafish = n.type() == EntryType::kFile || n.type() == EntryType::kSymlink ||
                 n.type() == EntryType::kHardlink;
  std::string_view base = Basename(path);
  if (leafish && IsBuildTool(path)) {
    out->push_back(Make("image.build-tools", Severity::kError, std::string(path), n.layer(),
                        n.size(), fmt::format("build tool '{}' ships in the runtime image", base),
                        "compile in a build stage and COPY only the artifacts into a slim "
                        "runtime stage"));
  }
  if (n.type() == EntryType::kDir) return;
  if (std::string h = HeaderRoot(path); !h.empty()) AddTo(&g->headers, h, n);
  std::string cp = RootAt(
      path, [](const auto& c, std::size_t i) { return c[i] == ".ipynb_checkpoints"; }, false);
  if (base.ends_with(".ipynb") && n.type() == EntryType::kFile && cp.empty()) {
    out->push_back(Make("image.notebooks", Severity::kError, std::string(path), n.layer(), n.size(),
                        "Jupyter notebook ships in the runtime image",
                        "exclude *.ipynb in .dockerignore; ship code as modules"));
  }
  if (!cp.empty()) AddTo(&g->checkpoints, cp, n);
  std::string troot = RootAt(
      path, [](const auto& c, std::size_t i) { return c[i] == "tests" || c[i] == "test"; }, true);
  if (!troot.empty()) AddTo(&g->tests, troot, n);
  if (std::string c = CacheRoot(path, base); !c.empty()) AddTo(&g->caches, c, n);
  std::string vroot = RootAt(
      path,
      [](const auto& c, std::size_t i) {
        return c[i] == ".git" || c[i] == ".svn" || c[i] == ".hg";
      },
      false);
  if (!vroot.empty()) AddTo(&g->vcs, vroot, n);
  if (n.type() == EntryType::kFile && LooksLikeSecretFile(path, base)) {
    out->push_back(Make("image.secrets", Severity::kError, std::string(path), n.layer(), n.size(),
                        "secret-looking file ships in the image (anyone who can pull the image "
                        "can read it)",
                        "remove it, rotate the credential, and mount secrets at run time "
                        "(Kubernetes Secret, BuildKit --mount=type=secret)"));
  }
}

void EmitGroups(const FileGroups& g, std::vector<Finding>* out) {
  auto emit = [&](const std::map<std::string, Group>& groups, const char* rule, Severity sev,
                  const std::string& what, const std::string& fix) {
    for (const auto& [root, gr] : groups) {
      out->push_back(Make(rule, sev, root, gr.MainLayer(), gr.bytes,
                          fmt::format("{} ({} files)", what, gr.files), fix));
    }
  };
  emit(g.headers, "image.headers", Severity::kError, "C/C++/CUDA headers ship in the runtime image",
       "use a -runtime base image (not -devel) and install headers only in the build stage");
  emit(g.checkpoints, "image.notebooks", Severity::kError, "Jupyter checkpoints ship in the image",
       "add .ipynb_checkpoints to .dockerignore");
  emit(g.tests, "image.tests", Severity::kWarning, "test suites ship in the image",
       "exclude tests from the runtime stage (.dockerignore, or delete in the same layer)");
  emit(g.caches, "image.caches", Severity::kError, "package or model cache ships in the image",
       "use pip --no-cache-dir, 'rm -rf /var/lib/apt/lists/*' in the same RUN, and mount model "
       "caches at run time");
  emit(g.vcs, "image.vcs", Severity::kError, "version-control metadata ships in the image",
       "add .git to .dockerignore");
}

// -dev packages from the dpkg database as it is in the final filesystem.
void DevPackageRule(const Image& image, const FileSystem& fs, std::vector<Finding>* out) {
  for (const FsNode& n : fs) {
    if (n.type() != EntryType::kFile || !CaptureForRules(n.path())) continue;
    const std::string path(n.path());
    if (n.layer() < 0 || n.layer() >= static_cast<int>(image.layers.size())) continue;
    const auto& cap = image.layers[n.layer()].scan.captured;
    auto it = cap.find(path);
    if (it == cap.end()) continue;
    for (const auto& pkg : ParseDpkgStatus(it->second)) {
      bool installed = pkg.status.find("installed") != std::string::npos &&
                       pkg.status.find("not-installed") == std::string::npos &&
                       pkg.status.find("config-files") == std::string::npos;
      std::string_view name = pkg.name;
      if (auto colon = name.find(':'); colon != std::string_view::npos)
        name = name.substr(0, colon);
      if (!installed || !name.ends_with("-dev")) continue;
      out->push_back(Make("image.dev-packages", Severity::kError, path, n.layer(),
                          pkg.installed_kib * 1024,
                          fmt::format("development package '{}' is installed", pkg.name),
                          "install -dev packages only in the build stage; the runtime stage "
                          "needs the runtime library package"));
    }
  }
}

// Symlink loops: harmless to the audit (resolution is bounded) but a broken image.
void SymlinkLoopRule(const FileSystem& fs, std::vector<Finding>* out) {
  for (const FsNode& n : fs) {
    if (n.type() != EntryType::kSymlink || ResolvePath(fs, n.path())) continue;
    const std::string path(n.path());
    out->push_back(Make("image.hostile.symlink-loop", Severity::kWarning, path, n.layer(), 0,
                        fmt::format("symbolic link '{}' -> '{}' never resolves (loop or more than "
                                    "40 hops)",
                                    path, n.link()),
                        "fix or remove the link"));
  }
}

}  // namespace

std::vector<Finding> RunFileRules(const Image& image, const FileSystem& fs) {
  std::vector<Finding> out;
  FileGroups groups;
  for (const FsNode& n : fs) ClassifyPath(n.path(), n, &groups, &out);
  EmitGroups(groups, &out);
  DevPackageRule(image, fs, &out);
  SymlinkLoopRule(fs, &out);
  return out;
}

// ---- capability snapshot ------------------------------------------------------------------------

namespace {

struct LibPattern {
  const char* component;
  const char* prefix;  // "libcudart.so"
};
constexpr LibPattern kLibs[] = {
    {"cuda-runtime", "libcudart.so"},
    {"cublas", "libcublas.so"},
    {"cudnn", "libcudnn.so"},
    {"tensorrt", "libnvinfer.so"},
    {"onnxruntime", "libonnxruntime.so"},
    {"nccl", "libnccl.so"},
};
struct WheelPattern {
  const char* component;
  const char* prefix;  // dist-info name prefix, ending in '-'
};
constexpr WheelPattern kWheels[] = {
    {"cuda-runtime", "nvidia_cuda_runtime_cu"},
    {"cublas", "nvidia_cublas_cu"},
    {"cudnn", "nvidia_cudnn_cu"},
    {"tensorrt", "tensorrt_libs-"},
    {"tensorrt", "tensorrt-"},
    {"tensorrt", "tensorrt_cu"},
    {"onnxruntime", "onnxruntime_gpu-"},
    {"onnxruntime", "onnxruntime-"},
    {"nccl", "nvidia_nccl_cu"},
};

bool IsVersion(std::string_view v) {
  if (v.empty() || v.front() == '.' || v.back() == '.') return false;
  for (char c : v) {
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.')) return false;
  }
  return true;
}

int Parts(std::string_view v) { return 1 + static_cast<int>(std::count(v.begin(), v.end(), '.')); }

void Record(CapabilitySnapshot* s, const std::string& comp, const std::string& version,
            std::string_view path, const FsNode& n) {
  Component& c = s->components[comp];
  if (!version.empty() &&
      std::find(c.all_versions.begin(), c.all_versions.end(), version) == c.all_versions.end()) {
    c.all_versions.push_back(version);
    std::sort(c.all_versions.begin(), c.all_versions.end());
  }
  bool better = c.path.empty() ||
                (!version.empty() && (c.version.empty() || Parts(version) > Parts(c.version)));
  if (better) {
    c.version = version;
    c.path = std::string(path);
    c.layer = n.layer();
  }
  if (n.type() == EntryType::kFile) c.bytes += n.size();
}

}  // namespace

CapabilitySnapshot BuildSnapshot(const Image& image, const FileSystem& fs) {
  CapabilitySnapshot s;
  for (const FsNode& n : fs) {
    const std::string_view path = n.path();
    std::string_view base = Basename(path);
    if (n.type() == EntryType::kFile || n.type() == EntryType::kSymlink) {
      for (const auto& lp : kLibs) {
        std::string_view pre = lp.prefix;
        if (!base.starts_with(pre)) continue;
        std::string_view rest = base.substr(pre.size());
        if (rest.empty()) {
          Record(&s, lp.component, "", path, n);  // unversioned dev symlink
        } else if (rest.front() == '.' && IsVersion(rest.substr(1))) {
          Record(&s, lp.component, std::string(rest.substr(1)), path, n);
        }
      }
      if (base == "libonnxruntime_providers_cuda.so") Record(&s, "ort-provider-cuda", "", path, n);
      if (base == "libonnxruntime_providers_tensorrt.so") {
        Record(&s, "ort-provider-tensorrt", "", path, n);
      }
    }
    if (n.type() == EntryType::kDir && base.ends_with(".dist-info")) {
      std::string_view stem = base.substr(0, base.size() - 10);
      for (const auto& wp : kWheels) {
        std::string_view pre = wp.prefix;
        if (!stem.starts_with(pre)) continue;
        auto dash = stem.rfind('-');
        if (dash == std::string_view::npos) continue;
        std::string_view ver = stem.substr(dash + 1);
        if (IsVersion(ver)) Record(&s, wp.component, std::string(ver), path, n);
        break;
      }
    }
  }
  for (const auto& [k, v] : image.env) {
    if (k.starts_with("NVIDIA_") || k == "CUDA_VERSION" || k.starts_with("NV_") ||
        k == "CUDNN_VERSION" || k == "TRT_VERSION" || k == "TENSORRT_VERSION") {
      s.env[k] = v;
    }
  }
  s.gpu_image = image.env.count("CUDA_VERSION") > 0;
  for (const char* c : {"cuda-runtime", "cublas", "cudnn", "tensorrt", "ort-provider-cuda",
                        "ort-provider-tensorrt"}) {
    if (s.components.count(c)) s.gpu_image = true;
  }
  return s;
}

Json SnapshotToJson(const CapabilitySnapshot& snap) {
  Json j;
  Json comps = Json::object();
  for (const auto& [name, c] : snap.components) {
    comps[name] = {{"version", c.version},
                   {"path", c.path},
                   {"layer", c.layer},
                   {"bytes", c.bytes},
                   {"all_versions", c.all_versions}};
  }
  j["components"] = comps;
  j["env"] = snap.env;
  j["gpu_image"] = snap.gpu_image;
  return j;
}

// ---- GPU rules ----------------------------------------------------------------------------------

namespace {

// "cuda>=12.2 brand=tesla,driver>=470" -> "12.2" (the first cuda>= clause).
std::optional<std::string> RequiredCuda(const std::string& require) {
  static const std::regex re(R"(cuda>=([0-9]+(\.[0-9]+)*))");
  std::smatch m;
  if (std::regex_search(require, m, re)) return m[1].str();
  return std::nullopt;
}

std::string MajorMinor(const std::string& v) {
  auto p = policy::Version::Parse(v);
  if (!p) return v;
  return fmt::format("{}.{}", p->major(), p->minor());
}

bool Truthy(const std::string& v) {
  const std::string l = common::Lower(v);
  return !(l.empty() || l == "0" || l == "false" || l == "no");
}

}  // namespace

namespace {

using EnvLookup = std::function<std::optional<std::string>(const char*)>;

// libcuda / libnvidia-ml baked into the image (stubs are fine, compat is a warning).
void DriverLibRule(const FileSystem& fs, std::vector<Finding>* out) {
  for (const FsNode& n : fs) {
    if (n.type() != EntryType::kFile && n.type() != EntryType::kSymlink) continue;
    const std::string_view path = n.path();
    std::string_view base = Basename(path);
    bool driver = false;
    for (std::string_view pre : {"libcuda.so", "libnvidia-ml.so"}) {
      if (base.starts_with(pre)) {
        std::string_view rest = base.substr(pre.size());
        if (rest.empty() || (rest.front() == '.' && IsVersion(rest.substr(1)))) driver = true;
      }
    }
    if (!driver || HasComponent(path, "stubs")) continue;
    if (HasComponent(path, "compat")) {
      out->push_back(Make("image.gpu.driver-libs", Severity::kWarning, std::string(path), n.layer(),
                          n.size(),
                          "CUDA forward-compatibility driver library baked in: it only works on "
                          "data-center GPUs and fails with error 804 elsewhere",
                          "drop cuda-compat unless every target node is a data-center GPU whose "
                          "driver is older than the toolkit"));
      continue;
    }
    out->push_back(Make("image.gpu.driver-libs", Severity::kError, std::string(path), n.layer(),
                        n.size(),
                        fmt::format("driver library '{}' baked into the image: it shadows the "
                                    "host driver the NVIDIA container toolkit injects (version "
                                    "mismatch, error 803)",
                                    base),
                        "remove driver libraries from the image; only the toolkit may provide "
                        "libcuda and libnvidia-ml (link against the stubs/ copies at build time)"));
  }
}

// NVIDIA_VISIBLE_DEVICES and NVIDIA_DRIVER_CAPABILITIES of a GPU image.
void ToolkitEnvRules(const EnvLookup& env, const policy::Matrix* matrix,
                     std::vector<Finding>* out) {
  auto vis = env("NVIDIA_VISIBLE_DEVICES");
  if (!vis || vis->empty() || *vis == "void" || *vis == "none") {
    out->push_back(
        Make("image.gpu.visible-devices", Severity::kError, "", -1, 0,
             fmt::format("GPU image with NVIDIA_VISIBLE_DEVICES {}: the NVIDIA container toolkit "
                         "injects no GPU (and no libcuda) unless the runtime sets it",
                         vis ? fmt::format("'{}'", *vis) : std::string("unset")),
             "set ENV NVIDIA_VISIBLE_DEVICES=all in the image (Kubernetes narrows it to the "
             "requested GPUs)"));
  }
  auto caps = env("NVIDIA_DRIVER_CAPABILITIES");
  if (!caps || caps->empty()) return;
  std::vector<std::string> need = {"compute", "utility"};
  if (matrix != nullptr && !matrix->container.driver_capabilities.empty()) {
    need = matrix->container.driver_capabilities;
  }
  std::set<std::string> have;
  // Blanks around an entry do not count (only spaces: a tab stays part of the name).
  for (const std::string& item : common::Split(*caps, ',', common::SplitMode::kKeepEmpty)) {
    have.insert(std::string(common::Trim(item, " ")));
  }
  std::vector<std::string> missing;
  if (!have.count("all")) {
    for (const auto& c : need) {
      if (!have.count(c)) missing.push_back(c);
    }
  }
  if (missing.empty()) return;
  out->push_back(Make("image.gpu.driver-capabilities", Severity::kError, "", -1, 0,
                      fmt::format("NVIDIA_DRIVER_CAPABILITIES='{}' lacks {}: CUDA needs "
                                  "'compute' (libcuda) and NVML needs 'utility'",
                                  *caps, fmt::join(missing, ", ")),
                      "set NVIDIA_DRIVER_CAPABILITIES=compute,utility"));
}

// CUDA_VERSION, NVIDIA_REQUIRE_CUDA and NVIDIA_DISABLE_REQUIRE against the shipped libcudart.
void CudaEnvRules(const EnvLookup& env, const CapabilitySnapshot& snap, std::vector<Finding>* out) {
  auto cuda_version = env("CUDA_VERSION");
  auto require = env("NVIDIA_REQUIRE_CUDA");
  std::string runtime_version;
  if (auto it = snap.components.find("cuda-runtime"); it != snap.components.end()) {
    runtime_version = it->second.version;
  }
  if (require && !require->empty()) {
    auto req = RequiredCuda(*require);
    std::string against = cuda_version ? *cuda_version : runtime_version;
    if (req && !against.empty() && Parts(against) >= 2 && MajorMinor(*req) != MajorMinor(against)) {
      out->push_back(
          Make("image.gpu.require-cuda", Severity::kError, "", -1, 0,
               fmt::format("NVIDIA_REQUIRE_CUDA requires cuda>={} but the image's CUDA is {} ({}); "
                           "the toolkit's driver check then admits or refuses the wrong hosts",
                           *req, against, cuda_version ? "CUDA_VERSION" : "libcudart"),
               fmt::format("set NVIDIA_REQUIRE_CUDA=cuda>={}", MajorMinor(against))));
    }
  } else if (snap.gpu_image && cuda_version) {
    out->push_back(
        Make("image.gpu.require-cuda", Severity::kWarning, "", -1, 0,
             fmt::format("CUDA_VERSION={} but NVIDIA_REQUIRE_CUDA is unset: a host "
                         "driver too old for this CUDA is not refused at start",
                         *cuda_version),
             fmt::format("set NVIDIA_REQUIRE_CUDA=cuda>={}", MajorMinor(*cuda_version))));
  }
  if (cuda_version && !runtime_version.empty() && Parts(runtime_version) >= 2 &&
      MajorMinor(*cuda_version) != MajorMinor(runtime_version)) {
    const auto& c = snap.components.at("cuda-runtime");
    out->push_back(Make("image.gpu.cuda-version", Severity::kError, c.path, c.layer, 0,
                        fmt::format("CUDA_VERSION={} but the image ships libcudart {}",
                                    *cuda_version, runtime_version),
                        "make CUDA_VERSION describe the CUDA runtime actually installed"));
  }
  if (auto d = env("NVIDIA_DISABLE_REQUIRE"); d && Truthy(*d)) {
    out->push_back(Make("image.gpu.disable-require", Severity::kError, "", -1, 0,
                        fmt::format("NVIDIA_DISABLE_REQUIRE={} disables the toolkit's driver "
                                    "compatibility check: containers start on drivers too old "
                                    "for their CUDA and fail later (error 35)",
                                    *d),
                        "remove NVIDIA_DISABLE_REQUIRE"));
  }
}

// The shipped CUDA/cuBLAS/cuDNN/TensorRT/ORT libraries against the matrix pins.
void MatrixPinRules(const CapabilitySnapshot& snap, const policy::Matrix& matrix,
                    std::vector<Finding>* out) {
  struct Pin {
    const char* component;
    const char* field;
    const std::optional<policy::VersionSpec>* spec;
  };
  const Pin pins[] = {{"cuda-runtime", "cuda.runtime", &matrix.cuda.runtime},
                      {"cublas", "cuda.cublas", &matrix.cuda.cublas},
                      {"cudnn", "cudnn", &matrix.cudnn},
                      {"tensorrt", "tensorrt", &matrix.tensorrt},
                      {"onnxruntime", "onnxruntime.version", &matrix.onnxruntime.version}};
  for (const auto& pin : pins) {
    if (!pin.spec->has_value()) continue;
    const policy::VersionSpec& spec = **pin.spec;
    auto it = snap.components.find(pin.component);
    if (it == snap.components.end() || it->second.version.empty()) {
      out->push_back(Make("image.matrix", Severity::kError, "", -1, 0,
                          fmt::format("matrix {} pins {} '{}' but the image ships no versioned "
                                      "{} library",
                                      matrix.source, pin.field, spec.text(), pin.component),
                          "install the pinned library in the runtime stage"));
      continue;
    }
    const Component& c = it->second;
    bool ok = spec.Matches(c.version);
    if (!ok && Parts(c.version) == 1) {
      // Only the soname major is known (libcudnn.so.9): consistent if the spec's major agrees.
      auto maj = spec.SingleMajor();
      ok = maj && std::to_string(*maj) == c.version;
    }
    if (ok) continue;
    out->push_back(Make(
        "image.matrix", Severity::kError, c.path, c.layer, c.bytes,
        fmt::format("{} {} in the image does not satisfy matrix {} {} '{}'", pin.component,
                    c.version, matrix.source, pin.field, spec.text()),
        fmt::format("install {} matching '{}' or update the matrix", pin.component, spec.text())));
  }
  if (matrix.onnxruntime.provider_cuda_major && snap.components.count("ort-provider-cuda") &&
      snap.components.count("cuda-runtime")) {
    const auto& rt = snap.components.at("cuda-runtime");
    auto v = policy::Version::Parse(rt.version);
    if (v && v->major() != *matrix.onnxruntime.provider_cuda_major) {
      out->push_back(Make("image.matrix", Severity::kError, rt.path, rt.layer, 0,
                          fmt::format("CUDA runtime major {} differs from the matrix's "
                                      "onnxruntime.provider_cuda_major {}",
                                      v->major(), *matrix.onnxruntime.provider_cuda_major),
                          "use the ONNX Runtime GPU build made for this CUDA major"));
    }
  }
}

}  // namespace

std::vector<Finding> RunGpuRules(const Image& image, const FileSystem& fs,
                                 const CapabilitySnapshot& snap, const policy::Matrix* matrix) {
  std::vector<Finding> out;
  DriverLibRule(fs, &out);
  EnvLookup env = [&](const char* k) -> std::optional<std::string> {
    auto it = image.env.find(k);
    if (it == image.env.end()) return std::nullopt;
    return it->second;
  };
  if (snap.gpu_image) ToolkitEnvRules(env, matrix, &out);
  CudaEnvRules(env, snap, &out);
  if (matrix != nullptr) MatrixPinRules(snap, *matrix, &out);
  return out;
}

}  // namespace tg::audit
