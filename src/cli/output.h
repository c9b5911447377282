// The output contract every command follows (README, "Output and errors"):
//   - results on stdout (text, or one JSON document with --json);
//   - messages on stderr (a JSON object per line with --log-format json);
//   - every error through ReportError: the message on stderr and, with --json, exactly one object
//     {"error":{"code","message","exit_code"}} on stdout; the exit code comes from the one
//     Status -> exit code mapping, common::ExitCodeFromStatus.
//
// State: BindOutput stores a pointer to the parsed GlobalOptions (owned by main, alive for the
// whole run). The CLI is single-threaded; these functions are not meant for worker threads.
#pragma once

#include <string>
#include <string_view>

#include "cli/command.h"
#include "common/config.h"
#include "common/status.h"

namespace tg::cli {

// Binds the functions below to the parsed global options. Before it is called they behave as
// with no flags (text on stderr, no JSON on stdout).
void BindOutput(const GlobalOptions* g);

// The one error path. Writes "truegreen <command>: <message>" on stderr and, with --json, the
// error object on stdout; `context` (a JSON object, e.g. the session report of a placement
// violation) is merged into that object beside "error". Returns the exit code for `status`
// (an OK status here is a bug: reported as INTERNAL).
int ReportError(const common::Status& status, const common::Json& context = common::Json());

// A warning on stderr, "truegreen <command>: warning: <message>" (a JSON line with
// --log-format json). Never touches stdout.
void Warn(std::string_view message);

// Writes each line of `text` to stderr as it is, or as one JSON object per line with
// --log-format json (common::WriteStderrLine). For evidence that goes with an error (the startup
// steps) when stdout carries no JSON. Never touches stdout.
void StderrLines(std::string_view level, std::string_view text);

// JSON documents that are arrays (compare.json, bench compare --json) have no object to carry
// the writer's "invalid_utf8" member: for those, when strings in `j` were not valid UTF-8, a
// warning on stderr says how many were replaced by U+FFFD in `what`. Objects: nothing (they carry
// the member). The array stays the same shape, so readers of the file are not broken.
void WarnIfUtf8Replaced(const common::Json& j, std::string_view what);

// Writes `text` to stdout unchanged.
void Print(std::string_view text);
// Writes `j` (indented, invalid UTF-8 replaced rather than fatal) and a newline to stdout; for an
// array, WarnIfUtf8Replaced(j, "standard output").
void PrintJson(const common::Json& j);

// Verdict colours: green pass, yellow degraded or advisory, red failure.
enum class Tone { kPass, kWarn, kFail };
// `text` wrapped in the ANSI colour of `tone` when colour is on (GlobalOptions::use_color), else
// `text` unchanged.
std::string Paint(std::string_view text, Tone tone);

// Whether stdout gets ANSI colour: mode "always" or "never" decide; "auto" means stdout is a
// terminal and NO_COLOR is unset or empty (https://no-color.org).
bool DecideColor(std::string_view mode, bool stdout_is_tty, const char* no_color_env);

}  // namespace tg::cli
