// Placeholder: the runtime area registers its subcommands here.
#include "cli/command.h"

namespace tg::cli {

void RegisterRuntimeCommands(CLI::App& /*app*/, GlobalOptions& /*g*/, CommandRegistry& /*r*/) {}

}  // namespace tg::cli
