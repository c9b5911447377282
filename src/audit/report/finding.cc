// Finding rendering and the byte-size helpers shared by the audit commands.
#include "audit/report/finding.h"

#include "audit/report/byte_size.h"
#include "common/strings.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace tg::audit {

Finding MakeImageFinding(std::string rule, Severity severity, std::string path, int layer,
                         std::uint64_t bytes, std::string message, std::string fix) {
  Finding f;
  f.rule = std::move(rule);
  f.severity = severity;
  f.path = std::move(path);
  f.layer = layer;
  f.bytes = bytes;
  f.message = std::move(message);
  f.fix = std::move(fix);
  return f;
}

std::string_view SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kError:
      return "error";
  }
  return "error";
}

std::optional<Severity> ParseSeverity(std::string_view s) {
  if (s == "info") return Severity::kInfo;
  if (s == "warning") return Severity::kWarning;
  if (s == "error") return Severity::kError;
  return std::nullopt;
}

bool AnyAtLeast(const std::vector<Finding>& findings, Severity fail_at) {
  for (const auto& f : findings) {
    if (static_cast<int>(f.severity) >= static_cast<int>(fail_at)) return true;
  }
  return false;
}

nlohmann::json FindingToJson(const Finding& f) {
  nlohmann::json j;
  j["rule"] = f.rule;
  j["severity"] = std::string(SeverityName(f.severity));
  if (!f.path.empty()) j["path"] = f.path;
  if (f.layer >= 0) j["layer"] = f.layer;
  if (f.line > 0) j["line"] = f.line;
  if (f.bytes > 0) j["bytes"] = f.bytes;
  j["message"] = f.message;
  if (!f.fix.empty()) j["fix"] = f.fix;
  if (f.suppressed) j["suppressed"] = true;
  if (!f.suppression.empty()) j["suppression"] = f.suppression;
  return j;
}

nlohmann::json FindingsToJson(const std::vector<Finding>& findings) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& f : findings) arr.push_back(FindingToJson(f));
  return arr;
}

std::string RenderFindingText(const Finding& f) {
  std::string where = f.path;
  std::string extra;
  if (f.layer >= 0) extra += fmt::format("layer {}", f.layer);
  if (f.line > 0) extra += fmt::format("{}line {}", extra.empty() ? "" : ", ", f.line);
  if (f.bytes > 0) extra += fmt::format("{}{}", extra.empty() ? "" : ", ", HumanBytes(f.bytes));
  if (!extra.empty()) where += (where.empty() ? "(" : " (") + extra + ")";
  std::string out = fmt::format("{:<8}{}  {}{}\n", SeverityName(f.severity), f.rule, where,
                                f.suppressed ? "  [suppressed]" : "");
  out += fmt::format("        {}\n", f.message);
  if (!f.fix.empty()) out += fmt::format("        fix: {}\n", f.fix);
  if (!f.suppression.empty()) {
    out += fmt::format("        {}: {}\n", f.suppressed ? "suppressed" : "note", f.suppression);
  }
  return out;
}

std::string RenderFindingsText(const std::vector<Finding>& findings) {
  std::string out;
  for (const auto& f : findings) out += RenderFindingText(f);
  return out;
}

std::string HumanBytes(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, kUnits[u]);
}

common::Result<std::uint64_t> ParseByteSizeOrError(std::string_view text) {
  const std::string shown =
      "'" + std::string(text.substr(0, 80)) + (text.size() > 80 ? "...'" : "'");
  const auto not_a_size = [&] {
    return common::Status::InvalidArg(shown + " is not a size such as 2GiB, 500MB or 1048576");
  };
  std::string s;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) s.push_back(c);
  }
  if (s.empty()) return not_a_size();
  std::size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) return not_a_size();
  std::string num = s.substr(0, i);
  const std::string unit = common::Lower(s.substr(i));
  char* end = nullptr;
  double v = std::strtod(num.c_str(), &end);
  if (end == nullptr || *end != '\0' || !std::isfinite(v) || v < 0) return not_a_size();
  static constexpr std::pair<std::string_view, double> kUnitsBySuffix[] = {
      {"", 1},         {"b", 1},       {"k", 0x1p10},   {"ki", 0x1p10},  {"kib", 0x1p10},
      {"m", 0x1p20},   {"mi", 0x1p20}, {"mib", 0x1p20}, {"g", 0x1p30},   {"gi", 0x1p30},
      {"gib", 0x1p30}, {"t", 0x1p40},  {"ti", 0x1p40},  {"tib", 0x1p40}, {"kb", 1e3},
      {"mb", 1e6},     {"gb", 1e9},    {"tb", 1e12}};
  double mult = 0;
  for (const auto& [suffix, m] : kUnitsBySuffix) {
    if (unit == suffix) mult = m;
  }
  if (mult == 0) return not_a_size();
  // 2^64 is exactly representable; below it a double has no fraction left to round up to it, so
  // the conversion after this check is defined.
  const double r = std::round(v * mult);
  if (!(r < 0x1p64)) {
    return common::Status::InvalidArg(
        fmt::format("{} is {:.4g} bytes, more than the largest size, {} bytes (16 EiB)", shown, r,
                    kMaxByteSize));
  }
  return static_cast<std::uint64_t>(r);
}

std::optional<std::uint64_t> ParseByteSize(std::string_view text) {
  auto v = ParseByteSizeOrError(text);
  if (!v.ok()) return std::nullopt;
  return *v;
}

}  // namespace tg::audit
