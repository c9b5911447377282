#include "cli/option_checks.h"

#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <optional>
#include <sstream>
#include <string>

#include "audit/report/byte_size.h"
#include "audit/report/finding.h"
#include "audit/report/finding_cap.h"
#include "common/file_util.h"
#include "common/strings.h"
#include "server/serve_config.h"

namespace tg::cli {
namespace {

// The documented range of one number option. `command` is the command path as `truegreen help`
// takes it ("k8s render"), empty for a global option.
struct OptionRange {
  const char* command;
  const char* flag;
  long double lo, hi;
  bool lo_open;      // lo itself is excluded (a positive quantity)
  const char* unit;  // what the number counts, for the message and --help
};

constexpr long double kU64Max = 18446744073709551615.0L;

// Every number option of every command but serve, whose ranges live with the server
// (server::ServeOptionRanges, which ValidateServeConfig checks again). A command adds its own
// checks after these (the holes inside a range, such as --canary-size 1..255);
// tests/hostile_cli_test.cc holds that every number option in the CLI tree has a range.
constexpr OptionRange kRanges[] = {
    {"doctor", "--canary-timeout-ms", 100, 3600000, false, "ms"},
    {"run", "--runs", 1, 1000000, false, "runs"},
    {"run", "--min-time", 0, 3600, false, "seconds"},
    {"run", "--warmup", 0, 1000000, false, "runs"},
    {"run", "--max-p99-ms", 0, 3600000, true, "ms"},
    {"tokenize", "--max-length", 2, 4096, false, "tokens"},
    {"schedule", "--steps", 1, 1000, false, "steps"},
    {"generate", "--steps", 1, 1000, false, "steps"},
    {"generate", "--guidance", 0, 100, false, "(guidance scale)"},
    {"generate", "--batch", 1, 8, false, "images"},
    {"generate", "--seed", 0, kU64Max, false, "(seed)"},
    {"generate", "--memory-budget", 0, 1125899906842624.0L, false, "bytes (a SIZE such as 2GiB)"},
    {"audit image", "--budget", 1, 1125899906842624.0L, false, "bytes (a SIZE such as 2GiB)"},
    {"audit image", "--max-findings", audit::kMinMaxFindings, audit::kMaxMaxFindings, false,
     "findings"},
    {"audit dockerfile", "--max-findings", audit::kMinMaxFindings, audit::kMaxMaxFindings, false,
     "findings"},
    {"audit k8s", "--max-findings", audit::kMinMaxFindings, audit::kMaxMaxFindings, false,
     "findings"},
    {"logscan", "--max-findings", audit::kMinMaxFindings, audit::kMaxMaxFindings, false,
     "findings"},
    {"k8s render", "--port", 1, 65535, false, "(TCP port)"},
    {"k8s render", "--min-replicas", 1, 1000, false, "replicas"},
    {"k8s render", "--max-replicas", 1, 1000, false, "replicas"},
    {"k8s render", "--target-queue-depth", 1, 100000, false, "requests"},
    {"k8s render", "--gpu-util-floor", 0, 1, false, "(fraction)"},
    {"k8s promote", "--request-timeout", 0.1L, 600, false, "seconds"},
    {"k8s wait-ready", "--timeout-s", 0, 86400, false, "seconds"},
    {"k8s wait-ready", "--interval-s", 0.05L, 600, false, "seconds"},
    {"k8s wait-ready", "--request-timeout", 0.1L, 600, false, "seconds"},
    {"bench", "--rate", 0, 1000000, false, "requests/s (0 = closed loop)"},
    {"bench", "--warmup", 0, 3600, false, "seconds"},
    {"bench", "--window", 0, 86400, true, "seconds"},
    {"bench", "--max-trials", 1, 1000, false, "windows"},
    {"bench", "--stability", 0, 100, true, "percent"},
    {"bench", "--timeout", 0, 3600, true, "seconds"},
    {"bench", "--threads", 1, 256, false, "threads"},
    {"bench", "--metrics-interval", 0, 3600, false, "seconds (0 = off)"},
};

// Options whose value is a list of numbers (typed TEXT, parsed by the command): the range of each
// element as the command's parser enforces it, shown in --help like a number option's range.
// tests/hostile_cli_test.cc checks each entry against the parser's refusal just past it.
struct ListRange {
  const char* command;
  const char* flag;
  const char* range;
};
constexpr ListRange kListRanges[] = {
    {"bench", "--concurrency", "each 1..100000 connections, no value twice"},
    {"bench", "--batch", "each 1..100000 images, no value twice"},
    {"bench", "--steps", "each 1..100000 steps, no value twice"},
    {"bench", "--size", "each side 1..16384 pixels, no size twice"},
    {"run", "--shape", "each dimension 1..16777216, no name twice"},
    {"engines build", "--shapes", "each dimension 1..16777216, no name twice"},
};

std::string Number(long double v) {
  if (v >= 0 && v <= kU64Max && v == std::floor(v)) {
    return std::to_string(static_cast<unsigned long long>(v));
  }
  std::ostringstream s;
  s << std::setprecision(15) << static_cast<double>(v);
  return s.str();
}

std::string RangeText(const OptionRange& r) {
  std::string unit = r.unit;
  unit = unit.empty() ? "" : " " + unit;
  if (r.lo_open) return "more than " + Number(r.lo) + ", at most " + Number(r.hi) + unit;
  return Number(r.lo) + ".." + Number(r.hi) + unit;
}

std::string CommandPath(const CLI::App* app) {
  std::string path;
  for (const CLI::App* a = app; a != nullptr && a->get_parent() != nullptr; a = a->get_parent()) {
    path = path.empty() ? a->get_name() : a->get_name() + " " + path;
  }
  return path;
}

std::optional<OptionRange> FindRange(const CLI::App* app, const CLI::Option* opt) {
  const std::string path = CommandPath(app);
  if (path == "serve") {
    const server::ServeOptionRange* s = server::FindServeOptionRange(opt->get_name());
    if (s == nullptr) return std::nullopt;
    return OptionRange{"serve", s->flag, s->lo, s->hi, false, s->unit};
  }
  for (const OptionRange& r : kRanges) {
    if (path == r.command && opt->get_name() == r.flag) return r;
  }
  return std::nullopt;
}

// " is not ..." reasons, all naming the value as given and the option's range, so the first
// check to fail (this one runs before any the command added) says everything.
std::string CheckText(const std::string& text, const OptionRange& r, bool is_size) {
  const std::string given = "'" + text + "'";
  const std::string range = "; allowed: " + RangeText(r);
  // Empty text would otherwise become 0 or the default: a value the user did not write.
  if (text.empty()) return "an empty value is not a number" + range;
  if (std::isspace(static_cast<unsigned char>(text.front())) != 0 ||
      std::isspace(static_cast<unsigned char>(text.back())) != 0) {
    return given + " has spaces around the number" + range;
  }
  long double v = 0;
  if (is_size) {
    auto b = audit::ParseByteSizeOrError(text);
    if (!b.ok()) return b.status().message() + range;  // names the text as given
    v = static_cast<long double>(*b);
  } else {
    char* end = nullptr;
    errno = 0;
    v = std::strtold(text.c_str(), &end);
    // Text that is no number at all is left to CLI11, which names the type it wanted.
    if (end != text.c_str() + text.size()) return "";
    if (std::isnan(v)) return given + " is not a number (NaN is refused)" + range;
    if (std::isinf(v)) return given + " is infinite" + range;
    const bool integer = text.find_first_of(".eEpP") == std::string::npos ||
                         text.rfind("0x", 0) == 0 || text.rfind("0X", 0) == 0;
    if (integer && std::fabs(v) > kU64Max) {
      return given + " overflows a 64-bit integer" + range;
    }
  }
  if (v < r.lo || v > r.hi || (r.lo_open && v == r.lo)) {
    return given + " is outside the range of this option" + range;
  }
  return "";
}

// The type as declared, before CLI11 appends validator descriptions ("FLOAT:POSITIVE").
std::string BaseType(const CLI::Option* opt) {
  const std::string full = opt->get_type_name();
  return full.substr(0, full.find(':'));
}

bool IsNumberType(const std::string& type) {
  static const char* const kNumberTypes[] = {"FLOAT",   "INT", "UINT",     "N",
                                             "SECONDS", "MS",  "FRACTION", "SIZE"};
  for (const char* t : kNumberTypes) {
    if (type == t) return true;
  }
  return false;
}

// A placeholder naming a file or folder: FILE, DIR, FILE|DIR, FILE|-, FILE FILE, FILE|-|off.
bool IsPathType(const std::string& type) {
  std::string token;
  for (char c : type + "|") {
    if (c == '|' || c == ' ') {
      if (token == "FILE" || token == "DIR") return true;
      token.clear();
    } else {
      token += c;
    }
  }
  return false;
}

std::string CheckPathLength(const std::string& text) {
  if (text.size() < PATH_MAX) return "";
  return "a path of " + std::to_string(text.size()) + " bytes is longer than the system allows (" +
         std::to_string(PATH_MAX - 1) + " bytes, PATH_MAX)";
}

// DIR options that name a folder the command writes (created, or checked by the command with
// its own message); every other DIR option names a folder the command reads.
constexpr const char* kWrittenDirFlags[] = {"--ab-out", "--canary-cache-dir", "--save-outputs"};

bool IsWrittenDir(const CLI::Option* opt) {
  for (const char* flag : kWrittenDirFlags) {
    if (opt->get_name() == flag) return true;
  }
  return false;
}

std::string CheckBoolean(const std::string& text) {
  const std::string lower = common::Lower(text);
  for (const char* ok : {"true", "false", "1", "0", "yes", "no", "on", "off"}) {
    if (lower == ok) return "";
  }
  return "'" + text + "' is not a boolean; allowed: true, false, 1, 0, yes, no, on, off";
}

void AddOptionChecks(CLI::App* app, CLI::Option* opt) {
  // Options whose empty (or blank) value would silently mean the default instead of what was
  // written.
  const std::string& name = opt->get_name();
  if (name == "--policy" || name == "--scheduler" || name == "--host") {
    opt->check(CLI::Validator(
        [](std::string& s) {
          return common::Trim(s).empty() ? std::string("an empty value names nothing") : "";
        },
        ""));
  }
  const std::string type = BaseType(opt);
  if (IsPathType(type)) {
    opt->transform(CLI::Validator(
        [](std::string& s) {
          return s.empty() ? std::string("an empty value names nothing") : CheckPathLength(s);
        },
        ""));
  }
  if (type == "BOOLEAN") {
    // CLI11 reads any integer as a boolean and "" as false: a typo would flip a gate.
    opt->transform(CLI::Validator([](std::string& s) { return CheckBoolean(s); }, ""));
  }
  if (!IsNumberType(type)) {
    const std::string path = CommandPath(app);
    for (const ListRange& l : kListRanges) {
      if (path == l.command && opt->get_name() == l.flag) {
        opt->description(opt->get_description() + " (range " + l.range + ")");
      }
    }
    return;
  }
  const std::optional<OptionRange> range = FindRange(app, opt);
  // An option missing from kRanges keeps the generic bound; the CLI-tree test names it.
  static constexpr OptionRange kGeneric{
      "", "", -kMaxOptionMagnitude, kMaxOptionMagnitude, false, "(the bound of any number option)"};
  const OptionRange r = range ? *range : kGeneric;
  if (range) opt->description(opt->get_description() + " (range " + RangeText(r) + ")");
  const bool is_size = type == "SIZE";
  // transform(), not check(): it runs before the command's own validators, whose messages
  // ("Value inf not in range 0.000000 to 1.797693e+308") name neither the flag's real range nor
  // the value as given.
  opt->transform(
      CLI::Validator([r, is_size](std::string& s) { return CheckText(s, r, is_size); }, ""));
}

void AddChecks(CLI::App* app) {
  for (CLI::Option* opt : app->get_options()) AddOptionChecks(app, opt);
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) AddChecks(sub);
}

}  // namespace

void AddNumberChecks(CLI::App* app) { AddChecks(app); }

common::Status CheckInputFolders(const CLI::App& app, const std::vector<std::string>& args) {
  // The global options, then those of each selected command down to the leaf.
  for (const CLI::App* cmd = &app; cmd != nullptr;) {
    for (const CLI::Option* opt : cmd->get_options()) {
      if (BaseType(opt) != "DIR" || IsWrittenDir(opt) || opt->count() == 0) continue;
      for (const std::string& value : opt->results()) {
        common::Status st = common::CheckInputPath(value, opt->get_name(), /*dir=*/true);
        if (!st.ok()) {
          return common::Status(st.code(),
                                st.message() + EnvironmentNote(*cmd, opt->get_name() + " ", args));
        }
      }
    }
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : cmd->get_subcommands()) next = sub;
    cmd = next;
  }
  return common::Status::Ok();
}

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

std::vector<std::string> ProcessArgs() {
  std::vector<std::string> args;
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string arg;
  for (bool first = true; std::getline(in, arg, '\0'); first = false) {
    if (!first) args.push_back(arg);
  }
  return args;
}

}  // namespace tg::cli
