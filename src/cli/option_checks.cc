#include "cli/option_checks.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace tg::cli {
namespace {

// Empty when `text` is acceptable, else the reason. Text that is no number at all is left to
// CLI11's own conversion, which names the type it wanted.
std::string CheckFloat(const std::string& text) {
  if (text.empty()) return "";
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return "";
  if (std::isnan(v)) return "'" + text + "' is not a number (NaN is refused)";
  if (std::isinf(v) || (errno == ERANGE && std::fabs(v) > 1.0)) {
    return "'" + text + "' is infinite or overflows a double";
  }
  if (std::fabs(v) > kMaxOptionMagnitude) {
    return "'" + text + "' is outside the range of any number option (-1e9..1e9)";
  }
  return "";
}

std::string CheckInteger(const std::string& text, bool is_unsigned) {
  if (text.empty()) return "";
  char* end = nullptr;
  errno = 0;
  if (is_unsigned) {
    if (text.find('-') != std::string::npos) return "";  // CLI11 refuses it, naming UINT
    (void)std::strtoull(text.c_str(), &end, 0);
  } else {
    (void)std::strtoll(text.c_str(), &end, 0);
  }
  if (end != text.c_str() + text.size() || errno != ERANGE) return "";
  return "'" + text + "' overflows a 64-bit integer (range " +
         (is_unsigned ? std::string("0..18446744073709551615")
                      : std::string("-9223372036854775808..9223372036854775807")) +
         ")";
}

// The type as declared, before CLI11 appends validator descriptions ("FLOAT:POSITIVE").
std::string BaseType(const CLI::Option* opt) {
  const std::string full = opt->get_type_name();
  return full.substr(0, full.find(':'));
}

// Integer text is held to the 64-bit range; any other number text to the floating rules.
std::string CheckNumber(const std::string& text, bool is_unsigned) {
  std::string why = CheckInteger(text, is_unsigned);
  if (!why.empty()) return why;
  char* end = nullptr;
  errno = 0;
  (void)std::strtoll(text.c_str(), &end, 10);
  if (!text.empty() && end == text.c_str() + text.size()) return "";  // an in-range integer
  return CheckFloat(text);
}

void AddChecks(CLI::App* app) {
  // Number types as CLI11 names them, and the names commands give number options instead.
  static const char* const kNumberTypes[] = {"FLOAT",   "INT", "UINT",    "N",
                                             "SECONDS", "MS",  "FRACTION"};
  for (CLI::Option* opt : app->get_options()) {
    // Options whose empty value would silently mean the default instead of what was written.
    if (opt->get_name() == "--policy" || opt->get_name() == "--scheduler") {
      opt->check(CLI::Validator(
          [](std::string& s) {
            return s.empty() ? std::string("an empty value names nothing") : "";
          },
          ""));
    }
    const std::string type = BaseType(opt);
    bool number = false;
    for (const char* t : kNumberTypes) number = number || type == t;
    if (!number) continue;
    const bool is_unsigned = type == "UINT";
    opt->check(
        CLI::Validator([is_unsigned](std::string& s) { return CheckNumber(s, is_unsigned); }, ""));
  }
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) AddChecks(sub);
}

}  // namespace

void AddNumberChecks(CLI::App* app) { AddChecks(app); }

std::string EnvironmentNote(const CLI::App& cmd, const std::string& message,
                            const std::vector<std::string>& args) {
  for (const CLI::Option* opt : cmd.get_options()) {
    const std::string env = opt->get_envname();
    const std::string flag = opt->get_name();
    if (env.empty() || flag.empty() || std::getenv(env.c_str()) == nullptr) continue;
    if (message.find(flag + " ") == std::string::npos &&
        message.find(flag + ":") == std::string::npos) {
      continue;
    }
    bool on_command_line = false;
    for (const std::string& a : args) {
      on_command_line = on_command_line || a == flag || a.rfind(flag + "=", 0) == 0;
    }
    if (!on_command_line) return " (the value comes from the environment variable " + env + ")";
  }
  return "";
}

}  // namespace tg::cli
