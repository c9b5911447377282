// Placeholder: the sd area registers its subcommands here.
#include "cli/command.h"

namespace tg::cli {

void RegisterSdCommands(CLI::App& /*app*/, GlobalOptions& /*g*/, CommandRegistry& /*r*/) {}

}  // namespace tg::cli
