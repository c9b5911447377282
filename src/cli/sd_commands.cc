// The Stable Diffusion command group: tokenize, schedule, generate.
#include "cli/command_areas.h"

namespace tg::cli {

void RegisterSdCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r) {
  if (&RegisterSdCoreCommands != nullptr) RegisterSdCoreCommands(app, g, r);
  if (&RegisterSdPipelineCommands != nullptr) RegisterSdPipelineCommands(app, g, r);
}

}  // namespace tg::cli
