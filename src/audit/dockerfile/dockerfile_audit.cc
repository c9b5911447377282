// Dockerfile hygiene rules. RUN commands are read as shell words (not executed) and split into
// simple commands so "apt-get install ... && rm -rf /var/lib/apt/lists/*" is recognised as one
// layer that creates and removes its cache. Only stages that ship (the final stage and the stages
// it is FROM) are held to the runtime rules: build stages may carry whatever they need.
#include "audit/dockerfile/dockerfile_audit.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "audit/dockerfile/dockerfile_ignore.h"
#include "audit/dockerfile/dockerfile_rules.h"
#include "common/file_util.h"
#include "common/strings.h"

namespace tg::audit {
namespace {

namespace fs = std::filesystem;
using common::Result;

using common::Lower;

bool IsEnvAssignment(std::string_view w) {
  std::size_t eq = w.find('=');
  if (eq == std::string_view::npos || eq == 0) return false;
  for (std::size_t i = 0; i < eq; ++i) {
    char c = w[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return !std::isdigit(static_cast<unsigned char>(w[0]));
}

using common::IsPinnedByDigest;

// What one RUN does to package caches and toolchains.
struct RunFacts {
  bool apt = false, apt_lists_removed = false;
  bool apk = false, apk_no_cache = false, apk_cache_removed = false;
  bool pip = false, pip_no_cache = true, pip_cache_removed = false;
  bool dnf = false, dnf_clean = false;
  bool conda = false, conda_clean = false;
  bool npm = false, npm_clean = false;
  bool yarn = false, yarn_clean = false;
  bool zypper = false, zypper_clean = false;
  bool pip_env_no_cache = false;            // `export PIP_NO_CACHE_DIR=...` earlier in the same RUN
  std::vector<std::string> build_packages;  // "apt-get install gcc"
  std::vector<std::string> build_commands;  // "make", "nvcc"
};

std::vector<std::string> NonFlagArgs(const std::vector<std::string>& w, std::size_t from,
                                     const std::set<std::string>& flags_with_value) {
  std::vector<std::string> out;
  for (std::size_t i = from; i < w.size(); ++i) {
    if (std::string_view(w[i]).starts_with("-")) {
      if (flags_with_value.count(w[i]) != 0) ++i;
      continue;
    }
    out.push_back(w[i]);
  }
  return out;
}

void AnalyzeCommand(std::vector<std::string> w, RunFacts* f, int depth);

void AnalyzeShell(std::string_view text, RunFacts* f, int depth) {
  std::vector<std::string> words = ShellWords(text);
  std::vector<std::string> cur;
  for (auto& word : words) {
    if (word == ";" || word == "&&" || word == "||" || word == "|" || word == "&") {
      AnalyzeCommand(std::move(cur), f, depth);
      cur.clear();
    } else {
      cur.push_back(std::move(word));
    }
  }
  AnalyzeCommand(std::move(cur), f, depth);
}

void NoteRemoved(const std::string& path, RunFacts* f) {
  std::string p = path;
  for (const char* home : {"~/", "$HOME/", "${HOME}/"}) {
    if (std::string_view(p).starts_with(home))
      p = "/root/" + p.substr(std::string_view(home).size());
  }
  if (std::string_view(p).starts_with("/var/lib/apt/lists")) f->apt_lists_removed = true;
  if (std::string_view(p).starts_with("/var/cache/apk")) f->apk_cache_removed = true;
  if (std::string_view(p).starts_with("/var/cache/yum") ||
      std::string_view(p).starts_with("/var/cache/dnf"))
    f->dnf_clean = true;
  if (p == "/root/.cache" || p == "/root/.cache/" || p == "/root/.cache/*" ||
      std::string_view(p).starts_with("/root/.cache/pip") ||
      std::string_view(p).starts_with("/tmp/pip")) {
    f->pip_cache_removed = true;
  }
  if (std::string_view(p).starts_with("/root/.npm")) f->npm_clean = true;
  if (std::string_view(p).starts_with("/var/cache/zypp")) f->zypper_clean = true;
  if (std::string_view(p).starts_with("/opt/conda/pkgs")) f->conda_clean = true;
}

// Drops environment assignments and wrappers in front of the program; false when none is left.
bool StripWrappers(std::vector<std::string>* w) {
  std::size_t s = 0;
  while (s < w->size()) {
    const std::string& x = (*w)[s];
    if (IsEnvAssignment(x) || x == "sudo" || x == "env" || x == "exec" || x == "time" ||
        x == "nice" || x == "command") {
      ++s;
      continue;
    }
    break;
  }
  if (s >= w->size()) return false;
  w->erase(w->begin(), w->begin() + static_cast<std::ptrdiff_t>(s));
  return true;
}

bool HasFlag(const std::vector<std::string>& w, std::string_view flag) {
  return std::find(w.begin() + 1, w.end(), flag) != w.end();
}

void NoteBuildPackages(const std::vector<std::string>& pkgs, std::string_view tool, RunFacts* f) {
  for (const auto& p : pkgs) {
    if (IsBuildToolPackage(p)) f->build_packages.push_back(fmt::format("{} {}", tool, p));
  }
}

void AnalyzeApt(const std::vector<std::string>& w, RunFacts* f) {
  std::vector<std::string> rest = NonFlagArgs(w, 1, {"-o", "-t", "--target-release"});
  if (rest.empty()) return;
  const std::string& sub = rest[0];
  if (sub == "update" || sub == "install" || sub == "upgrade" || sub == "dist-upgrade" ||
      sub == "full-upgrade" || sub == "build-dep") {
    f->apt = true;
    f->apt_lists_removed = false;  // a clean before the install does not remove its lists
  }
  if (sub == "install" || sub == "build-dep") {
    if (sub == "build-dep") f->build_packages.push_back("apt-get build-dep");
    NoteBuildPackages({rest.begin() + 1, rest.end()}, "apt-get install", f);
  }
}

void AnalyzeApk(const std::vector<std::string>& w, RunFacts* f) {
  std::vector<std::string> rest = NonFlagArgs(w, 1, {"--virtual", "-t", "--repository", "-X"});
  if (rest.empty()) return;
  if (rest[0] == "add" || rest[0] == "update" || rest[0] == "upgrade") {
    f->apk = true;
    if (HasFlag(w, "--no-cache")) f->apk_no_cache = true;
  }
  if (rest[0] == "add") NoteBuildPackages({rest.begin() + 1, rest.end()}, "apk add", f);
  if (rest[0] == "cache" && rest.size() > 1 && rest[1] == "clean") f->apk_cache_removed = true;
}

void AnalyzeDnf(const std::vector<std::string>& w, const std::string& prog, RunFacts* f) {
  std::vector<std::string> rest = NonFlagArgs(w, 1, {"--setopt", "--enablerepo"});
  if (rest.empty()) return;
  if (rest[0] == "install" || rest[0] == "groupinstall" || rest[0] == "update" ||
      rest[0] == "upgrade") {
    f->dnf = true;
    f->dnf_clean = false;  // hadolint DL3032: the clean must come after the install
    if (rest[0] == "groupinstall") f->build_packages.push_back(prog + " groupinstall");
    NoteBuildPackages({rest.begin() + 1, rest.end()}, prog + " install", f);
  }
  if (rest[0] == "clean" && rest.size() > 1 && rest[1] == "all") f->dnf_clean = true;
}

// pip, pip3, pip3.11 (not pipx or pipenv, which manage their own caches).
bool IsPipName(std::string_view p) {
  if (!p.starts_with("pip")) return false;
  return std::all_of(p.begin() + 3, p.end(), [](char c) { return std::isdigit(c) || c == '.'; });
}

bool IsPipCommand(const std::vector<std::string>& w, const std::string& prog) {
  return IsPipName(prog) || (std::string_view(prog).starts_with("python") && w.size() > 2 &&
                             w[1] == "-m" && IsPipName(w[2]));
}

void AnalyzePip(const std::vector<std::string>& w, const std::string& prog, RunFacts* f) {
  std::size_t first = IsPipName(prog) ? 1 : 3;
  std::vector<std::string> rest = NonFlagArgs(
      w, first,
      {"-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-f",
       "--find-links", "-e", "--editable", "-t", "--target", "--prefix", "--root"});
  if (!rest.empty() && rest[0] == "install") {
    f->pip = true;
    if (!HasFlag(w, "--no-cache-dir") && !f->pip_env_no_cache) f->pip_no_cache = false;
    NoteBuildPackages({rest.begin() + 1, rest.end()}, "pip install", f);
  }
  if (!rest.empty() && rest[0] == "cache" && rest.size() > 1 &&
      (rest[1] == "purge" || rest[1] == "remove")) {
    f->pip_cache_removed = true;
  }
}

void AnalyzeConda(const std::vector<std::string>& w, const std::string& prog, RunFacts* f) {
  std::vector<std::string> rest = NonFlagArgs(w, 1, {"-n", "--name", "-p", "--prefix", "-c"});
  if (!rest.empty() && (rest[0] == "install" || rest[0] == "create" || rest[0] == "update")) {
    f->conda = true;
    NoteBuildPackages({rest.begin() + 1, rest.end()}, prog + " install", f);
  }
  if (!rest.empty() && rest[0] == "clean") f->conda_clean = true;
}

void AnalyzeNpm(const std::vector<std::string>& w, const std::string& prog, RunFacts* f) {
  std::vector<std::string> rest = NonFlagArgs(w, 1, {});
  // hadolint DL3060 is yarn's: `yarn install` without a later `yarn cache clean`; npm's cache is
  // the same problem without a hadolint id. A clean counts only after the install.
  if (prog == "yarn") {
    if (rest.empty() || rest[0] == "install" || rest[0] == "add") {
      f->yarn = true;
      f->yarn_clean = false;
    }
    if (rest.size() > 1 && rest[0] == "cache" && rest[1] == "clean") f->yarn_clean = true;
    return;
  }
  if (!rest.empty() && (rest[0] == "install" || rest[0] == "ci" || rest[0] == "i")) {
    f->npm = true;
    f->npm_clean = false;
  }
  if (rest.size() > 1 && rest[0] == "cache" && rest[1] == "clean") f->npm_clean = true;
}

// pip reads PIP_NO_CACHE_DIR as a boolean: 0/false/no/off leave the cache on (hadolint agrees).
bool PipCacheOff(std::string_view v) {
  std::string l = Lower(v);
  return !l.empty() && l != "0" && l != "false" && l != "no" && l != "off";
}

void AnalyzeCommand(std::vector<std::string> w, RunFacts* f, int depth) {
  // PIP_NO_CACHE_DIR set for this command (`PIP_NO_CACHE_DIR=1 pip ...`) or exported before it.
  bool saved_pip_env = f->pip_env_no_cache;
  for (const auto& word : w) {
    if (!IsEnvAssignment(word)) break;
    if (word.starts_with("PIP_NO_CACHE_DIR=") && PipCacheOff(word.substr(17))) {
      f->pip_env_no_cache = true;
    }
  }
  if (!w.empty() && w[0] == "export") {
    for (const auto& word : w) {
      if (word.starts_with("PIP_NO_CACHE_DIR=") && PipCacheOff(word.substr(17))) {
        saved_pip_env = true;
      }
    }
  }
  struct Restore {
    RunFacts* f;
    bool v;
    ~Restore() { f->pip_env_no_cache = v; }
  } restore{f, saved_pip_env};
  if (!StripWrappers(&w)) return;
  std::string prog(common::Basename(w[0]));

  if ((prog == "sh" || prog == "bash" || prog == "dash") && depth < 3) {
    for (std::size_t i = 1; i + 1 < w.size(); ++i) {
      if (w[i] == "-c" ||
          (std::string_view(w[i]).starts_with("-") && w[i].find('c') != std::string::npos)) {
        AnalyzeShell(w[i + 1], f, depth + 1);
        return;
      }
    }
    return;
  }
  if (prog == "apt-get" || prog == "apt" || prog == "aptitude") {
    AnalyzeApt(w, f);
  } else if (prog == "apk") {
    AnalyzeApk(w, f);
  } else if (prog == "yum" || prog == "dnf" || prog == "microdnf" || prog == "tdnf") {
    AnalyzeDnf(w, prog, f);
  } else if (IsPipCommand(w, prog)) {
    AnalyzePip(w, prog, f);
  } else if (prog == "conda" || prog == "mamba" || prog == "micromamba") {
    AnalyzeConda(w, prog, f);
  } else if (prog == "zypper") {
    std::vector<std::string> rest = NonFlagArgs(w, 1, {"-r", "--repo", "-t", "--type"});
    if (!rest.empty() && (rest[0] == "install" || rest[0] == "in")) {
      f->zypper = true;
      f->zypper_clean = false;
      NoteBuildPackages({rest.begin() + 1, rest.end()}, "zypper install", f);
    }
    if (!rest.empty() && (rest[0] == "clean" || rest[0] == "cc")) f->zypper_clean = true;
  } else if (prog == "npm" || prog == "yarn") {
    AnalyzeNpm(w, prog, f);
  } else if (prog == "rm") {
    for (const auto& p : NonFlagArgs(w, 1, {})) NoteRemoved(p, f);
  } else {
    static const std::set<std::string> kBuildPrograms = {
        "gcc",  "g++",   "cc",    "c++",   "clang", "clang++", "nvcc",
        "make", "cmake", "ninja", "meson", "cargo", "ld",      "gfortran"};
    if (kBuildPrograms.count(prog) != 0) f->build_commands.push_back(prog);
  }
}

// The text a RUN executes: shell form plus heredoc bodies, or the `sh -c` script of the JSON form.
std::string RunScript(const DockerfileInstruction& ins) {
  std::string script;
  if (ins.json_form) {
    for (const auto& a : ins.json_args) {
      // Quote each word so the splitter sees the exec-form words unchanged.
      script += "'";
      for (char c : a) {
        if (c == '\'') {
          script += "'\\''";
        } else {
          script.push_back(c);
        }
      }
      script += "' ";
    }
  } else {
    script = ins.args;
  }
  for (const auto& h : ins.heredocs) script += "\n" + h.body;
  return script;
}

struct CacheMounts {
  std::vector<std::string> targets;
  bool Covers(std::string_view path) const {
    for (const auto& t : targets) {
      std::string tt = t;
      while (tt.size() > 1 && tt.back() == '/') tt.pop_back();
      if (path == tt || std::string_view(path).starts_with(tt + "/")) return true;
    }
    return false;
  }
};

CacheMounts MountsOf(const DockerfileInstruction& ins) {
  CacheMounts m;
  for (const std::string& spec : ins.Flags("mount")) {
    std::map<std::string, std::string> kv;
    for (const std::string& part : common::Split(spec, ',', common::SplitMode::kKeepEmpty)) {
      std::size_t eq = part.find('=');
      kv[Lower(part.substr(0, eq))] = eq == std::string::npos ? "" : part.substr(eq + 1);
    }
    if (kv["type"] != "cache" && kv["type"] != "tmpfs") continue;
    for (const char* key : {"target", "dst", "destination"}) {
      if (!kv[key].empty()) m.targets.push_back(kv[key]);
    }
  }
  return m;
}

// ENV instructions: `ENV K=V K2=V2` or the legacy `ENV K V`.
void ApplyEnv(const DockerfileInstruction& ins, std::map<std::string, std::string>* env) {
  std::vector<std::string> w = ShellWords(ins.args);
  if (w.empty()) return;
  if (w[0].find('=') == std::string::npos) {
    std::string value;
    for (std::size_t i = 1; i < w.size(); ++i) value += (i > 1 ? " " : "") + w[i];
    (*env)[w[0]] = value;
    return;
  }
  for (const auto& kv : w) {
    std::size_t eq = kv.find('=');
    if (eq != std::string::npos) (*env)[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
}

bool IsToolchainPath(std::string_view src) {
  static const std::regex kToolchain(
      R"(^/*((usr/(local/)?)?s?bin/(gcc|g\+\+|cc|c\+\+|clang|clang\+\+|nvcc|cmake|make|ninja|ld|as|gfortran)(-[0-9.]+)?)$)"
      R"(|^/*usr/(local/)?include(/.*)?$)"
      R"(|^/*usr/lib/gcc(/.*)?$)"
      R"(|^/*usr/local/cuda(-[0-9.]+)?/?$)"
      R"(|(^|/)bin/nvcc$)"
      R"(|^/*usr/local/cuda(-[0-9.]+)?/(bin|include|nvvm)(/.*)?$)"
      R"(|^/+\.?$)");
  if (src.size() > 1024) return false;  // not a toolchain path; keeps the regex bounded
  return std::regex_search(std::string(src), kToolchain);
}

bool IsDevelImage(std::string_view image) {
  std::string ref = Lower(image);
  std::size_t at = ref.find('@');
  if (at != std::string::npos) ref = ref.substr(0, at);
  std::string tag;
  std::size_t slash = ref.rfind('/');
  std::size_t colon = ref.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    tag = ref.substr(colon + 1);
    ref = ref.substr(0, colon);
  }
  std::string name(common::Basename(ref));
  static const std::set<std::string> kDevNames = {"gcc", "golang", "rust",  "buildpack-deps",
                                                  "sdk", "maven",  "gradle"};
  return tag.find("devel") != std::string::npos || name.find("devel") != std::string::npos ||
         kDevNames.count(name) != 0 || std::string_view(tag).starts_with("sdk") ||
         tag.find("-sdk") != std::string::npos;
}

struct Probe {
  const char* category;
  std::vector<const char*> paths;
  const char* fix;
};

const std::vector<Probe>& IgnoreProbes() {
  static const std::vector<Probe> k = {
      {"version control", {".git/HEAD", ".git/objects/pack/pack-0.pack"}, "add '.git'"},
      {"notebooks",
       {"analysis.ipynb", "notebooks/analysis.ipynb",
        "notebooks/.ipynb_checkpoints/analysis-checkpoint.ipynb"},
       "add '**/*.ipynb' and '**/.ipynb_checkpoints'"},
      {"caches",
       {"pkg/__pycache__/mod.cpython-311.pyc", ".cache/huggingface/hub/blob"},
       "add '**/__pycache__' and '.cache'"},
      {"model weights",
       {"model.onnx", "models/unet/model.onnx", "models/unet/model.onnx_data",
        "models/sd-v1-5.safetensors", "models/sd-v1-5.ckpt", "models/pytorch_model.bin",
        "models/model.pt", "models/model.pth"},
       "add '**/*.onnx', '**/*.onnx_data', '**/*.safetensors', '**/*.ckpt', '**/*.bin', "
       "'**/*.pt' and '**/*.pth'"},
  };
  return k;
}

}  // namespace

bool IsBuildToolPackage(std::string_view package) {
  std::string p = Lower(package);
  // Strip version pins and qualifiers: apt "gcc=4:12", "gcc:amd64"; pip "cmake>=3.25", "x[extra]".
  std::size_t cut = p.find_first_of("=:<>![~@ ");
  if (cut != std::string::npos) p = p.substr(0, cut);
  if (p.empty()) return false;
  static const std::set<std::string> kExact = {
      "build-essential", "gcc",          "g++",          "cpp",
      "clang",           "llvm",         "make",         "cmake",
      "ninja-build",     "ninja",        "meson",        "autoconf",
      "automake",        "libtool",      "pkg-config",   "pkgconf",
      "bison",           "flex",         "gfortran",     "musl-dev",
      "alpine-sdk",      "build-base",   "cuda-toolkit", "nvidia-cuda-toolkit",
      "cuda-nvcc",       "scikit-build", "cython",       "gcc-c++",
      "kernel-headers"};
  if (kExact.count(p) != 0) return true;
  for (const char* prefix :
       {"gcc-", "g++-", "clang-", "llvm-", "cuda-nvcc-", "cuda-toolkit-", "cuda-compiler-",
        "cuda-libraries-dev", "cuda-command-line-tools", "devtoolset-", "linux-headers"}) {
    if (std::string_view(p).starts_with(prefix)) return true;
  }
  return std::string_view(p).ends_with("-dev") || std::string_view(p).ends_with("-devel") ||
         p.find("-dev-cuda") != std::string::npos;
}

namespace {

using common::Status;

Status RuleMultiStage(const DockerfileRuleContext& c) {
  if (c.df.stages.size() != 1) return Status::Ok();
  const DockerfileStage& st = c.df.stages.back();
  for (const auto& ins : st.instructions) {
    if (ins.keyword != "RUN") continue;
    c.Add("dockerfile.multi-stage", st.line,
          fmt::format("single-stage build that RUNs commands (line {}): whatever the build "
                      "installs or leaves behind ships in the runtime image",
                      ins.line),
          "build in a first stage ('FROM ... AS build') and start the runtime stage FROM a slim "
          "base (or scratch), copying only the artifacts with COPY --from=build");
    break;
  }
  return Status::Ok();
}

// FROM and COPY --from=<image>.
Status RuleBaseDigest(const DockerfileRuleContext& c) {
  for (const auto& st : c.df.stages) {
    if (st.parent_stage >= 0) continue;
    if (!st.unresolved_args.empty()) {
      c.Add("dockerfile.base-digest", st.line,
            fmt::format("FROM {}: build argument(s) {} have no default, so the base image cannot "
                        "be verified (it is whatever the builder passes)",
                        st.base_raw, fmt::join(st.unresolved_args, ", ")),
            "give the ARG a default pinned by digest, e.g. ARG BASE=name:tag@sha256:<digest>");
      continue;
    }
    if (Lower(st.base) == "scratch" || IsPinnedByDigest(st.base)) continue;
    c.Add("dockerfile.base-digest", st.line,
          fmt::format("base image '{}' of {} is not pinned by digest: the tag can move and the "
                      "build is not reproducible",
                      st.base, c.StageLabel(st)),
          fmt::format("pin it: FROM {}@sha256:<digest> (find the digest with `skopeo inspect`)",
                      st.base));
  }
  for (const auto& st : c.df.stages) {
    for (const auto& ins : st.instructions) {
      if (ins.keyword != "COPY" && ins.keyword != "ADD") continue;
      std::optional<std::string> from = ins.Flag("from");
      if (!from || from->empty()) continue;
      std::vector<std::string> unresolved;
      std::string ref = ExpandDockerVariables(*from, {}, &unresolved);
      if (c.df.StageIndex(*from) >= 0 && c.df.StageIndex(*from) < st.index) continue;
      if (Lower(ref) == "scratch" || IsPinnedByDigest(ref)) continue;
      c.Add("dockerfile.base-digest", ins.line,
            fmt::format("{} --from={} copies from an image that is not pinned by digest (and is "
                        "not an earlier stage)",
                        ins.keyword, *from),
            fmt::format("pin it: --from={}@sha256:<digest>, or name an earlier stage", *from));
    }
  }
  return Status::Ok();
}

Status RuleDevelBase(const DockerfileRuleContext& c) {
  const DockerfileStage& root = *c.RuntimeBaseFirst().front();
  if (root.parent_stage >= 0 || !IsDevelImage(root.base)) return Status::Ok();
  c.Add("dockerfile.runtime-devel-base", root.line,
        fmt::format("the runtime image starts from '{}', a development image (compilers, "
                    "headers and static libraries ship with it)",
                    root.base),
        "start the runtime stage from a runtime/base variant (e.g. the CUDA '-runtime-' "
        "image) or from scratch, and build in an earlier stage");
  return Status::Ok();
}

void CheckCopiedToolchain(const DockerfileRuleContext& c, const DockerfileStage& st,
                          const DockerfileInstruction& ins) {
  std::optional<std::string> from = ins.Flag("from");
  if (!from) return;
  std::vector<std::string> srcs = ins.json_form ? ins.json_args : ShellWords(ins.args);
  if (!srcs.empty()) srcs.pop_back();  // the destination
  for (const auto& src : srcs) {
    if (!IsToolchainPath(src)) continue;
    c.Add("dockerfile.runtime-build-tools", ins.line,
          fmt::format("{} --from={} {} copies a toolchain (compiler, headers or a whole "
                      "build filesystem) into the runtime {}",
                      ins.keyword, *from, src, c.StageLabel(st)),
          "copy only the built artifacts and the shared libraries they load (ldd), not "
          "toolchain directories");
  }
}

void CheckRunCaches(const DockerfileRuleContext& c, const DockerfileStage& st,
                    const DockerfileInstruction& ins, const RunFacts& f,
                    std::map<std::string, std::string>& env) {
  CacheMounts mounts = MountsOf(ins);
  auto cache = [&](std::string what, std::string fix) {
    c.Add("dockerfile.package-cache", ins.line,
          fmt::format("{} in the runtime {} leaves its cache in the layer", what, c.StageLabel(st)),
          std::move(fix));
  };
  // As hadolint: a cache (or tmpfs) mount of the lists themselves, or of both apt folders; one
  // of /var/lib/apt alone leaves the downloaded packages (/var/cache/apt) in the layer once
  // docker-clean is off.
  auto mounted = [&](std::string_view dir) {
    for (std::string t : mounts.targets) {
      while (t.size() > 1 && t.back() == '/') t.pop_back();
      if (t == dir || std::string_view(t).starts_with(std::string(dir) + "/")) return true;
    }
    return false;
  };
  const bool apt_mounted =
      mounted("/var/lib/apt/lists") || (mounted("/var/lib/apt") && mounted("/var/cache/apt"));
  if (f.apt && !f.apt_lists_removed && !apt_mounted) {
    cache("[DL3009] apt-get update/install without 'rm -rf /var/lib/apt/lists/*' in the same RUN",
          "end the same RUN with '&& rm -rf /var/lib/apt/lists/*' (a later RUN cannot "
          "shrink the earlier layer)");
  }
  if (f.apk && !f.apk_no_cache && !f.apk_cache_removed && !mounts.Covers("/var/cache/apk")) {
    cache("[DL3019] apk add without --no-cache", "use 'apk add --no-cache ...'");
  }
  bool pip_off = PipCacheOff(env["PIP_NO_CACHE_DIR"]);
  if (f.pip && !f.pip_no_cache && !f.pip_cache_removed && !pip_off &&
      !mounts.Covers("/root/.cache/pip")) {
    cache("[DL3042] pip install without --no-cache-dir",
          "use 'pip install --no-cache-dir ...' (or ENV PIP_NO_CACHE_DIR=1, or a "
          "--mount=type=cache,target=/root/.cache/pip)");
  }
  if (f.dnf && !f.dnf_clean && !mounts.Covers("/var/cache/dnf") &&
      !mounts.Covers("/var/cache/yum")) {
    cache("[DL3032] yum/dnf install without 'clean all' in the same RUN",
          "end the same RUN with '&& dnf clean all' (or yum) and rm -rf /var/cache/dnf");
  }
  if (f.zypper && !f.zypper_clean && !mounts.Covers("/var/cache/zypp")) {
    cache("[DL3036] zypper install without a later 'zypper clean' in the same RUN",
          "end the same RUN with '&& zypper clean -a'");
  }
  if (f.conda && !f.conda_clean) {
    cache("conda install without 'conda clean' in the same RUN",
          "end the same RUN with '&& conda clean -afy'");
  }
  if (f.npm && !f.npm_clean && !mounts.Covers("/root/.npm")) {
    cache("npm install/ci without a later 'npm cache clean' in the same RUN (no hadolint id)",
          "end the same RUN with '&& npm cache clean --force'");
  }
  if (f.yarn && !f.yarn_clean && !mounts.Covers("/usr/local/share/.cache/yarn") &&
      !mounts.Covers("/root/.cache/yarn")) {
    cache("[DL3060] yarn install without a later 'yarn cache clean' in the same RUN",
          "end the same RUN with '&& yarn cache clean'");
  }
}

// Runtime rules walk the chain base-first so ENV set in a parent stage applies to children.
Status RuleRuntimeRuns(const DockerfileRuleContext& c) {
  std::map<std::string, std::string> env;
  for (const DockerfileStage* st : c.RuntimeBaseFirst()) {
    for (const auto& ins : st->instructions) {
      if (ins.keyword == "ENV") ApplyEnv(ins, &env);
      if (ins.keyword == "COPY" || ins.keyword == "ADD") CheckCopiedToolchain(c, *st, ins);
      if (ins.keyword != "RUN") continue;
      RunFacts f;
      AnalyzeShell(RunScript(ins), &f, 0);
      for (const auto& p : f.build_packages) {
        c.Add("dockerfile.runtime-build-tools", ins.line,
              fmt::format("'{}' installs a build tool or development package in the runtime {}", p,
                          c.StageLabel(*st)),
              "install build dependencies in a build stage and COPY --from=build only the "
              "results");
      }
      for (const auto& cmd : f.build_commands) {
        c.Add("dockerfile.runtime-build-tools", ins.line,
              fmt::format("RUN invokes '{}' in the runtime {}: the toolchain must be present "
                          "there",
                          cmd, c.StageLabel(*st)),
              "move the build into a build stage");
      }
      CheckRunCaches(c, *st, ins, f, env);
    }
  }
  return Status::Ok();
}

void CheckIgnoreCoverage(const DockerfileRuleContext& c, const DockerIgnore& ignore) {
  for (const Probe& probe : IgnoreProbes()) {
    std::vector<std::string> leaked;
    bool top_level_excluded = false;
    for (const char* p : probe.paths) {
      if (!ignore.Excludes(p)) {
        leaked.emplace_back(p);
      } else if (std::string_view(p).find('/') == std::string_view::npos) {
        top_level_excluded = true;
      }
    }
    if (leaked.empty()) continue;
    Finding f;
    f.rule = "dockerfile.dockerignore-coverage";
    f.path = c.report->dockerignore;
    f.message =
        fmt::format("{} would be sent in the build context: {} not excluded ({})", probe.category,
                    leaked.size() == 1 ? "is" : "are", fmt::join(leaked, ", "));
    if (top_level_excluded) {
      f.message += "; note that a pattern like '*.ext' matches only at the top of the context";
    }
    f.fix = probe.fix;
    c.report->findings.push_back(std::move(f));
  }
}

// .dockerignore presence and coverage.
Status RuleDockerignore(const DockerfileRuleContext& c) {
  fs::path dockerfile(c.file);
  fs::path context =
      c.options.context_dir.empty() ? dockerfile.parent_path() : fs::path(c.options.context_dir);
  if (context.empty()) context = ".";
  std::vector<fs::path> candidates = {fs::path(dockerfile.string() + ".dockerignore"),
                                      context / ".dockerignore"};
  std::error_code ec;
  for (const auto& cand : candidates) {
    if (fs::is_regular_file(cand, ec)) {
      c.report->dockerignore = cand.string();
      break;
    }
  }
  if (c.report->dockerignore.empty()) {
    Finding f;
    f.rule = "dockerfile.dockerignore";
    f.path = context.string();
    f.message = fmt::format(
        "no .dockerignore in the build context '{}' (nor {}): the whole directory, .git and "
        "any model weights included, is sent to the builder and can be COPY'd into the image",
        context.string(), candidates[0].string());
    f.fix =
        "add a .dockerignore that excludes .git, notebooks, caches and model weights "
        "(an allowlist starting with '*' is strictest)";
    c.report->findings.push_back(std::move(f));
    return Status::Ok();
  }
  TG_ASSIGN_OR_RETURN(std::string text,
                      common::ReadFileLimited(c.report->dockerignore, common::kMaxConfigBytes));
  CheckIgnoreCoverage(c, DockerIgnore::Parse(text));
  return Status::Ok();
}

}  // namespace

const std::vector<DockerfileRule>& DockerfileRuleTable() {
  static const std::vector<DockerfileRule> k = {
      {"dockerfile.multi-stage", "", RuleMultiStage},
      {"dockerfile.base-digest", "", RuleBaseDigest},
      {"dockerfile.base-tag", "DL3006/DL3007", RuleBaseTag},
      {"dockerfile.runtime-devel-base", "", RuleDevelBase},
      {"dockerfile.runtime-build-tools", "", RuleRuntimeRuns},  // also package-cache
      {"dockerfile.user-root", "DL3002", RuleUserRoot},
      {"dockerfile.add-url", "", RuleAddUrl},
      {"dockerfile.pipe-to-shell", "", RulePipeToShell},
      {"dockerfile.sudo", "DL3004", RuleSudo},
      {"dockerfile.maintainer", "DL4000", RuleMaintainer},
      {"dockerfile.expose-range", "DL3011", RuleExposeRange},
      {"dockerfile.secret-env", "", RuleSecretEnv},
      {"dockerfile.cuda-stubs", "", RuleCudaStubs},
      {"dockerfile.cuda-compat", "", RuleCudaCompat},
      {"dockerfile.password-literal", "", RulePasswordLiteral},
      {"dockerfile.apt-recommends", "DL3015", RuleAptRecommends},
      {"dockerfile.cd", "DL3003", RuleCdWorkdir},
      {"dockerfile.dockerignore", "", RuleDockerignore},  // also dockerignore-coverage
  };
  return k;
}

namespace {

// `ONBUILD RUN x` runs x in every image built FROM this one: the RUN rules judge it as a RUN of
// this stage (hadolint checks ONBUILD instructions with the rules of the wrapped instruction).
Dockerfile WithOnbuildRuns(const Dockerfile& df) {
  Dockerfile out = df;
  for (auto& st : out.stages) {
    for (auto& ins : st.instructions) {
      if (ins.keyword != "ONBUILD") continue;
      std::string_view a = common::Trim(ins.args);
      if (a.size() < 4 || Lower(a.substr(0, 4)) != "run ") continue;
      std::string rest(common::Trim(a.substr(4)));
      // Leading flags (--mount=..., --network=...) are the RUN's flags, as in a plain RUN.
      ins.flags.clear();
      while (rest.starts_with("--")) {
        std::size_t sp = rest.find_first_of(" \t");
        ins.flags.push_back(rest.substr(0, sp));
        rest = sp == std::string::npos ? "" : std::string(common::Trim(rest.substr(sp)));
      }
      ins.keyword = "RUN";
      ins.json_form = false;
      ins.json_args.clear();
      if (!rest.empty() && rest[0] == '[') {
        auto j = nlohmann::json::parse(rest, nullptr, false);
        if (j.is_array() &&
            std::all_of(j.begin(), j.end(), [](auto& e) { return e.is_string(); })) {
          ins.json_form = true;
          for (const auto& e : j) ins.json_args.push_back(e.template get<std::string>());
        }
      }
      ins.args = rest;
    }
  }
  return out;
}

}  // namespace

Result<DockerfileAuditReport> AuditDockerfile(const Dockerfile& input,
                                              const DockerfileAuditOptions& options) {
  const Dockerfile df = WithOnbuildRuns(input);
  DockerfileAuditReport rep;
  rep.stages = static_cast<int>(df.stages.size());
  rep.runtime_chain = df.RuntimeChain();
  DockerfileRuleContext ctx{df,
                            options,
                            options.dockerfile_path.empty() ? df.source : options.dockerfile_path,
                            {rep.runtime_chain.begin(), rep.runtime_chain.end()},
                            &rep};
  for (const DockerfileRule& rule : DockerfileRuleTable()) TG_RETURN_IF_ERROR(rule.run(ctx));
  return rep;
}

}  // namespace tg::audit
