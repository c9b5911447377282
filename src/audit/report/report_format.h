// Output formats, the severity gate and suppressions shared by every `truegreen audit` command and
// by `logscan`: text and JSON (the commands' own), SARIF 2.1.0 (code scanning) and JUnit XML (CI
// test reports).
//
// Suppressions: a YAML file
//   suppressions:
//     - rule: k8s.image-digest          # required: a rule id
//       reason: dev cluster pulls tags  # required: why
//       expires: 2026-12-31             # optional: after this day (UTC) it no longer applies
//       path: deploy/dev/               # optional: only findings whose path contains this
// A suppressed finding stays in every output, marked suppressed with its reason (SARIF
// `suppressions`, JUnit `skipped`); it does not count for the gate. An expired suppression
// suppresses nothing and the finding says so.
//
// Failure behaviour: LoadSuppressions returns INVALID_ARG "<file>:<line>:<col>: ..." naming the
// field. Rendering never fails. Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/report/finding.h"
#include "audit/report/finding_cap.h"
#include "common/json_stream.h"
#include "common/status.h"

namespace tg::audit {

// Read access to a report's findings however the command holds them (Finding, K8sFinding), so
// the writers below stream them without a copy. `at(i)` for i < size must stay valid while used.
struct FindingsView {
  std::size_t size = 0;
  std::function<const Finding&(std::size_t)> at;
};
FindingsView ViewOf(const std::vector<Finding>& findings);

enum class OutputFormat { kText, kJson, kSarif, kJunit };
// "text" | "json" | "sarif" | "junit"; nullopt otherwise.
std::optional<OutputFormat> ParseOutputFormat(std::string_view s);

struct Suppression {
  std::string rule;
  std::string reason;
  std::string expires;  // "YYYY-MM-DD", "" = never
  std::string path;     // substring of the finding's path, "" = any
  int line = 0;         // line in the suppression file
};

struct Suppressions {
  std::string source;
  std::vector<Suppression> entries;
};

// Reads (size-capped) and parses a suppression file; ParseSuppressions parses text whose
// messages name `source`. Errors: NOT_FOUND, INVALID_ARG as the file comment says.
common::Result<Suppressions> LoadSuppressions(const std::string& path);
common::Result<Suppressions> ParseSuppressions(const std::string& text, const std::string& source);

// Today's date in UTC, "YYYY-MM-DD".
std::string TodayUtc();

// Marks matching findings suppressed (or notes an expired suppression on them). The truncation
// finding (kTruncatedRule) is never suppressed.
void ApplySuppressions(const Suppressions& s, std::string_view today,
                       std::vector<Finding>* findings);
void ApplySuppressions(const Suppressions& s, std::string_view today, Finding* finding);

// True when an unsuppressed finding has severity >= fail_on.
bool GateFails(const std::vector<Finding>& findings, Severity fail_on);
bool GateFails(const FindingsView& findings, Severity fail_on);

// A SARIF 2.1.0 log with one run. `command` ("audit k8s") names the automation; every rule id seen
// becomes a reportingDescriptor. When `cap` says findings were not listed, the run also has an
// invocation whose toolExecutionNotifications hold an error notification saying so (SARIF 2.1.0
// the invocation object: conditions the tool met while running) and executionSuccessful false.
nlohmann::json ToSarif(const std::vector<Finding>& findings, std::string_view command,
                       std::string_view version, const FindingCap* cap = nullptr);

// JUnit XML: one testsuite named `command`; a testcase per finding (failure when it fails the
// gate, skipped when suppressed, passed with its message in system-out otherwise); a single
// passing testcase when there are no findings.
std::string ToJunit(const std::vector<Finding>& findings, std::string_view command,
                    Severity fail_on);

// The streamed forms: the same text as WriteJson(ToSarif(...), 2) + "\n", ToJunit(...) and
// RenderFindingsText(...), written to `sink` finding by finding (nothing but the rule table is
// held). Never fail; write errors are the sink's.
void WriteSarif(const common::TextSink& sink, const FindingsView& findings,
                std::string_view command, std::string_view version,
                const FindingCap* cap = nullptr);
void WriteJunit(const common::TextSink& sink, const FindingsView& findings,
                std::string_view command, Severity fail_on);
void WriteFindingsText(const common::TextSink& sink, const FindingsView& findings);

}  // namespace tg::audit
