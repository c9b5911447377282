// The rules of `truegreen audit dockerfile`: one function per rule, run in order by
// AuditDockerfile from its table (DockerfileRuleTable, dockerfile_audit.h; dockerfile_audit.cc
// holds the GPU/build hygiene rules, dockerfile_rules.cc the hadolint-style ones). A rule with a
// hadolint equivalent names its id in the finding's message, so users recognise it.
//
// Thread safety: the rules are pure; a context is used by one audit at a time.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "audit/dockerfile/dockerfile_audit.h"
#include "audit/dockerfile/dockerfile_parser.h"
#include "audit/report/finding.h"
#include "common/status.h"

namespace tg::audit {

struct DockerfileRuleContext {
  const Dockerfile& df;
  const DockerfileAuditOptions& options;
  std::string file;       // path used in findings
  std::set<int> runtime;  // stages that ship (final stage and the stages it is FROM)
  DockerfileAuditReport* report;
  // Add appends a finding at `line` of `file`; StageLabel is "stage 2" or "stage 'build'".
  void Add(std::string rule, int line, std::string message, std::string fix,
           Severity severity = Severity::kError) const;
  std::string StageLabel(const DockerfileStage& st) const;
  // Stages of the runtime chain, base first.
  std::vector<const DockerfileStage*> RuntimeBaseFirst() const;
};

// The hadolint-style rules (dockerfile_rules.cc).
common::Status RuleUserRoot(const DockerfileRuleContext& c);     // DL3002
common::Status RuleAddUrl(const DockerfileRuleContext& c);       // (none; DL3020 is local files)
common::Status RulePipeToShell(const DockerfileRuleContext& c);  // (related: DL4006)
common::Status RuleSudo(const DockerfileRuleContext& c);         // DL3004
common::Status RuleMaintainer(const DockerfileRuleContext& c);   // DL4000
common::Status RuleExposeRange(const DockerfileRuleContext& c);  // DL3011
common::Status RuleSecretEnv(const DockerfileRuleContext& c);    // (BuildKit SecretsUsedInArgOrEnv)
common::Status RuleAptRecommends(const DockerfileRuleContext& c);  // DL3015
common::Status RuleBaseTag(const DockerfileRuleContext& c);        // DL3006 / DL3007
common::Status RuleCdWorkdir(const DockerfileRuleContext& c);      // DL3003

// Simple commands of a RUN (shell words split at ; && || | & and newlines, wrappers such as
// env/exec dropped); `piped_to` is the index of the command that reads this one's stdout, or -1.
struct SimpleCommand {
  std::vector<std::string> words;  // words[0] is the program (sudo kept, for the sudo rule)
  int piped_to = -1;
};
std::vector<SimpleCommand> SimpleCommands(const DockerfileInstruction& run);
// The program a simple command runs (basename), past assignments and wrappers; "" when none.
std::string CommandProgram(const SimpleCommand& c);
// NAME=value pairs of an ENV or ARG (legacy `ENV NAME value` included); value "" when absent.
std::vector<std::pair<std::string, std::string>> InstructionAssignments(
    const DockerfileInstruction& ins);

// GPU-runtime and credential rules (dockerfile_rules_runtime.cc).
common::Status RuleCudaStubs(const DockerfileRuleContext& c);        // (none)
common::Status RuleCudaCompat(const DockerfileRuleContext& c);       // (none)
common::Status RulePasswordLiteral(const DockerfileRuleContext& c);  // (none)

}  // namespace tg::audit
