// Placeholder: the integrity area registers its subcommands here.
#include "cli/command.h"

namespace tg::cli {

void RegisterIntegrityCommands(CLI::App& /*app*/, GlobalOptions& /*g*/, CommandRegistry& /*r*/) {}

}  // namespace tg::cli
