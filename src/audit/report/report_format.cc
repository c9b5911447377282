// SARIF levels: error -> "error", warning -> "warning", info -> "note" (SARIF has no "info").
// JUnit has no schema of its own; the structure follows the de-facto Ant/Jenkins form that CI
// systems read (testsuites > testsuite > testcase with failure/skipped/system-out).
#include "audit/report/report_format.h"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <unistd.h>

#include <algorithm>
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
// yaml-cpp's tree costs about 500 bytes a node, 50 MB for 9000 short entries. The root must be a
// mapping of one 'suppressions' list without anchors or aliases; anything else at that level
// stops the parse, and the caller reads the file through the tree, whose checks name the fault.
// A faulty entry gets the message the tree reader (ReadEntry) gives it, in the same order of
// checks: the first faulty entry in the list is reported.
class SuppressionEvents : public YAML::EventHandler {
 public:
  SuppressionEvents(std::vector<Suppression>* out, const std::string& source)
      : out_(out), source_(source) {}
  // Whether the root had the expected shape (else the tree reader decides).
  bool plain() const { return list_seen_ && level_ == kOutside; }
  // The first faulty entry's message; "" when every entry is valid.
  const std::string& fault() const { return fault_; }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Node(mark, anchor, kNull, nullptr);
  }
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { throw Unplain{}; }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    Node(mark, anchor, kScalar, &value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor, kSequence);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor, kMap);
  }
  void OnMapEnd() override { Close(); }

  struct Unplain {};

 private:
  enum Level { kOutside, kRoot, kList, kEntry };
  enum Kind { kNull, kScalar, kSequence, kMap };
  struct Field {
    std::string key;
    YAML::Mark key_mark;
    Kind kind = kNull;
    std::string scalar;
    YAML::Mark mark;
  };

  std::string Where(const YAML::Mark& m) const {
    if (m.is_null()) return source_;
    return fmt::format("{}:{}:{}", source_, m.line + 1, m.column + 1);
  }
  // As the tree reader describes a value: null, a sequence, a mapping or the quoted scalar.
  static std::string Describe(Kind kind, const std::string& scalar) {
    if (kind == kNull) return "null";
    if (kind == kSequence) return "a sequence";
    if (kind == kMap) return "a mapping";
    return "'" + scalar.substr(0, 80) + (scalar.size() > 80 ? "..." : "") + "'";
  }
  void Fault(std::string message) {
    if (fault_.empty()) fault_ = std::move(message);
  }

  void Node(const YAML::Mark& mark, YAML::anchor_t anchor, Kind kind, const std::string* value) {
    if (anchor != YAML::NullAnchor) throw Unplain{};
    if (skip_ > 0) return;
    if (level_ == kList) {
      Fault(Where(mark) + ": field 'suppressions[]': expected a mapping, found " +
            Describe(kind, value == nullptr ? "" : *value));
      return;
    }
    if (level_ != kRoot && level_ != kEntry) throw Unplain{};
    if (!has_key_) {
      if (value == nullptr || (level_ == kRoot && *value != "suppressions")) throw Unplain{};
      if (level_ == kEntry) fields_.push_back(Field{*value, mark});
      has_key_ = true;
      return;
    }
    has_key_ = false;
    if (level_ == kRoot) throw Unplain{};  // 'suppressions' is not a list
    Field& f = fields_.back();
    f.kind = kind;
    f.scalar = value == nullptr ? "" : *value;
    f.mark = mark;
  }

  void Open(const YAML::Mark& mark, YAML::anchor_t anchor, Kind kind) {
    if (anchor != YAML::NullAnchor) throw Unplain{};
    if (skip_ > 0) {
      ++skip_;
    } else if (level_ == kOutside && kind == kMap) {
      level_ = kRoot;
    } else if (level_ == kRoot && kind == kSequence && has_key_ && !list_seen_) {
      list_seen_ = true;
      has_key_ = false;
      level_ = kList;
    } else if (level_ == kList && kind == kMap) {
      entry_mark_ = mark;
      fields_.clear();
      level_ = kEntry;
    } else if (level_ == kList) {
      Fault(Where(mark) + ": field 'suppressions[]': expected a mapping, found a sequence");
      skip_ = 1;
    } else if (level_ == kEntry && has_key_) {
      has_key_ = false;
      fields_.back().kind = kind;
      fields_.back().mark = mark;
      skip_ = 1;
    } else {
      throw Unplain{};
    }
  }

  void Close() {
    if (skip_ > 0) {
      --skip_;
    } else if (level_ == kEntry) {
      FinishEntry();
      level_ = kList;
    } else if (level_ == kList) {
      level_ = kRoot;
    } else {
      level_ = kOutside;
    }
  }

  const Field* Find(std::string_view key) const {
    for (const Field& f : fields_) {
      if (f.key == key) return &f;
    }
    return nullptr;
  }

  // The checks of ReadEntry, in its order, with its messages.
  std::string EntryFault() const {
    static constexpr std::string_view kKnown[] = {"rule", "reason", "expires", "path"};
    for (std::size_t i = 0; i < 4; ++i) {
      const Field* f = Find(kKnown[i]);
      const std::string field = "suppressions[]." + std::string(kKnown[i]);
      if ((f == nullptr || f->kind == kNull) && i < 2) {
        return Where(entry_mark_) + ": missing required field '" + field + "'";
      }
      if (f != nullptr && (f->kind == kSequence || f->kind == kMap)) {
        return Where(f->mark) + ": field '" + field + "': expected a string, found " +
               Describe(f->kind, f->scalar);
      }
    }
    for (const Field& f : fields_) {
      if (std::find(std::begin(kKnown), std::end(kKnown), f.key) == std::end(kKnown)) {
        return Where(f.key_mark) + ": unknown field 'suppressions[]." + f.key +
               "' (allowed here: expires, path, reason, rule)";
      }
    }
    auto bad = [&](const Field* f, std::string_view expected) {
      return Where(f->mark) + ": field 'suppressions[]." + f->key + "': expected " +
             std::string(expected) + ", found " + Describe(f->kind, f->scalar);
    };
    if (Find("rule")->scalar.empty())
      return bad(Find("rule"), "a rule id such as k8s.image-digest");
    if (Find("reason")->scalar.empty()) return bad(Find("reason"), "a non-empty reason");
    const Field* e = Find("expires");
    if (e != nullptr && !e->scalar.empty() && !IsDate(e->scalar)) {
      return bad(e, "a real calendar date YYYY-MM-DD");
    }
    return "";
  }

  void FinishEntry() {
    if (!fault_.empty()) return;
    if (std::string f = EntryFault(); !f.empty()) {
      fault_ = std::move(f);
      return;
    }
    Suppression s;
    for (Field& f : fields_) {
      std::string* to = f.key == "rule"     ? &s.rule
                        : f.key == "reason" ? &s.reason
                        : f.key == "path"   ? &s.path
                                            : &s.expires;
      *to = std::move(f.scalar);
    }
    s.line = entry_mark_.is_null() ? 0 : entry_mark_.line + 1;
    out_->push_back(std::move(s));
  }

  std::vector<Suppression>* out_;
  const std::string& source_;
  Level level_ = kOutside;
  bool list_seen_ = false;
  bool has_key_ = false;
  int skip_ = 0;  // depth inside a value that is not read (a collection where a scalar belongs)
  YAML::Mark entry_mark_;
  std::vector<Field> fields_;
  std::string fault_;
};

// The entries of a file whose root has the plain shape (or the first faulty entry's error);
// nullopt for any other file.
std::optional<Result<std::vector<Suppression>>> ReadPlainSuppressions(const std::string& text,
                                                                      const std::string& source) {
  std::vector<Suppression> entries;
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    SuppressionEvents events(&entries, source);
    while (parser.HandleNextDocument(events)) {
    }
    if (!events.plain()) return std::nullopt;
    if (!events.fault().empty())
      return Result<std::vector<Suppression>>(Status::InvalidArg(events.fault()));
  } catch (const SuppressionEvents::Unplain&) {
    return std::nullopt;
  } catch (const YAML::Exception&) {
    return std::nullopt;
  }
  return Result<std::vector<Suppression>>(std::move(entries));
}

}  // namespace

std::optional<OutputFormat> ParseOutputFormat(std::string_view s) {
  if (s == "text") return OutputFormat::kText;
  if (s == "json") return OutputFormat::kJson;
  if (s == "sarif") return OutputFormat::kSarif;
  if (s == "junit") return OutputFormat::kJunit;
  return std::nullopt;
}

// Two entries for one rule and path: the second can never change a finding, and the one whose
// reason or expiry wins is only the first by accident of order.
Status CheckDuplicateSuppressions(const Suppressions& s) {
  std::map<std::pair<std::string_view, std::string_view>, int> first;
  for (const Suppression& e : s.entries) {
    auto [it, added] =
        first.emplace(std::pair<std::string_view, std::string_view>(e.rule, e.path), e.line);
    if (added) continue;
    const std::string shown = e.rule.size() > 80 ? e.rule.substr(0, 80) + "..." : e.rule;
    return Status::InvalidArg(fmt::format(
        "{}:{}: field 'rule': found '{}'{} again (first at line {}); required at most one entry "
        "per rule and path",
        s.source, e.line, shown, e.path.empty() ? "" : " with path '" + e.path + "'", it->second));
  }
  return Status::Ok();
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
  if (auto plain = ReadPlainSuppressions(text, source)) {
    if (!plain->ok()) return plain->status();
    Suppressions out;
    out.source = source;
    out.entries = std::move(**plain);
    TG_RETURN_IF_ERROR(CheckDuplicateSuppressions(out));
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
  TG_RETURN_IF_ERROR(CheckDuplicateSuppressions(out));
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
