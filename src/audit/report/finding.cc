// Finding rendering and the byte-size helpers shared by the audit commands.
#include "audit/report/finding.h"

#include "audit/report/byte_size.h"

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

std::optional<std::uint64_t> ParseByteSize(std::string_view text) {
  auto v = ParseByteSizeOrError(text);
  if (!v.ok()) return std::nullopt;
  return *v;
}

}  // namespace tg::audit
