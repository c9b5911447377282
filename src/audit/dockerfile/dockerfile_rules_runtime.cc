// Rules about what the runtime image does to the GPU stack, and credentials baked into layers.
// None has a hadolint equivalent. They read the runtime chain only (base first), because the
// loader path and the packages of build stages never ship.
#include <fmt/format.h>

#include <algorithm>

#include "audit/dockerfile/dockerfile_rules.h"
#include "audit/report/secret_shape.h"
#include "common/strings.h"

namespace tg::audit {
namespace {

using common::Status;

bool Has(std::string_view s, std::string_view needle) {
  return s.find(needle) != std::string_view::npos;
}

bool RefersTo(std::string_view value, std::string_view var) {
  return Has(value, fmt::format("${}", var)) || Has(value, fmt::format("${{{}}}", var)) ||
         Has(value, fmt::format("${{{}:", var));
}

// A loader-path entry that is CUDA's stub folder: ".../stubs" (lib64/stubs, targets/*/lib/stubs).
bool StubsEntry(std::string_view e) {
  while (e.size() > 1 && e.back() == '/') e.remove_suffix(1);
  return e.ends_with("/stubs") && (Has(e, "cuda") || Has(e, "lib"));
}

// A loader-path entry that is CUDA's forward-compatibility folder (/usr/local/cuda*/compat).
bool CompatEntry(std::string_view e) {
  while (e.size() > 1 && e.back() == '/') e.remove_suffix(1);
  return e.ends_with("/compat") && Has(e, "cuda");
}

std::vector<std::string> PathEntries(std::string_view v) {
  return common::Split(v, ':', common::SplitMode::kKeepEmpty);
}

struct LoaderEntry {
  std::string path;
  int line = 0;
};

// The runtime image's effective LD_LIBRARY_PATH entries, each with the ENV line that added it.
std::vector<LoaderEntry> EffectiveLdLibraryPath(const DockerfileRuleContext& c) {
  std::vector<LoaderEntry> cur;
  for (const DockerfileStage* st : c.RuntimeBaseFirst()) {
    for (const auto& ins : st->instructions) {
      if (ins.keyword != "ENV") continue;
      for (const auto& [name, value] : InstructionAssignments(ins)) {
        if (name != "LD_LIBRARY_PATH") continue;
        std::vector<LoaderEntry> next;
        for (const std::string& e : PathEntries(value)) {
          if (RefersTo(e, "LD_LIBRARY_PATH")) {
            next.insert(next.end(), cur.begin(), cur.end());
          } else if (!e.empty()) {
            next.push_back({e, ins.line});
          }
        }
        cur = std::move(next);
      }
    }
  }
  return cur;
}

// Text a RUN executes, heredoc bodies included (for the ld.so.conf checks).
std::string RunText(const DockerfileInstruction& ins) {
  std::string t = ins.args;
  for (const auto& a : ins.json_args) t += " " + a;
  for (const auto& h : ins.heredocs) t += "\n" + h.body;
  return t;
}

// Package names of an install command of apt, dnf/yum/microdnf, zypper or apk.
std::vector<std::string> InstalledPackages(const SimpleCommand& cmd) {
  std::string prog = CommandProgram(cmd);
  static const std::set<std::string> kManagers = {"apt-get",  "apt",  "aptitude", "dnf", "yum",
                                                  "microdnf", "tdnf", "zypper",   "apk"};
  std::vector<std::string> out;
  if (kManagers.count(prog) == 0) return out;
  bool after_verb = false;
  bool seen_prog = false;
  for (const auto& w : cmd.words) {
    if (!seen_prog) {
      seen_prog = w.ends_with(prog);
      continue;
    }
    if (w.starts_with("-")) continue;
    if (!after_verb) {
      after_verb = w == "install" || w == "add" || w == "in";
      if (!after_verb) return out;
      continue;
    }
    out.push_back(w);
  }
  return out;
}

}  // namespace

Status RuleCudaStubs(const DockerfileRuleContext& c) {
  for (const LoaderEntry& e : EffectiveLdLibraryPath(c)) {
    if (!StubsEntry(e.path)) continue;
    c.Add("dockerfile.cuda-stubs", e.line,
          fmt::format("the runtime LD_LIBRARY_PATH holds CUDA's stub folder '{}': its libcuda.so "
                      "is a link-time stub that shadows the driver's, so CUDA reports "
                      "cudaErrorStubLibrary and ONNX Runtime falls back to the CPU",
                      e.path),
          "link against the stubs in the build stage only (-L.../stubs); never put them on the "
          "runtime loader path");
  }
  for (const DockerfileStage* st : c.RuntimeBaseFirst()) {
    for (const auto& ins : st->instructions) {
      if (ins.keyword != "RUN") continue;
      std::string t = RunText(ins);
      if (!Has(t, "/stubs")) continue;
      bool loader = Has(t, "ld.so.conf") || Has(t, "LD_LIBRARY_PATH=");
      bool link = Has(t, "stubs/libcuda.so") && Has(t, "ln ");
      if (!loader && !link) continue;
      c.Add("dockerfile.cuda-stubs", ins.line,
            loader ? "a runtime RUN puts CUDA's stub folder on the loader path (ld.so.conf or "
                     "LD_LIBRARY_PATH): the stub libcuda.so shadows the driver's"
                   : "a runtime RUN links the stub libcuda.so into place: it shadows the "
                     "driver's libcuda, which the container toolkit mounts at run time",
            "keep the stubs in the build stage; the NVIDIA container toolkit provides the real "
            "libcuda.so.1 at run time");
    }
  }
  return Status::Ok();
}

Status RuleCudaCompat(const DockerfileRuleContext& c) {
  for (const LoaderEntry& e : EffectiveLdLibraryPath(c)) {
    if (!CompatEntry(e.path)) continue;
    c.Add("dockerfile.cuda-compat", e.line,
          fmt::format("the runtime LD_LIBRARY_PATH holds CUDA's forward-compatibility folder "
                      "'{}': the image's libcuda then replaces the node driver's, which hides "
                      "driver drift from the matrix and fails on GPUs the compat package does "
                      "not support",
                      e.path),
          "remove it; pin the node driver in the matrix (drivers.branch/minimum) instead");
  }
  for (const DockerfileStage* st : c.RuntimeBaseFirst()) {
    for (const auto& ins : st->instructions) {
      if (ins.keyword != "RUN") continue;
      for (const auto& cmd : SimpleCommands(ins)) {
        for (const std::string& p : InstalledPackages(cmd)) {
          if (!p.starts_with("cuda-compat")) continue;
          c.Add("dockerfile.cuda-compat", ins.line,
                fmt::format("the runtime {} installs '{}' (CUDA forward compatibility): "
                            "it can stand in for the node driver's libcuda and hide driver "
                            "drift",
                            c.StageLabel(*st), p),
                "do not install cuda-compat in the runtime image; run on nodes whose driver "
                "the matrix pins, or suppress with the reason forward compatibility is needed",
                Severity::kWarning);
        }
      }
      std::string t = RunText(ins);
      if (Has(t, "ld.so.conf") && Has(t, "cuda") && Has(t, "/compat")) {
        c.Add("dockerfile.cuda-compat", ins.line,
              "a runtime RUN puts CUDA's compat folder on the loader path (ld.so.conf): the "
              "image's libcuda replaces the node driver's",
              "remove it; pin the node driver in the matrix instead");
      }
    }
  }
  return Status::Ok();
}

Status RulePasswordLiteral(const DockerfileRuleContext& c) {
  auto literal = [](const std::vector<std::string>& words, std::size_t from, bool need_colon) {
    for (std::size_t i = from; i < words.size(); ++i) {
      const std::string& w = words[i];
      if (w.starts_with("-")) continue;
      std::string_view secret = w;
      if (need_colon) {
        std::size_t colon = w.find(':');
        if (colon == std::string::npos) continue;
        secret = std::string_view(w).substr(colon + 1);
      }
      std::size_t nl = secret.find("\\n");
      if (nl != std::string_view::npos) secret = secret.substr(0, nl);
      if (!IsVariableReference(secret)) return true;
    }
    return false;
  };
  for (const auto& st : c.df.stages) {
    for (const auto& ins : st.instructions) {
      if (ins.keyword != "RUN") continue;
      std::vector<SimpleCommand> cmds = SimpleCommands(ins);
      for (std::size_t i = 0; i < cmds.size(); ++i) {
        std::string prog = CommandProgram(cmds[i]);
        std::string what;
        if ((prog == "echo" || prog == "printf") && cmds[i].piped_to > 0 &&
            cmds[i].piped_to < static_cast<int>(cmds.size())) {
          std::string reader = CommandProgram(cmds[cmds[i].piped_to]);
          if ((reader == "chpasswd" && literal(cmds[i].words, 1, true)) ||
              (reader == "passwd" && literal(cmds[i].words, 1, false))) {
            what = reader + " reads a password written in the Dockerfile";
          }
        }
        if ((prog == "useradd" || prog == "usermod" || prog == "adduser") && what.empty()) {
          const auto& w = cmds[i].words;
          for (std::size_t k = 0; k + 1 < w.size(); ++k) {
            if ((w[k] == "-p" || w[k] == "--password") && !IsVariableReference(w[k + 1])) {
              what = prog + " " + w[k] + " sets a password hash written in the Dockerfile";
            }
          }
        }
        if (what.empty()) continue;
        c.Add("dockerfile.password-literal", ins.line,
              fmt::format("{}: it stays in the image history and layers of every copy of the "
                          "image, in {}",
                          what, c.StageLabel(st)),
              "do not set passwords in images (inference containers need no login); if one is "
              "needed, use RUN --mount=type=secret and lock the account by default");
      }
    }
  }
  return Status::Ok();
}

}  // namespace tg::audit
