// `truegreen audit dockerfile`: hygiene rules over a parsed Dockerfile and its build context.
//
// Rules (ids are stable; docs/AUDIT_CONFIG.md explains each with its fix):
//   dockerfile.multi-stage           one stage that also RUNs a build: the toolchain ships
//   dockerfile.runtime-build-tools   the runtime stage (the final stage and the stages it is FROM)
//                                    installs compilers/-dev packages/cmake/nvcc, runs them, or
//                                    COPY --from's a toolchain
//   dockerfile.runtime-devel-base    the runtime stage starts from a development image (*devel*,
//                                    sdk, gcc, golang, rust)
//   dockerfile.base-digest           a base image (FROM, COPY --from=image) is not pinned by
//                                    @sha256 digest (scratch and stage names are fine)
//   dockerfile.package-cache         a shipped RUN installs packages (apt, apk, dnf/yum, pip,
//                                    conda, npm) without removing the cache in the same RUN
//   dockerfile.dockerignore          no .dockerignore (nor <Dockerfile>.dockerignore)
//   dockerfile.dockerignore-coverage the ignore file lets .git, notebooks, caches or model
//                                    weights into the context
// Each of these is severity error (exit 6), with file:line and a fix; the hadolint-style rules
// (dockerfile_rules.h) add findings of their own severities.
//
// Failure behaviour: AuditDockerfile returns a Status only when the ignore file exists but cannot
// be read. Thread safety: pure function over its inputs.
#pragma once

#include <string>
#include <vector>

#include "audit/dockerfile/dockerfile_parser.h"
#include "audit/report/finding.h"
#include "common/status.h"

namespace tg::audit {

struct DockerfileAuditOptions {
  std::string dockerfile_path;  // as given on the command line (names findings, locates ignore)
  std::string context_dir;      // build context; "" = the Dockerfile's directory
};

struct DockerfileAuditReport {
  std::vector<Finding> findings;
  std::string dockerignore;  // the ignore file used, "" when none
  int stages = 0;
  std::vector<int> runtime_chain;  // final stage first
};

// Runs every rule over `df` (parsed by ParseDockerfile) and its build context's ignore file.
// Errors: only the ignore file's read error (it exists but cannot be read); every rule outcome is
// a Finding in the report.
common::Result<DockerfileAuditReport> AuditDockerfile(const Dockerfile& df,
                                                      const DockerfileAuditOptions& options);

// The rule table AuditDockerfile runs: one function per rule (dockerfile_rules.h), each appending
// its findings to the context's report and returning OK. Each entry names the matching hadolint id
// when there is one.
struct DockerfileRuleContext;
using DockerfileRuleFn = common::Status (*)(const DockerfileRuleContext&);

struct DockerfileRule {
  const char* id;        // "dockerfile.user-root"
  const char* hadolint;  // "DL3002", or "" when hadolint has no equivalent
  DockerfileRuleFn run;
};
// Every rule, in report order (static).
const std::vector<DockerfileRule>& DockerfileRuleTable();

// Exposed for tests: is `package` (as given to apt/apk/dnf/pip, version pins allowed) a compiler,
// build tool or development package?
bool IsBuildToolPackage(std::string_view package);

}  // namespace tg::audit
