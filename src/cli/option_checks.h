// Checks every number option of every command gets, in one place, whatever the command adds.
// Number options are those CLI11 types FLOAT, INT or UINT, and those commands name N, SECONDS, MS
// or FRACTION instead:
//   integer text past the 64-bit range is refused as an overflow naming the range (CLI11 alone
//     clamps 2^64 to 2^64-1 for unsigned options);
//   other number text: NaN and infinities are refused, and so is a magnitude above
//     kMaxOptionMagnitude (a window of 1e308 s is not a window); commands add narrower ranges.
// --policy and --scheduler (of every command) refuse an empty value.
// Path options (typed FILE or DIR) refuse a path of PATH_MAX bytes or more.
// The values of TRUEGREEN_* environment variables go through the same checks.
//
// Call once after every command is registered and before parsing. Single-threaded.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "common/status.h"

namespace tg::cli {

inline constexpr double kMaxOptionMagnitude = 1e9;

void AddNumberChecks(CLI::App* app);

// After a successful parse of `app` (from `args`): every option given (or set from its
// environment variable) that is typed DIR names a folder the command reads, and must be one.
// Refuses the first that is not, naming flag and value: NOT_FOUND when it does not exist,
// INVALID_ARG when it is not a folder or cannot be read (both exit 2). The few folders commands
// write (--ab-out, --canary-cache-dir, --save-outputs) are left to the command. Reads the
// filesystem; single-threaded.
common::Status CheckInputFolders(const CLI::App& app, const std::vector<std::string>& args);

// For a parse error `message` about an option of `cmd` whose value came from its environment
// variable (set, and the flag itself not among `args`): " (the value comes from the environment
// variable NAME)", so the message names what the user wrote. Empty otherwise.
std::string EnvironmentNote(const CLI::App& cmd, const std::string& message,
                            const std::vector<std::string>& args);

// This process's command-line arguments after argv[0] (from /proc/self/cmdline), for a command
// that checks EnvironmentNote after parsing. Empty when they cannot be read. Thread-safe.
std::vector<std::string> ProcessArgs();

}  // namespace tg::cli
