// The hygiene command groups: `audit image|dockerfile|k8s` and `k8s render`.
#include "cli/command_areas.h"

namespace tg::cli {

void RegisterAuditCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r) {
  CLI::App* audit =
      app.add_subcommand("audit", "Audit images, Dockerfiles and Kubernetes manifests");
  audit->require_subcommand(1);
  if (&RegisterAuditImageCommands != nullptr) RegisterAuditImageCommands(*audit, g, r);
  if (&RegisterAuditConfigCommands != nullptr) RegisterAuditConfigCommands(app, *audit, g, r);
}

}  // namespace tg::cli
