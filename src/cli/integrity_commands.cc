// The integrity core's command group: probe, admit, diff, logscan, doctor.
#include "cli/command_areas.h"
#include "cli/integrity_canary.h"

namespace tg::cli {

void RegisterIntegrityCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r) {
  if (&RegisterProbeCommands != nullptr) RegisterProbeCommands(app, g, r);
  if (&RegisterPolicyCommands != nullptr) RegisterPolicyCommands(app, g, r);
  RegisterCanaryChildCommand(app, g, r);
}

}  // namespace tg::cli
