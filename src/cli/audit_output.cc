// --sarif/--junit report files go through the one atomic writer, streamed (common/atomic_file.h).
#include "cli/audit_output.h"

#include <fmt/format.h>

#include <cstdio>

#include "audit/report/rule_ids.h"
#include "cli/output.h"
#include "common/atomic_file.h"
#include "common/json_stream.h"

#ifndef TG_VERSION
#define TG_VERSION "0.0.0"
#endif

namespace tg::cli {
namespace {

using common::Status;

// Through the one atomic writer, streamed: a new path or a regular file only (devices, FIFOs,
// sockets and directories are refused, naming the file), never a half-written report, and never
// the whole report in memory.
Status WriteReport(const std::string& path, const char* flag,
                   const std::function<void(const common::TextSink&)>& write) {
  auto w = common::AtomicFileWriter::Open(path);
  if (!w.ok()) return w.status().WithPrefix(flag);
  common::AtomicFileWriter* file = w->get();
  write([file](std::string_view s) { file->Write(s); });
  return file->Commit().WithPrefix(flag);
}

}  // namespace

void AddAuditOutputFlags(CLI::App* cmd, AuditOutputFlags* f) {
  cmd->add_option("--format", f->format, "Output on stdout: text, json, sarif or junit")
      ->type_name("FORMAT");
  cmd->add_option("--sarif", f->sarif, "Also write the findings as SARIF 2.1.0 to FILE")
      ->type_name("FILE");
  cmd->add_option("--junit", f->junit, "Also write the findings as JUnit XML to FILE")
      ->type_name("FILE");
  cmd->add_option("--fail-on", f->fail_on,
                  "Lowest severity that fails the command: error (default), warning or info")
      ->type_name("SEVERITY");
  cmd->add_option("--suppressions", f->suppressions,
                  "YAML file of rule ids with reasons and optional expiry; suppressed findings "
                  "are still reported")
      ->type_name("FILE");
  cmd->add_flag("--strict", f->strict,
                "Refuse (exit 2) a suppressions file naming a rule id nothing reports (a typo); "
                "without it that is a warning naming the nearest known id");
  cmd->add_option("--max-findings", f->max_findings,
                  "List at most N findings (default 25000, the most SARIF results GitHub code "
                  "scanning accepts per run); past them findings are counted by rule, and the "
                  "audit fails with audit.findings-truncated")
      ->type_name("N");
}

common::Result<AuditOutput> ResolveAuditOutput(const AuditOutputFlags& f, const GlobalOptions& g,
                                               bool audit_rule_ids) {
  AuditOutput out;
  std::string format = f.format.empty() ? (g.json ? "json" : "text") : f.format;
  auto fmt_value = audit::ParseOutputFormat(format);
  if (!fmt_value) {
    return Status::InvalidArg(
        fmt::format("--format '{}': expected text, json, sarif or junit", f.format));
  }
  if (g.json && *fmt_value != audit::OutputFormat::kJson) {
    return Status::InvalidArg(fmt::format("--json and --format {} contradict each other", format));
  }
  out.format = *fmt_value;
  if (!f.fail_on.empty()) {
    out.fail_on = audit::ParseSeverity(f.fail_on);
    if (!out.fail_on) {
      return Status::InvalidArg(
          fmt::format("--fail-on '{}': expected error, warning or info", f.fail_on));
    }
  }
  if (!f.suppressions.empty()) {
    TG_ASSIGN_OR_RETURN(out.suppressions, audit::LoadSuppressions(f.suppressions));
    if (audit_rule_ids) out.warnings = audit::UnknownRuleWarnings(*out.suppressions);
    if (f.strict && !out.warnings.empty()) {
      return Status::InvalidArg(out.warnings.front() + " (refused under --strict)");
    }
    for (const auto& e : out.suppressions->entries) {
      if (e.rule != audit::kTruncatedRule) continue;
      out.warnings.push_back(fmt::format(
          "{}:{}: {} cannot be suppressed: findings that were not listed were not checked",
          out.suppressions->source, e.line, e.rule));
    }
    for (const auto& w : out.warnings) Warn(w);
  }
  out.max_findings = f.max_findings;
  out.sarif = f.sarif;
  out.junit = f.junit;
  return out;
}

Status EmitAuditReports(const AuditOutput& out, std::string_view command, audit::Severity fail_on,
                        std::vector<audit::Finding>* findings, bool* printed,
                        const audit::FindingCap* earlier) {
  audit::FindingCap cap = earlier != nullptr ? *earlier : audit::FindingCap(out.max_findings);
  cap.Trim(findings);
  if (out.suppressions) {
    audit::ApplySuppressions(*out.suppressions, audit::TodayUtc(), findings);
  }
  // After the suppressions: the truncation finding is never suppressed.
  if (cap.truncated()) findings->push_back(cap.TruncationFinding());
  return WriteAuditReports(out, command, fail_on, audit::ViewOf(*findings), cap, printed);
}

Status WriteAuditReports(const AuditOutput& out, std::string_view command, audit::Severity fail_on,
                         const audit::FindingsView& findings, const audit::FindingCap& cap,
                         bool* printed) {
  // Each document is written only when a flag or --format asks for it: an unrequested report
  // costs memory and time, and must never be what ends a plain-text run.
  const bool sarif_out = out.format == audit::OutputFormat::kSarif;
  const bool junit_out = out.format == audit::OutputFormat::kJunit;
  const auto sarif = [&](const common::TextSink& sink) {
    audit::WriteSarif(sink, findings, command, TG_VERSION, &cap);
  };
  const auto junit = [&](const common::TextSink& sink) {
    audit::WriteJunit(sink, findings, command, fail_on);
  };
  if (!out.sarif.empty()) TG_RETURN_IF_ERROR(WriteReport(out.sarif, "--sarif", sarif));
  if (!out.junit.empty()) TG_RETURN_IF_ERROR(WriteReport(out.junit, "--junit", junit));
  *printed = sarif_out || junit_out;
  if (sarif_out) sarif(common::FileSink(stdout));
  if (junit_out) junit(common::FileSink(stdout));
  return Status::Ok();
}

}  // namespace tg::cli
