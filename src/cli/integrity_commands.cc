// The integrity core's command group: probe, admit, diff, logscan, doctor.
#include "cli/command_areas.h"

namespace tg::cli {

void RegisterIntegrityCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r) {
  if (&RegisterProbeCommands != nullptr) RegisterProbeCommands(app, g, r);
  if (&RegisterPolicyCommands != nullptr) RegisterPolicyCommands(app, g, r);
}

}  // namespace tg::cli
