// Help, naming and the CLI definition as data: `truegreen help [COMMAND...]`, the footer of every
// command's --help (global options and one example), the nearest-command suggestion for a typo,
// and the hidden `truegreen __cli-tree` that dumps every command path, flag and example as JSON
// (tests use it to check that every flag an advice string or example names exists).
//
// All functions run on the single CLI thread during set-up; they keep pointers into `app`, which
// must outlive them (main owns it).
#pragma once

#include <string>
#include <vector>

#include "cli/command.h"
#include "common/config.h"
#include "common/status.h"

namespace tg::cli {

// Registers `help` and the hidden `__cli-tree`. Call after every area registered its commands.
void RegisterHelpCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r);

// Sets every subcommand's footer: the global options and an example (from the examples table).
void AddHelpFooters(CLI::App& app);

// Checks the command words in `args` (argv without argv[0]) before CLI11 parses them: an unknown
// command is INVALID_ARG naming it, its parent and the nearest existing command ("did you mean").
// OK when the words name known commands (CLI11 then reports any other problem).
common::Status CheckCommandWords(const CLI::App& app, const std::vector<std::string>& args);

// "audit image" for the `audit image` sub-app (empty for the root).
std::string CommandPath(const CLI::App* app);

// The whole CLI definition: {"name","path","description","example","options":[{"name",
// "type_name","takes_value","description"}],"subcommands":[...]} (hidden commands included).
common::Json CliTree(const CLI::App& app);

}  // namespace tg::cli
