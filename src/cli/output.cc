#include "cli/output.h"

#include <cstdio>
#include <string>

#include "common/json_writer.h"
#include "common/log.h"

namespace tg::cli {
namespace {

const GlobalOptions* g_options = nullptr;

std::string Prefix() {
  if (g_options == nullptr || g_options->command.empty()) return "truegreen: ";
  return "truegreen " + g_options->command + ": ";
}

}  // namespace

void BindOutput(const GlobalOptions* g) { g_options = g; }

int ReportError(const common::Status& status, const common::Json& context) {
  // An OK status on the error path means a runner lost its real error: that is a bug (exit 1).
  const common::Status s =
      status.ok() ? common::Status::Internal("error path reached without an error") : status;
  const int exit_code = common::ExitCodeFromStatus(s);
  common::WriteStderrLine("error", Prefix() + s.message());
  if (g_options != nullptr && g_options->json) {
    common::Json j = common::Json::object();
    if (context.is_object()) j = context;
    j["error"] = {{"code", std::string(common::StatusCodeName(s.code()))},
                  {"message", s.message()},
                  {"exit_code", exit_code}};
    PrintJson(j);
  }
  std::fflush(stdout);
  return exit_code;
}

void Warn(std::string_view message) {
  common::WriteStderrLine("warning", Prefix() + "warning: " + std::string(message));
}

void StderrLines(std::string_view level, std::string_view text) {
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    common::WriteStderrLine(level, text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

void Print(std::string_view text) { std::fwrite(text.data(), 1, text.size(), stdout); }

void WarnIfUtf8Replaced(const common::Json& j, std::string_view what) {
  if (j.is_object()) return;
  const std::uint64_t n = common::CountInvalidUtf8(j);
  if (n == 0) return;
  Warn(std::to_string(n) + " string(s) in " + std::string(what) +
       " held bytes that are not valid UTF-8; they were replaced by U+FFFD");
}

void PrintJson(const common::Json& j) {
  WarnIfUtf8Replaced(j, "standard output");
  Print(common::WriteJson(j, 2));
  Print("\n");
}

std::string Paint(std::string_view text, Tone tone) {
  if (g_options == nullptr || !g_options->use_color) return std::string(text);
  const char* code = tone == Tone::kPass ? "32" : tone == Tone::kWarn ? "33" : "31";
  return std::string("\033[") + code + "m" + std::string(text) + "\033[0m";
}

bool DecideColor(std::string_view mode, bool stdout_is_tty, const char* no_color_env) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  const bool no_color = no_color_env != nullptr && no_color_env[0] != '\0';
  return stdout_is_tty && !no_color;
}

}  // namespace tg::cli
