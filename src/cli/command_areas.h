// Second-level registration hooks, one per team area, so two areas that share a top-level command
// group never edit the same file. Declared weak for TG_ONLY developer builds; the full build
// defines all of them.
#pragma once

#include "cli/command.h"

namespace tg::cli {

// probe (src/cli/integrity_probe_command.cc)
[[gnu::weak]] void RegisterProbeCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r);
// admit, diff, logscan, doctor (src/cli/integrity_policy_commands.cc)
[[gnu::weak]] void RegisterPolicyCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r);
// tokenize, schedule (src/cli/sd_core_commands.cc)
[[gnu::weak]] void RegisterSdCoreCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r);
// generate (src/cli/sd_pipeline_commands.cc)
[[gnu::weak]] void RegisterSdPipelineCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r);
// audit image (src/cli/audit_image_commands.cc); `audit` is the parent group.
[[gnu::weak]] void RegisterAuditImageCommands(CLI::App& audit, GlobalOptions& g,
                                              CommandRegistry& r);
// audit dockerfile, audit k8s (under `audit`) and k8s render (under `app`)
// (src/cli/audit_config_commands.cc)
[[gnu::weak]] void RegisterAuditConfigCommands(CLI::App& app, CLI::App& audit, GlobalOptions& g,
                                               CommandRegistry& r);

}  // namespace tg::cli
