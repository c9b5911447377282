// The output and gate flags every `truegreen audit` command and `logscan` share:
//   --format text|json|sarif|junit   what goes to stdout (--json is the same as --format json)
//   --sarif FILE / --junit FILE      also write SARIF 2.1.0 / JUnit XML to FILE
//   --fail-on error|warning|info     the lowest severity that fails the command
//   --suppressions FILE              rule ids with reasons and optional expiry (report_format.h)
//   --max-findings N                 at most N findings listed (audit/report/finding_cap.h, 25000)
//   --strict                         refuse a suppression naming a rule id nothing reports
// Failure behaviour: bad values, an unreadable suppression file, or a report file that exists and
// is not a regular file are usage errors (exit 2) naming the flag or file. Not thread-safe.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "audit/report/finding.h"
#include "audit/report/finding_cap.h"
#include "audit/report/report_format.h"
#include "cli/command.h"

namespace tg::cli {

struct AuditOutputFlags {
  std::string format;  // "" = text, or json with --json
  std::string sarif, junit;
  std::string fail_on;  // "" = the command's default
  std::string suppressions;
  std::size_t max_findings = audit::kDefaultMaxFindings;
  bool strict = false;  // --strict: a suppression naming an unknown rule id is refused
};
// Adds the flags above to `cmd`, bound to *flags (which must outlive parsing and the runner).
void AddAuditOutputFlags(CLI::App* cmd, AuditOutputFlags* flags);

// The resolved flags. Result is INVALID_ARG for bad values or an unreadable suppression file.
struct AuditOutput {
  audit::OutputFormat format = audit::OutputFormat::kText;
  std::optional<audit::Severity> fail_on;  // nullopt = the command's default
  std::optional<audit::Suppressions> suppressions;
  std::string sarif, junit;
  std::size_t max_findings = audit::kDefaultMaxFindings;
  // Non-fatal problems with the flags' inputs (suppressions naming unknown rule ids), already
  // written to stderr; commands add them to their JSON output as "warnings".
  std::vector<std::string> warnings;
};
// With `audit_rule_ids`, suppressions whose rule is not an audit rule id (audit/report/rule_ids.h)
// are warned about (stderr and AuditOutput::warnings); logscan, whose ids are pattern ids, passes
// false.
common::Result<AuditOutput> ResolveAuditOutput(const AuditOutputFlags& f, const GlobalOptions& g,
                                               bool audit_rule_ids = false);

// Keeps the first out.max_findings of `findings` (counting the rest into the cap), applies
// suppressions, appends the truncation finding when any was not kept (audit/report/finding_cap.h),
// and writes --sarif/--junit files and, for the sarif/junit formats, stdout (WriteAuditReports).
// `earlier`, when given, is the cap the command already applied while collecting (its counts are
// reported too). Returns OK or INVALID_ARG (a report file that cannot be written). `printed` is set
// when stdout was written (so the caller prints text/json only otherwise).
common::Status EmitAuditReports(const AuditOutput& out, std::string_view command,
                                audit::Severity fail_on, std::vector<audit::Finding>* findings,
                                bool* printed, const audit::FindingCap* earlier = nullptr);

// The writing half of EmitAuditReports, for findings the command has already capped and
// suppressed, with the truncation finding in place (audit k8s): --sarif/--junit files and, for
// the sarif/junit formats, stdout, each streamed finding by finding. Same errors and `printed`.
common::Status WriteAuditReports(const AuditOutput& out, std::string_view command,
                                 audit::Severity fail_on, const audit::FindingsView& findings,
                                 const audit::FindingCap& cap, bool* printed);

}  // namespace tg::cli
