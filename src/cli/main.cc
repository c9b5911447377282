// Entry point of the `truegreen` binary: global options, subcommand dispatch, exit codes.
#include <cstdio>
#include <exception>

#include "cli/command.h"
#include "common/log.h"
#include "common/process_args.h"
#include "common/sanitizer_defaults.h"
#include "common/status.h"

#ifndef TG_VERSION
#define TG_VERSION "0.0.0"
#endif

int main(int argc, char** argv) {
  using tg::cli::CommandRegistry;
  using tg::cli::GlobalOptions;

  CLI::App app{"truegreen: prove that GPU inference runs on its fast path", "truegreen"};
  app.set_version_flag("--version", TG_VERSION);
  app.require_subcommand(1);
  app.fallthrough();

  GlobalOptions g;
  app.add_flag("--json", g.json, "Emit the result as JSON on stdout");
  app.add_option("--lib-path", g.lib_paths, "Directory searched first for GPU and ORT libraries")
      ->type_name("DIR")
      ->allow_extra_args(false);
  app.add_option("--policy", g.policy,
                 "production (default: GPU path required) | dev (CPU allowed, marked degraded) | "
                 "FILE");
  app.add_option("--log-format", g.log_format, "Log format on stderr: text | json");
  app.add_option("--log-level", g.log_level, "trace | debug | info | warn | error | off");

  CommandRegistry registry;
  // Weak references: a developer build with TG_ONLY may leave an area out; the full build has all.
  for (auto* reg : {&tg::cli::RegisterIntegrityCommands, &tg::cli::RegisterRuntimeCommands,
                    &tg::cli::RegisterSdCommands, &tg::cli::RegisterAuditCommands}) {
    if (reg != nullptr) reg(app, g, registry);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    // CLI11 returns 0 for --help/--version; any real parse error is a usage error (2).
    return rc == 0 ? tg::common::kExitOk : tg::common::kExitUsage;
  }
  // Every argument now lives in CLI11's copies: take the originals out of /proc/self/cmdline,
  // where ORT's telemetry would otherwise parse them (a 40 KB argument overflowed its regex).
  tg::common::HideCommandLineFromProcfs(argc, argv);

  tg::common::Status s = tg::common::InitLogging(g.log_format, g.log_level);
  if (!s.ok()) {
    std::fprintf(stderr, "truegreen: %s\n", s.message().c_str());
    return tg::common::kExitUsage;
  }

  try {
    int rc = registry.RunSelected();
    if (rc < 0) {
      std::fprintf(stderr, "truegreen: choose a subcommand (see --help)\n");
      return tg::common::kExitUsage;
    }
    return rc;
  } catch (const std::exception& e) {
    // Every module returns Status; reaching here is a bug, reported as an internal error.
    std::fprintf(stderr, "truegreen: internal error: %s\n", e.what());
    return tg::common::kExitInternal;
  }
}
