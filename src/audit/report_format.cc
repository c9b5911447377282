// SARIF levels: error -> "error", warning -> "warning", info -> "note" (SARIF has no "info").
// JUnit has no schema of its own; the structure follows the de-facto Ant/Jenkins form that CI
// systems read (testsuites > testsuite > testcase with failure/skipped/system-out).
#include "audit/report_format.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <unistd.h>

#include <cctype>
#include <ctime>
#include <filesystem>
#include <map>
#include <sstream>

#include "common/config.h"
#include "common/file_util.h"
#include "common/strings.h"
#include "common/yaml_check.h"

namespace tg::audit {
namespace {

using common::Result;
using common::Status;

bool IsDate(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  for (std::size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  const int year = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
  const int month = (s[5] - '0') * 10 + (s[6] - '0');
  const int day = (s[8] - '0') * 10 + (s[9] - '0');
  if (month < 1 || month > 12 || day < 1) return false;
  // A real calendar date: February 30 and April 31 do not exist (Gregorian leap years).
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return day <= kDays[month - 1] + (month == 2 && leap ? 1 : 0);
}

std::string SarifLevel(Severity s) {
  switch (s) {
    case Severity::kError:
      return "error";
    case Severity::kWarning:
      return "warning";
    case Severity::kInfo:
      return "note";
  }
  return "error";
}

// XML text: the one escaper (common/strings.h).
std::string Xml(std::string_view s) { return common::XmlEscape(s); }

// file:// URI of the working directory, '/'-terminated as SARIF requires of a base URI.
std::string SrcRootUri() {
  std::error_code ec;
  std::string cwd = std::filesystem::current_path(ec).string();
  if (ec || cwd.empty()) cwd = "/";
  std::string uri = "file://";
  for (char c : cwd) {
    unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      uri += c;
    } else {
      uri += fmt::format("%{:02X}", u);
    }
  }
  if (uri.back() != '/') uri += '/';
  return uri;
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

std::string Location(const Finding& f) {
  std::string where = f.path.empty() ? "(input)" : f.path;
  if (f.line > 0) where += fmt::format(":{}", f.line);
  if (f.layer >= 0) where += fmt::format(" (layer {})", f.layer);
  return where;
}

// The invocation that reports a truncation: the tool stopped listing results, so its run did not
// succeed in full (executionSuccessful is the one required member).
nlohmann::json SarifInvocations(const FindingCap& cap) {
  nlohmann::json note = {{"level", "error"},
                         {"message", {{"text", cap.Summary()}}},
                         {"descriptor", {{"id", std::string(kTruncatedRule)}}}};
  return nlohmann::json::array(
      {{{"executionSuccessful", false},
        {"toolExecutionNotifications", nlohmann::json::array({std::move(note)})}}});
}

constexpr std::size_t kMaxSuppressions = 10000;

// Occurrences of a "rule" key ("rule:" not preceded by a letter, digit, '_' or '-'): an upper
// bound on the entries, found without parsing.
std::size_t CountRuleKeys(std::string_view text) {
  std::size_t n = 0;
  for (std::size_t p = text.find("rule:"); p != std::string_view::npos;
       p = text.find("rule:", p + 5)) {
    const unsigned char before = p == 0 ? ' ' : static_cast<unsigned char>(text[p - 1]);
    if (!std::isalnum(before) && before != '_' && before != '-') ++n;
  }
  return n;
}

Status ReadEntry(const YAML::Node& e, const std::string& source, Suppression* s) {
  TG_ASSIGN_OR_RETURN(common::YamlMap m, common::YamlMap::From(e, source, "suppressions[]"));
  TG_RETURN_IF_ERROR(m.Get("rule", &s->rule, true));
  TG_RETURN_IF_ERROR(m.Get("reason", &s->reason, true));
  TG_RETURN_IF_ERROR(m.Get("expires", &s->expires));
  TG_RETURN_IF_ERROR(m.Get("path", &s->path));
  TG_RETURN_IF_ERROR(m.Finish());
  s->line = e.Mark().is_null() ? 0 : e.Mark().line + 1;
  if (s->rule.empty()) return m.FieldError("rule", "a rule id such as k8s.image-digest");
  if (s->reason.empty()) return m.FieldError("reason", "a non-empty reason");
  if (!s->expires.empty() && !IsDate(s->expires)) {
    return m.FieldError("expires", "a real calendar date YYYY-MM-DD");
  }
  return Status::Ok();
}

// Reads a suppressions file from the parser's events, building each Suppression directly:
// yaml-cpp's tree costs about 500 bytes a node, 50 MB for 9000 short entries. Only a file in the
// exact shape of a valid one is read here (a root mapping of one 'suppressions' list of mappings
// of known scalar fields, no anchors or aliases, every entry valid); anything else stops the
// parse, and the caller reads the file through the tree, whose checks name the fault.
class SuppressionEvents : public YAML::EventHandler {
 public:
  explicit SuppressionEvents(std::vector<Suppression>* out) : out_(out) {}
  // Whether every event fit the shape and the list was found.
  bool plain() const { return list_seen_ && level_ == kOutside; }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t anchor) override { Value(anchor, nullptr); }
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { throw Unplain{}; }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    Value(anchor, &value);
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    if (anchor != YAML::NullAnchor || level_ != kRoot || !has_key_ || list_seen_) throw Unplain{};
    list_seen_ = true;
    has_key_ = false;
    level_ = kList;
  }
  void OnSequenceEnd() override { level_ = kRoot; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    if (anchor != YAML::NullAnchor) throw Unplain{};
    if (level_ == kOutside) {
      level_ = kRoot;
    } else if (level_ == kList) {
      entry_ = Suppression{};
      entry_.line = mark.is_null() ? 0 : mark.line + 1;
      level_ = kEntry;
    } else {
      throw Unplain{};
    }
  }
  void OnMapEnd() override {
    if (level_ == kRoot) {
      level_ = kOutside;
      return;
    }
    if (entry_.rule.empty() || entry_.reason.empty() ||
        (!entry_.expires.empty() && !IsDate(entry_.expires))) {
      throw Unplain{};
    }
    out_->push_back(std::move(entry_));
    level_ = kList;
  }

  struct Unplain {};

 private:
  enum Level { kOutside, kRoot, kList, kEntry };

  // A scalar (null when `value` is null): a key, or the value of the key before it.
  void Value(YAML::anchor_t anchor, const std::string* value) {
    if (anchor != YAML::NullAnchor || (level_ != kRoot && level_ != kEntry)) throw Unplain{};
    if (!has_key_) {
      if (value == nullptr) throw Unplain{};
      if (level_ == kRoot ? *value != "suppressions" : Field(*value) == nullptr) throw Unplain{};
      key_ = *value;
      has_key_ = true;
      return;
    }
    has_key_ = false;
    if (level_ == kRoot) throw Unplain{};  // 'suppressions' is not a list
    if (value != nullptr) *Field(key_) = *value;
  }

  std::string* Field(const std::string& key) {
    if (key == "rule") return &entry_.rule;
    if (key == "reason") return &entry_.reason;
    if (key == "expires") return &entry_.expires;
    if (key == "path") return &entry_.path;
    return nullptr;
  }

  std::vector<Suppression>* out_;
  Level level_ = kOutside;
  bool list_seen_ = false;
  bool has_key_ = false;
  std::string key_;
  Suppression entry_;
};

// The entries of a file in the plain shape SuppressionEvents reads; nullopt for any other file.
std::optional<std::vector<Suppression>> ReadPlainSuppressions(const std::string& text) {
  std::vector<Suppression> entries;
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    SuppressionEvents events(&entries);
    while (parser.HandleNextDocument(events)) {
    }
    if (!events.plain()) return std::nullopt;
  } catch (const SuppressionEvents::Unplain&) {
    return std::nullopt;
  } catch (const YAML::Exception&) {
    return std::nullopt;
  }
  return entries;
}

}  // namespace

std::optional<OutputFormat> ParseOutputFormat(std::string_view s) {
  if (s == "text") return OutputFormat::kText;
  if (s == "json") return OutputFormat::kJson;
  if (s == "sarif") return OutputFormat::kSarif;
  if (s == "junit") return OutputFormat::kJunit;
  return std::nullopt;
}

Result<Suppressions> ParseSuppressions(const std::string& text, const std::string& source) {
  // Counted on the text before YAML builds a node tree (each entry costs several nodes).
  const std::size_t rules = CountRuleKeys(text);
  if (rules > kMaxSuppressions) {
    return Status::InvalidArg(
        fmt::format("{}: {} suppression entries ('rule:' keys); at most {} are read", source, rules,
                    kMaxSuppressions));
  }
  TG_RETURN_IF_ERROR(common::CheckYamlDocument(text, source));
  if (auto plain = ReadPlainSuppressions(text)) {
    Suppressions out;
    out.source = source;
    out.entries = std::move(*plain);
    return out;
  }
  // Not in the plain shape: the tree's checks name what is wrong (or what is merely unusual, such
  // as an alias, is read as before).
  TG_ASSIGN_OR_RETURN(YAML::Node root, common::ParseYaml(text, source));
  TG_ASSIGN_OR_RETURN(common::YamlMap top, common::YamlMap::From(root, source, ""));
  TG_ASSIGN_OR_RETURN(YAML::Node list, top.GetSequence("suppressions", true));
  TG_RETURN_IF_ERROR(top.Finish());
  Suppressions out;
  out.source = source;
  for (const auto& e : list) {
    Suppression s;
    TG_RETURN_IF_ERROR(ReadEntry(e, source, &s));
    out.entries.push_back(std::move(s));
  }
  return out;
}

Result<Suppressions> LoadSuppressions(const std::string& path) {
  TG_ASSIGN_OR_RETURN(std::string text, common::ReadFileLimited(path, common::kMaxConfigBytes));
  return ParseSuppressions(text, path);
}

std::string TodayUtc() { return common::UtcNow("%Y-%m-%d"); }

void ApplySuppressions(const Suppressions& s, std::string_view today, Finding* finding) {
  Finding& f = *finding;
  if (f.rule == kTruncatedRule) return;
  for (const Suppression& e : s.entries) {
    if (e.rule != f.rule) continue;
    if (!e.path.empty() && f.path.find(e.path) == std::string::npos) continue;
    // ISO dates compare as strings; the suppression holds through its expiry day.
    if (!e.expires.empty() && std::string_view(e.expires) < today) {
      f.suppression = fmt::format("suppression at {}:{} expired on {} and no longer applies",
                                  s.source, e.line, e.expires);
      continue;
    }
    f.suppressed = true;
    f.suppression = fmt::format("{} ({}:{}{})", e.reason, s.source, e.line,
                                e.expires.empty() ? "" : ", until " + e.expires);
    break;
  }
}

void ApplySuppressions(const Suppressions& s, std::string_view today,
                       std::vector<Finding>* findings) {
  for (Finding& f : *findings) ApplySuppressions(s, today, &f);
}

bool GateFails(const std::vector<Finding>& findings, Severity fail_on) {
  for (const auto& f : findings) {
    if (!f.suppressed && static_cast<int>(f.severity) >= static_cast<int>(fail_on)) return true;
  }
  return false;
}

namespace {

// The rules every result refers to by index: one reportingDescriptor per rule id, in the order
// the ids first appear.
struct SarifRules {
  std::map<std::string, int> index;
  nlohmann::json rules = nlohmann::json::array();
};

SarifRules CollectSarifRules(const FindingsView& findings) {
  SarifRules out;
  for (std::size_t i = 0; i < findings.size; ++i) {
    const Finding& f = findings.at(i);
    auto [it, added] = out.index.emplace(f.rule, static_cast<int>(out.rules.size()));
    if (!added) continue;
    // Code-scanning UIs show `help` beside each result: the fix, and where the rule is described.
    std::string help =
        (f.fix.empty() ? "" : "Fix: " + f.fix + ". ") + "Rule " + f.rule +
        " is described in truegreen's " +
        (f.rule.rfind("image.", 0) == 0 ? "docs/AUDIT_IMAGE.md" : "docs/AUDIT_CONFIG.md") + ".";
    out.rules.push_back({{"id", f.rule},
                         {"shortDescription", {{"text", f.rule}}},
                         {"help", {{"text", help}}},
                         {"defaultConfiguration", {{"level", SarifLevel(f.severity)}}}});
  }
  return out;
}

nlohmann::json SarifResult(const Finding& f, int rule_index) {
  using nlohmann::json;
  json r = {{"ruleId", f.rule},
            {"ruleIndex", rule_index},
            {"level", SarifLevel(f.severity)},
            {"message", {{"text", f.message + (f.fix.empty() ? "" : " Fix: " + f.fix)}}}};
  if (!f.path.empty()) {
    // Relative paths are relative to the directory the command ran in (%SRCROOT%).
    json loc = {{"uri", f.path}};
    if (f.path[0] != '/') loc["uriBaseId"] = "%SRCROOT%";
    json phys = {{"artifactLocation", std::move(loc)}};
    if (f.line > 0) phys["region"] = {{"startLine", f.line}};
    r["locations"] = json::array({{{"physicalLocation", phys}}});
  }
  json props = json::object();
  if (f.layer >= 0) props["layer"] = f.layer;
  if (f.bytes > 0) props["bytes"] = f.bytes;
  if (!f.suppression.empty() && !f.suppressed) props["suppressionNote"] = f.suppression;
  if (!props.empty()) r["properties"] = props;
  if (f.suppressed) {
    r["suppressions"] = json::array(
        {{{"kind", "external"}, {"status", "accepted"}, {"justification", f.suppression}}});
  }
  return r;
}

// The log with an empty results array (the rules moved into it).
nlohmann::json SarifHead(SarifRules* rules, std::string_view command, std::string_view version,
                         const FindingCap* cap) {
  using nlohmann::json;
  json driver = {
      {"name", "truegreen"}, {"version", std::string(version)}, {"rules", std::move(rules->rules)}};
  json run = {{"tool", {{"driver", std::move(driver)}}},
              {"automationDetails", {{"id", std::string(command) + "/"}}},
              {"originalUriBaseIds", {{"%SRCROOT%", {{"uri", SrcRootUri()}}}}},
              {"results", json::array()}};
  if (cap != nullptr && cap->truncated()) run["invocations"] = SarifInvocations(*cap);
  return {{"$schema",
           "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/"
           "sarif-schema-2.1.0.json"},
          {"version", "2.1.0"},
          {"runs", json::array({std::move(run)})}};
}

// One testcase; counts it into *failures or *skipped.
std::string JunitCase(const Finding& f, Severity fail_on, int* failures, int* skipped) {
  std::string name = Xml(f.rule + " " + Location(f));
  std::string body;
  if (f.suppressed) {
    ++*skipped;
    body = fmt::format("      <skipped message=\"{}\"/>\n", Xml("suppressed: " + f.suppression));
  } else if (static_cast<int>(f.severity) >= static_cast<int>(fail_on)) {
    ++*failures;
    body = fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n",
                       SeverityName(f.severity), Xml(f.message),
                       Xml(f.fix.empty() ? f.message : "fix: " + f.fix));
  } else {
    body = fmt::format("      <system-out>{}: {}</system-out>\n", SeverityName(f.severity),
                       Xml(f.message));
  }
  return fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"0\">\n{}    </testcase>\n",
                     Xml(f.rule), name, body);
}

std::string JunitNoFindings(std::string_view command) {
  return fmt::format("    <testcase classname=\"{}\" name=\"no findings\" time=\"0\"/>\n",
                     Xml(command));
}

// Everything before the testcases. junit-10.xsd (Jenkins xUnit) allows no `skipped` on
// <testsuites>; Apache Ant's schema requires time/timestamp/hostname/package/id on <testsuite>
// and time on <testcase>: both are met.
std::string JunitHead(int tests, int failures, int skipped, std::string_view command) {
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<testsuites name=\"truegreen\" tests=\"{0}\" failures=\"{1}\" errors=\"0\" time=\"0\">\n"
      "  <testsuite name=\"{3}\" tests=\"{0}\" failures=\"{1}\" errors=\"0\" skipped=\"{2}\" "
      "time=\"0\" timestamp=\"{4}\" hostname=\"{5}\" package=\"truegreen\" id=\"0\">\n"
      "    <properties/>\n",
      tests, failures, skipped, Xml(command), common::UtcNow("%Y-%m-%dT%H:%M:%S"), Xml(HostName()));
}

constexpr std::string_view kJunitTail =
    "    <system-out/>\n    <system-err/>\n  </testsuite>\n</testsuites>\n";

}  // namespace

FindingsView ViewOf(const std::vector<Finding>& findings) {
  return {findings.size(), [&findings](std::size_t i) -> const Finding& { return findings[i]; }};
}

bool GateFails(const FindingsView& findings, Severity fail_on) {
  for (std::size_t i = 0; i < findings.size; ++i) {
    const Finding& f = findings.at(i);
    if (!f.suppressed && static_cast<int>(f.severity) >= static_cast<int>(fail_on)) return true;
  }
  return false;
}

nlohmann::json ToSarif(const std::vector<Finding>& findings, std::string_view command,
                       std::string_view version, const FindingCap* cap) {
  SarifRules rules = CollectSarifRules(ViewOf(findings));
  nlohmann::json results = nlohmann::json::array();
  for (const Finding& f : findings) results.push_back(SarifResult(f, rules.index.at(f.rule)));
  nlohmann::json log = SarifHead(&rules, command, version, cap);
  log["runs"][0]["results"] = std::move(results);
  return log;
}

void WriteSarif(const common::TextSink& sink, const FindingsView& findings,
                std::string_view command, std::string_view version, const FindingCap* cap) {
  SarifRules rules = CollectSarifRules(findings);
  const nlohmann::json head = SarifHead(&rules, command, version, cap);
  common::WriteJsonStreamed(
      sink, head, {"runs", "0", "results"}, findings.size,
      [&](std::size_t i) {
        const Finding& f = findings.at(i);
        return SarifResult(f, rules.index.at(f.rule));
      },
      2);
  sink("\n");
}

std::string ToJunit(const std::vector<Finding>& findings, std::string_view command,
                    Severity fail_on) {
  int failures = 0, skipped = 0;
  std::string cases;
  for (const Finding& f : findings) cases += JunitCase(f, fail_on, &failures, &skipped);
  int tests = static_cast<int>(findings.size());
  if (findings.empty()) {
    tests = 1;
    cases = JunitNoFindings(command);
  }
  return JunitHead(tests, failures, skipped, command) + cases + std::string(kJunitTail);
}

void WriteJunit(const common::TextSink& sink, const FindingsView& findings,
                std::string_view command, Severity fail_on) {
  // The counts lead the document: one pass to count, one to write.
  int failures = 0, skipped = 0;
  for (std::size_t i = 0; i < findings.size; ++i) {
    const Finding& f = findings.at(i);
    if (f.suppressed) {
      ++skipped;
    } else if (static_cast<int>(f.severity) >= static_cast<int>(fail_on)) {
      ++failures;
    }
  }
  const int tests = findings.size == 0 ? 1 : static_cast<int>(findings.size);
  sink(JunitHead(tests, failures, skipped, command));
  int ignored_failures = 0, ignored_skipped = 0;
  for (std::size_t i = 0; i < findings.size; ++i) {
    sink(JunitCase(findings.at(i), fail_on, &ignored_failures, &ignored_skipped));
  }
  if (findings.size == 0) sink(JunitNoFindings(command));
  sink(kJunitTail);
}

void WriteFindingsText(const common::TextSink& sink, const FindingsView& findings) {
  for (std::size_t i = 0; i < findings.size; ++i) sink(RenderFindingText(findings.at(i)));
}

}  // namespace tg::audit
