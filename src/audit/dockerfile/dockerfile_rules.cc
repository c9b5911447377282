// The hadolint-style Dockerfile rules. Each message starts with the hadolint id in brackets when
// hadolint has the same rule, so a team that knows hadolint's ids recognises it; where hadolint
// has none the message says what the closest check is.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

#include "audit/dockerfile/dockerfile_rules.h"
#include "audit/report/secret_shape.h"
#include "common/strings.h"

namespace tg::audit {
namespace {

using common::Status;

using common::Lower;

bool IsAssignment(std::string_view w) {
  std::size_t eq = w.find('=');
  if (eq == std::string_view::npos || eq == 0) return false;
  return std::all_of(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(eq), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// The program a simple command runs, past env assignments and wrappers (sudo included).
std::string Program(const SimpleCommand& c) {
  for (const auto& w : c.words) {
    if (IsAssignment(w) || w == "sudo" || w == "env" || w == "exec" || w == "time" || w == "nice" ||
        w == "command" || (!w.empty() && w[0] == '-')) {
      continue;
    }
    return std::string(common::Basename(w));
  }
  return "";
}

bool IsShell(std::string_view p) {
  return p == "sh" || p == "bash" || p == "dash" || p == "zsh" || p == "ash" || p == "ksh";
}

// "root", "0", "root:root", "0:0" (the user part decides).
bool IsRootUser(std::string_view u) {
  std::string user = Lower(u.substr(0, u.find(':')));
  return user == "root" || user == "0";
}

}  // namespace

std::string CommandProgram(const SimpleCommand& c) { return Program(c); }

std::vector<SimpleCommand> SimpleCommands(const DockerfileInstruction& run) {
  std::string script = run.args;
  if (run.json_form) {
    script.clear();
    for (const auto& a : run.json_args) script += "'" + a + "' ";
  }
  for (const auto& h : run.heredocs) script += "\n" + h.body;
  std::vector<SimpleCommand> out(1);
  for (auto& w : ShellWords(script)) {
    bool sep = w == ";" || w == "&&" || w == "||" || w == "|" || w == "&";
    if (!sep) {
      out.back().words.push_back(std::move(w));
      continue;
    }
    if (w == "|") out.back().piped_to = static_cast<int>(out.size());
    out.emplace_back();
  }
  std::erase_if(out, [](const SimpleCommand& c) { return c.words.empty() && c.piped_to < 0; });
  return out;
}

Status RuleUserRoot(const DockerfileRuleContext& c) {
  const DockerfileInstruction* last_user = nullptr;
  for (const DockerfileStage* st : c.RuntimeBaseFirst()) {
    for (const auto& ins : st->instructions) {
      if (ins.keyword == "USER") last_user = &ins;
    }
  }
  const DockerfileStage& final_stage = c.df.stages.back();
  if (last_user == nullptr) {
    // truegreen's own finding: hadolint's DL3002 judges only an explicit root USER.
    c.Add("dockerfile.user-root", final_stage.line,
          fmt::format("the runtime {} has no USER: the container runs as root unless "
                      "the orchestrator overrides it",
                      c.StageLabel(final_stage)),
          "add 'USER 65532:65532' (or another unprivileged uid) at the end of the runtime stage");
  } else if (IsRootUser(last_user->args)) {
    c.Add("dockerfile.user-root", last_user->line,
          fmt::format("[DL3002] the last USER of the runtime image is '{}': the container runs "
                      "as root",
                      last_user->args),
          "end the runtime stage with an unprivileged USER (e.g. 65532:65532)");
  }
  return Status::Ok();
}

Status RuleAddUrl(const DockerfileRuleContext& c) {
  for (const auto& st : c.df.stages) {
    for (const auto& ins : st.instructions) {
      if (ins.keyword != "ADD") continue;
      std::vector<std::string> srcs = ins.json_form ? ins.json_args : ShellWords(ins.args);
      if (!srcs.empty()) srcs.pop_back();
      for (const auto& s : srcs) {
        std::string l = Lower(s);
        if (l.rfind("http://", 0) != 0 && l.rfind("https://", 0) != 0 && l.rfind("git@", 0) != 0) {
          continue;
        }
        bool checked = ins.Flag("checksum").has_value();
        c.Add("dockerfile.add-url", ins.line,
              fmt::format("ADD {} downloads at build time{}: the content can change under the "
                          "same Dockerfile (hadolint has no id for this; its DL3020 covers ADD of "
                          "local files)",
                          s, checked ? " (with --checksum)" : " without --checksum"),
              "download in a RUN with a pinned checksum (curl -fsSLo f URL && sha256sum -c), or "
              "use ADD --checksum=sha256:<digest>",
              checked ? Severity::kWarning : Severity::kError);
      }
    }
  }
  return Status::Ok();
}

Status RulePipeToShell(const DockerfileRuleContext& c) {
  for (const auto& st : c.df.stages) {
    for (const auto& ins : st.instructions) {
      if (ins.keyword != "RUN") continue;
      std::vector<SimpleCommand> cmds = SimpleCommands(ins);
      for (const auto& cmd : cmds) {
        std::string prog = Program(cmd);
        if ((prog != "curl" && prog != "wget") || cmd.piped_to < 0 ||
            cmd.piped_to >= static_cast<int>(cmds.size())) {
          continue;
        }
        std::string sink = Program(cmds[cmd.piped_to]);
        if (!IsShell(sink) && sink != "python" && sink != "python3" && sink != "perl") continue;
        c.Add("dockerfile.pipe-to-shell", ins.line,
              fmt::format("RUN pipes {} into {}: a script fetched at build time runs unverified "
                          "(and without 'set -o pipefail' a failed download still passes; "
                          "hadolint DL4006 covers only the pipefail part)",
                          prog, sink),
              "download to a file, verify its sha256, then run it");
      }
    }
  }
  return Status::Ok();
}

Status RuleSudo(const DockerfileRuleContext& c) {
  for (const auto& st : c.df.stages) {
    for (const auto& ins : st.instructions) {
      if (ins.keyword != "RUN") continue;
      for (const auto& cmd : SimpleCommands(ins)) {
        // The command runs sudo (past env assignments); installing the sudo package is not
        // using it (hadolint DL3004 agrees).
        auto first = std::find_if(cmd.words.begin(), cmd.words.end(),
                                  [](const std::string& w) { return !IsAssignment(w); });
        bool sudo = first != cmd.words.end() && common::Basename(*first) == "sudo";
        if (!sudo || Program(cmd).empty()) continue;
        c.Add("dockerfile.sudo", ins.line,
              "[DL3004] RUN uses sudo: it has unpredictable TTY and signal behaviour, and an "
              "image that needs it usually ships it (a root escalation path at run time)",
              "switch with USER root ... USER <app> around the commands that need root");
        break;
      }
    }
  }
  return Status::Ok();
}

Status RuleMaintainer(const DockerfileRuleContext& c) {
  for (const auto& st : c.df.stages) {
    for (const auto& ins : st.instructions) {
      if (ins.keyword != "MAINTAINER") continue;
      c.Add("dockerfile.maintainer", ins.line, "[DL4000] MAINTAINER is deprecated",
            "use LABEL org.opencontainers.image.authors=\"...\"", Severity::kWarning);
    }
  }
  return Status::Ok();
}

Status RuleExposeRange(const DockerfileRuleContext& c) {
  for (const auto& st : c.df.stages) {
    for (const auto& ins : st.instructions) {
      if (ins.keyword != "EXPOSE") continue;
      for (const auto& word : ShellWords(ins.args)) {
        std::string port = word.substr(0, word.find('/'));
        std::string proto = word.find('/') == std::string::npos ? "" : word.substr(word.find('/'));
        if (port.find('$') != std::string::npos) continue;  // set at build time
        bool ok = proto.empty() || proto == "/tcp" || proto == "/udp" || proto == "/sctp";
        std::size_t dash = port.find('-');
        for (const std::string& part :
             {port.substr(0, dash), dash == std::string::npos ? "1" : port.substr(dash + 1)}) {
          long long v = 0;
          auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
          ok = ok && ec == std::errc() && p == part.data() + part.size() && v >= 1 && v <= 65535;
        }
        if (ok) continue;
        c.Add("dockerfile.expose-range", ins.line,
              fmt::format("[DL3011] EXPOSE {}: ports are 1-65535 (optionally /tcp, /udp or "
                          "/sctp)",
                          word),
              "expose the port the server listens on, e.g. EXPOSE 8000");
      }
    }
  }
  return Status::Ok();
}

// NAME=value pairs of an ENV or ARG (legacy `ENV NAME value` included); value "" when absent.
std::vector<std::pair<std::string, std::string>> InstructionAssignments(
    const DockerfileInstruction& ins) {
  std::vector<std::pair<std::string, std::string>> out;
  std::vector<std::string> w = ShellWords(ins.args);
  if (w.empty()) return out;
  if (ins.keyword == "ENV" && w[0].find('=') == std::string::npos) {
    out.emplace_back(w[0], w.size() > 1 ? w[1] : "");
    return out;
  }
  for (const auto& kv : w) {
    std::size_t eq = kv.find('=');
    out.emplace_back(kv.substr(0, eq), eq == std::string::npos ? "" : kv.substr(eq + 1));
  }
  return out;
}

Status RuleSecretEnv(const DockerfileRuleContext& c) {
  auto check = [&](const DockerfileInstruction& ins) {
    if (ins.keyword != "ENV" && ins.keyword != "ARG") return;
    for (const auto& [name, value] : InstructionAssignments(ins)) {
      bool env = ins.keyword == "ENV";
      bool has_value = !IsVariableReference(value);
      std::string shape = has_value ? SecretValueShape(value) : "";
      if (!LooksSecretName(name) && shape.empty()) continue;
      if (!env && !has_value) {
        c.Add("dockerfile.secret-env", ins.line,
              fmt::format("ARG {} looks like a secret: build-argument values are recorded in the "
                          "image history (no hadolint id; BuildKit check SecretsUsedInArgOrEnv)",
                          name),
              "pass secrets with RUN --mount=type=secret,id=... instead of ARG",
              Severity::kWarning);
        continue;
      }
      std::string why = !shape.empty() ? fmt::format(" and its value has the shape of {}", shape)
                        : has_value    ? " and has a value in the Dockerfile"
                                       : "";
      c.Add("dockerfile.secret-env", ins.line,
            fmt::format("{} {} looks like a secret{}: it is stored in the image config and "
                        "history for anyone who can pull the image (no hadolint id; BuildKit "
                        "check SecretsUsedInArgOrEnv)",
                        ins.keyword, name, why),
            "remove the value and revoke it; pass secrets with RUN --mount=type=secret,id=..., or "
            "inject them at run time");
    }
  };
  for (const auto& ins : c.df.global_args) check(ins);
  for (const auto& st : c.df.stages) {
    for (const auto& ins : st.instructions) check(ins);
  }
  return Status::Ok();
}

Status RuleAptRecommends(const DockerfileRuleContext& c) {
  for (const DockerfileStage* st : c.RuntimeBaseFirst()) {
    for (const auto& ins : st->instructions) {
      if (ins.keyword != "RUN") continue;
      for (const auto& cmd : SimpleCommands(ins)) {
        std::string prog = Program(cmd);
        if (prog != "apt-get" && prog != "apt") continue;
        bool install = false, no_rec = false;
        for (const auto& w : cmd.words) {
          install = install || w == "install";
          no_rec = no_rec || w == "--no-install-recommends" ||
                   w.find("Install-Recommends=false") != std::string::npos ||
                   w.find("Install-Recommends=0") != std::string::npos;
        }
        if (!install || no_rec) continue;
        c.Add("dockerfile.apt-recommends", ins.line,
              fmt::format("[DL3015] apt-get install without --no-install-recommends in the "
                          "runtime {}: recommended packages ship too",
                          c.StageLabel(*st)),
              "apt-get install -y --no-install-recommends ...", Severity::kWarning);
      }
    }
  }
  return Status::Ok();
}

Status RuleBaseTag(const DockerfileRuleContext& c) {
  for (const auto& st : c.df.stages) {
    if (st.parent_stage >= 0 || !st.unresolved_args.empty()) continue;
    std::string ref = Lower(st.base);
    if (ref == "scratch" || ref.find('@') != std::string::npos) continue;  // digest decides
    std::size_t slash = ref.rfind('/');
    std::size_t colon = ref.rfind(':');
    bool tagged = colon != std::string::npos && (slash == std::string::npos || colon > slash);
    std::string tag = tagged ? ref.substr(colon + 1) : "";
    if (tagged && tag != "latest") continue;
    c.Add("dockerfile.base-tag", st.line,
          tagged ? fmt::format("[DL3007] FROM {}: ':latest' moves with every release", st.base)
                 : fmt::format("[DL3006] FROM {}: no tag means ':latest', which moves with every "
                               "release",
                               st.base),
          "name an explicit version tag and pin the digest: FROM name:1.2.3@sha256:<digest>");
  }
  return Status::Ok();
}

Status RuleCdWorkdir(const DockerfileRuleContext& c) {
  for (const auto& st : c.df.stages) {
    for (const auto& ins : st.instructions) {
      if (ins.keyword != "RUN") continue;
      for (const auto& cmd : SimpleCommands(ins)) {
        if (Program(cmd) != "cd") continue;
        c.Add("dockerfile.cd", ins.line,
              "[DL3003] RUN cd ...: the directory change is lost after this RUN and hides "
              "where later commands run",
              "use WORKDIR /path", Severity::kWarning);
        break;
      }
    }
  }
  return Status::Ok();
}

void DockerfileRuleContext::Add(std::string rule, int line, std::string message, std::string fix,
                                Severity severity) const {
  Finding f;
  f.rule = std::move(rule);
  f.severity = severity;
  f.path = file;
  f.line = line;
  f.message = std::move(message);
  f.fix = std::move(fix);
  report->findings.push_back(std::move(f));
}

std::string DockerfileRuleContext::StageLabel(const DockerfileStage& st) const {
  return st.name.empty() ? fmt::format("stage {}", st.index) : fmt::format("stage '{}'", st.name);
}

std::vector<const DockerfileStage*> DockerfileRuleContext::RuntimeBaseFirst() const {
  std::vector<const DockerfileStage*> out;
  const auto& chain = report->runtime_chain;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) out.push_back(&df.stages[*it]);
  return out;
}

}  // namespace tg::audit
