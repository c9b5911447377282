// `truegreen k8s promote` and `truegreen k8s wait-ready`: the steps of the blue-green gate Job
// that talk to the Kubernetes API (src/cli/audit_k8s_commands.cc). Registered under the `k8s`
// group that src/cli/audit_config_commands.cc creates. Single-threaded setup.
#pragma once

#include "cli/command.h"

namespace tg::cli {
// Adds promote and wait-ready to `k8s_group`, as the Register* functions of command.h do.
void RegisterK8sApiCommands(CLI::App& k8s_group, GlobalOptions& g, CommandRegistry& r);

}  // namespace tg::cli
