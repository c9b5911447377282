// Entry point of the `truegreen` binary: global options, subcommand dispatch, exit codes.
// Every failure leaves through cli::ReportError (src/cli/output.h), so all commands keep one
// contract: message on stderr, with --json one error object on stdout, README's exit codes.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/help.h"
#include "cli/option_checks.h"
#include "cli/output.h"
#include "cli/policy_option.h"
#include "cli/version.h"
#include "common/log.h"
#include "common/process_args.h"
#include "common/sanitizer_defaults.h"
#include "common/status.h"
#include "common/telemetry.h"

namespace {

using tg::cli::GlobalOptions;

// What must be known before CLI11 has parsed (or failed to parse) the command line: the output
// format of the error path itself, and --version, which needs no command.
struct EarlyFlags {
  bool json = false;
  bool log_json = false;
  bool version = false;
};

EarlyFlags ScanEarly(const std::vector<std::string>& args) {
  EarlyFlags e;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    if (a == "--json") e.json = true;
    if (a == "--version") e.version = true;
    if (a == "--log-format=json" ||
        (a == "--log-format" && i + 1 < args.size() && args[i + 1] == "json")) {
      e.log_json = true;
    }
  }
  return e;
}

void AddGlobalOptions(CLI::App& app, GlobalOptions& g) {
  app.add_flag("--json", g.json, "Emit the result (or the error) as JSON on stdout");
  app.add_option("--lib-path", g.lib_paths, "Directory searched first for GPU and ORT libraries")
      ->type_name("DIR")
      ->allow_extra_args(false);
  app.add_option("--policy", g.policy,
                 "Runtime policy: production (default: GPU path required) | dev (CPU allowed, "
                 "marked degraded) | FILE (runtime policy YAML, docs/POLICY.md)")
      ->type_name("production|dev|FILE");
  app.add_option("--log-format", g.log_format, "Format of stderr: text | json (one object a line)")
      ->type_name("text|json")
      ->check(CLI::IsMember({"text", "json"}).description(""));
  app.add_option("--log-level", g.log_level, "trace | debug | info | warn | error | off")
      ->type_name("LEVEL");
  app.add_option("--color", g.color,
                 "Colour on stdout: auto (a terminal, NO_COLOR unset) | "
                 "always | never")
      ->type_name("WHEN")
      ->check(CLI::IsMember({"auto", "always", "never"}).description(""));
  // Handled before parsing (ScanEarly); declared so that help lists it and CLI11 accepts it.
  app.add_flag("--version")
      ->description("Print truegreen's version and commit and the bundled ONNX Runtime version");
}

// A CLI11 parse error, reported through the one error path (exit 2).
int ParseFailure(const CLI::App& app, const CLI::ParseError& e, GlobalOptions& g,
                 const std::vector<std::string>& args) {
  std::string what = e.what();
  const CLI::App* at = &app;
  // Name the command whose options were wrong so the hint points at the right help.
  for (const CLI::App* c = &app; c != nullptr;) {
    const CLI::App* next = nullptr;
    for (const CLI::App* s : c->get_subcommands()) next = s;
    if (next == nullptr) break;
    at = next;
    c = next;
  }
  g.command = tg::cli::CommandPath(at);
  what += tg::cli::EnvironmentNote(*at, what, args);
  what +=
      g.command.empty() ? " (see `truegreen help`)" : " (see `truegreen help " + g.command + "`)";
  return tg::cli::ReportError(tg::common::Status::InvalidArg(what));
}

int RunMain(int argc, char** argv, GlobalOptions& g) {
  using tg::cli::CommandRegistry;
  // Before any thread or library exists: ONNX Runtime's telemetry stays off unless opted in.
  tg::common::ApplyOrtTelemetryPolicy();
  const std::vector<std::string> args(argv + 1, argv + argc);
  const EarlyFlags early = ScanEarly(args);
  g.json = early.json;
  tg::common::SetStderrFormat(early.log_json ? tg::common::LogFormat::kJson
                                             : tg::common::LogFormat::kText);
  tg::cli::BindOutput(&g);

  CLI::App app{"truegreen: prove that GPU inference runs on its fast path", "truegreen"};
  app.require_subcommand(1);
  app.fallthrough();
  AddGlobalOptions(app, g);

  CommandRegistry registry;
  // Weak references: a developer build with TG_ONLY may leave an area out; the full build has all.
  for (auto* reg : {&tg::cli::RegisterIntegrityCommands, &tg::cli::RegisterRuntimeCommands,
                    &tg::cli::RegisterSdCommands, &tg::cli::RegisterAuditCommands,
                    &tg::cli::RegisterServeCommands, &tg::cli::RegisterBenchCommands}) {
    if (reg != nullptr) reg(app, g, registry);
  }
  tg::cli::RegisterHelpCommands(app, g, registry);
  tg::cli::AddHelpFooters(app);
  tg::cli::AddNumberChecks(&app);

  if (early.version) {
    tg::cli::PrintVersion(g.json);
    return tg::common::kExitOk;
  }
  if (tg::common::Status words = tg::cli::CheckCommandWords(app, args); !words.ok()) {
    return tg::cli::ReportError(words);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);  // --help: the help on stdout, exit 0
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    return ParseFailure(app, e, g, args);
  }
  // A folder given to read that is not there is a usage error before anything runs (probe
  // would describe a root that does not exist, doctor fail as if the node were broken).
  if (tg::common::Status dirs = tg::cli::CheckInputFolders(app, args); !dirs.ok()) {
    return tg::cli::ReportError(dirs);
  }
  // Every argument now lives in CLI11's copies: take the originals out of /proc/self/cmdline,
  // where ORT's telemetry would otherwise parse them (a 40 KB argument overflowed its regex).
  tg::common::HideCommandLineFromProcfs(argc, argv);

  if (tg::common::Status s = tg::common::InitLogging(g.log_format, g.log_level); !s.ok()) {
    return tg::cli::ReportError(s);
  }
  g.policy_given = app.get_option("--policy")->count() > 0;
  g.use_color = tg::cli::DecideColor(g.color, isatty(STDOUT_FILENO) == 1, std::getenv("NO_COLOR"));
  if (const CLI::App* selected = registry.Selected(); selected != nullptr) {
    g.command = tg::cli::CommandPath(selected);
  }
  if (g.policy_given && !tg::cli::CommandReadsPolicy(g.command)) {
    return tg::cli::ReportError(tg::common::Status::InvalidArg(
        "--policy does not apply to `truegreen " + g.command +
        "`: it reads no runtime policy or version matrix (see `truegreen help " + g.command +
        "`)"));
  }
  int rc = registry.RunSelected();
  if (rc < 0) {
    return tg::cli::ReportError(
        tg::common::Status::InvalidArg("a command is required (see `truegreen help`)"));
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  // Outlives RunMain so that the error path below can still honour --json and the command name.
  static GlobalOptions g;
  try {
    const int rc = RunMain(argc, argv, g);
    std::fflush(stdout);
    return rc;
  } catch (const std::exception& e) {
    // Every module returns Status; reaching here is a bug, reported as an internal error.
    return tg::cli::ReportError(
        tg::common::Status::Internal(std::string("uncaught exception: ") + e.what()));
  }
}
