// Placeholder: the audit area registers its subcommands here.
#include "cli/command.h"

namespace tg::cli {

void RegisterAuditCommands(CLI::App& /*app*/, GlobalOptions& /*g*/, CommandRegistry& /*r*/) {}

}  // namespace tg::cli
