// Subcommand registration for the `truegreen` binary.
//
// Each module contributes its subcommands through one Register*Commands function defined in its own
// src/cli/<area>_commands.cc, so areas never edit each other's files. A registered command is a
// CLI11 sub-app plus a runner that returns the process exit code (see common/status.h ExitCode).
// Runners write results to stdout and logs to stderr. Single-threaded setup; runners own their
// threading.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "common/dynlib.h"

namespace tg::cli {

// Options every command accepts (placed before or after the subcommand name).
struct GlobalOptions {
  bool json = false;                   // --json: machine-readable result on stdout
  std::vector<std::string> lib_paths;  // --lib-path DIR (repeatable), searched first by the loader
  std::string policy = "production";   // --policy production|dev|FILE (safe default: production)
  std::string log_format = "text";     // --log-format text|json
  std::string log_level = "warn";      // --log-level
  std::string color = "auto";          // --color auto|always|never

  // Filled in by main after parsing (runners read them).
  bool policy_given = false;  // --policy was on the command line (not the production default)
  bool use_color = false;     // ANSI colour on stdout: --color, NO_COLOR and whether it is a tty
  std::string command;        // path of the selected command, e.g. "audit image"

  // The library loader every command uses (built from lib_paths after parsing).
  common::LibraryLoader Loader() const { return common::LibraryLoader::WithDefaults(lib_paths); }
  // True when the user opted into development behaviour (always reported as degraded).
  bool DevPolicy() const { return policy == "dev"; }
};

class CommandRegistry {
 public:
  // Records `runner` to be called when `app` (a leaf subcommand) was selected on the command line.
  void Add(CLI::App* app, std::function<int()> runner) {
    commands_.push_back({app, std::move(runner)});
  }
  // The selected leaf command's app, or nullptr when none was selected.
  CLI::App* Selected() const {
    for (const auto& c : commands_) {
      if (c.app->parsed()) return c.app;
    }
    return nullptr;
  }
  // Runs the selected command; returns its exit code, or -1 if none was selected.
  int RunSelected() const {
    for (const auto& c : commands_) {
      if (c.app->parsed()) return c.runner();
    }
    return -1;
  }
  // Every registered leaf command, in registration order.
  std::vector<CLI::App*> Leaves() const {
    std::vector<CLI::App*> out;
    for (const auto& c : commands_) out.push_back(c.app);
    return out;
  }

 private:
  struct Entry {
    CLI::App* app;
    std::function<int()> runner;
  };
  std::vector<Entry> commands_;
};
// Register*: add subcommands to `app`, runners to `r`; `g` and `r` outlive them. Never fail.
// probe, admit, diff, logscan, doctor (integrity core).
[[gnu::weak]] void RegisterIntegrityCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r);
// run, engines (runtime layer).
[[gnu::weak]] void RegisterRuntimeCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r);
// generate, tokenize, schedule (Stable Diffusion pipeline).
[[gnu::weak]] void RegisterSdCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r);
// audit image|dockerfile|k8s, k8s render (hygiene).
[[gnu::weak]] void RegisterAuditCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r);
// bench, compare (load generator and before/after statistics; src/cli/bench_commands.cc).
[[gnu::weak]] void RegisterBenchCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r);

// serve (HTTP inference server, src/cli/serve_commands.cc).
[[gnu::weak]] void RegisterServeCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r);

}  // namespace tg::cli
