// admit, diff, logscan, doctor: the judging half of the integrity core (probe is the measuring
// half). Each runner returns the shared exit codes (README): 0 pass, 1 internal, 2 usage/config,
// 3 integrity (no usable GPU path), 4 version drift (admit, doctor; diff: the snapshots differ),
// 5 performance (logscan). Verdict first, then the evidence; errors through cli::ReportError.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "audit/report/finding_cap.h"
#include "cli/audit_output.h"
#include "cli/command_areas.h"
#include "cli/integrity_canary.h"
#include "cli/output.h"
#include "cli/policy_option.h"
#include "common/json_writer.h"
#include "common/outcome.h"
#include "common/status.h"
#include "common/strings.h"
#include "policy/admission.h"
#include "policy/logscan.h"
#include "policy/matrix.h"
#include "policy/snapshot_diff.h"
#include "policy/verdict.h"
#include "probe/probe.h"
#include "runtime/ort_probe.h"
#include "runtime/runtime_policy.h"
#include "runtime/startup.h"

namespace tg::cli {
namespace {

using common::Json;

struct AdmitFlags {
  std::string matrix;
  std::string snapshot;
  std::string root = "/";
  CanaryFlags canary;    // doctor only
  bool verbose = false;  // doctor: the full check list after the verdict and causes
};

Tone VerdictTone(policy::Verdict v) {
  return v == policy::Verdict::kAccelerated ? Tone::kPass
         : v == policy::Verdict::kDegraded  ? Tone::kWarn
                                            : Tone::kFail;
}

// What admit and doctor both evaluate: the matrix, the snapshot and the report on the two.
struct Evaluation {
  policy::Matrix matrix;
  probe::Snapshot snapshot;
  policy::AdmissionReport report;
  // The process's ONNX Runtime (or why it could not be opened), opened for a live snapshot only
  // and used again by doctor's startup chain; nothing for a --snapshot file.
  std::optional<common::Result<runtime::OrtRuntime*>> ort;
};

// The snapshot to judge: read from --snapshot, or taken live with the global --lib-path in the
// process's runtime, which is kept in `e` for the startup chain.
common::Status TakeOrReadSnapshot(const AdmitFlags& f, const GlobalOptions& g, Evaluation* e) {
  if (!f.snapshot.empty()) {
    auto s = probe::LoadSnapshotFile(f.snapshot);
    if (!s.ok()) return s.status();
    e->snapshot = std::move(s).value();
    return common::Status::Ok();
  }
  probe::ProbeOptions o;
  o.root = f.root;
  const common::LibraryLoader loader = g.Loader();
  e->ort = runtime::OrtRuntime::Open(loader);
  e->snapshot = runtime::TakeSnapshot(loader, *e->ort, o);
  return common::Status::Ok();
}

common::Result<Evaluation> Evaluate(const AdmitFlags& f, const GlobalOptions& g) {
  auto m = ResolveMatrix(f.matrix, g);
  if (!m.ok()) return m.status();
  Evaluation e;
  e.matrix = std::move(m).value();
  if (common::Status s = TakeOrReadSnapshot(f, g, &e); !s.ok()) return s;
  e.report = policy::Admit(e.snapshot, e.matrix);
  return e;
}

int RunAdmit(const AdmitFlags& f, const GlobalOptions& g) {
  auto e = Evaluate(f, g);
  if (!e.ok()) return ReportError(e.status());
  const policy::AdmissionReport& r = e->report;
  const policy::NodeVerdict v = policy::JudgeNode(r, {}, std::nullopt);
  const std::string matrix = r.matrix_name.empty() ? r.matrix_source : r.matrix_name;
  if (g.json) {
    PrintJson(r.ToJson());
  } else {
    // Verdict first, like doctor; the per-check lines follow.
    Print(Paint(policy::VerdictName(v.verdict), VerdictTone(v.verdict)) + " (exit " +
          std::to_string(v.exit_code) + ", matrix " + matrix + ")\n\n" + r.ChecksText(g.use_color) +
          v.ToText(matrix));
  }
  return v.exit_code;
}

// doctor through the one startup chain (snapshot -> admit -> factory -> canary), on the snapshot
// and matrix it already evaluated, for a live node only (a --snapshot file describes another
// node). No model is opened: the canary, when asked for, covers the whole built-in set. Returns
// nothing when the chain does not apply (snapshot file, or a --policy that is a matrix only).
std::optional<runtime::StartupReport> RunDoctorChain(const AdmitFlags& f, const GlobalOptions& g,
                                                     const Evaluation& e) {
  if (!f.snapshot.empty() || !e.ort) return std::nullopt;
  auto policy = runtime::LoadRuntimePolicy(g.policy);
  if (!policy.ok()) return std::nullopt;
  runtime::StartupOptions so;
  so.snapshot = &e.snapshot;
  so.matrix = &e.matrix;
  if (f.canary.run) so.canary = DoctorCanaryOptions(g, f.canary);
  runtime::StartupReport rep;
  auto chain = runtime::StartupChain::Start(*policy, g.Loader(), *e.ort, so, &rep);
  // A refusal is already in the report (doctor reports, it does not stop).
  if (chain.ok()) (void)chain->Finish({}, so, &rep);
  return rep;
}

int RunDoctor(const AdmitFlags& f, const GlobalOptions& g) {
  auto e = Evaluate(f, g);
  if (!e.ok()) return ReportError(e.status());
  const policy::Matrix* m = &e->matrix;
  const probe::Snapshot* s = &e->snapshot;
  const policy::AdmissionReport& r = e->report;
  // The op canary (--canary): a node is only ACCELERATED when its ops ran right on the GPU. A
  // canary that could not run proves nothing, so it never leaves an ACCELERATED verdict standing.
  const std::optional<runtime::StartupReport> startup = RunDoctorChain(f, g, *e);
  std::optional<runtime::CanaryReport> canary;
  if (startup && startup->canary) canary = startup->canary;
  // The chain stopped before its canary (e.g. the factory refused a CPU core with a GPU provider):
  // doctor still runs it, in its child process, to name the ops that such a pair crashes on.
  if (f.canary.run && !canary) canary = RunDoctorCanary(g, f.canary, *s, r.matrix_fingerprint);
  // Any step after admit that production refuses (factory, canary), or a canary that did not
  // pass, leaves no ACCELERATED verdict (policy::JudgeNode). The factory attaches the judged
  // matrix's providers (--matrix included), so its refusal is a verdict about that matrix.
  std::optional<policy::CanaryFinding> finding;
  if (canary) finding = policy::CanaryFinding{canary->verdict, canary->reason};
  const policy::NodeVerdict v =
      policy::JudgeNode(r, startup ? startup->steps : std::vector<policy::StepResult>{}, finding);
  if (g.json) {
    Json j = r.ToJson();
    j.update(v.ToJson());
    if (canary) j["canary"] = runtime::CanaryReportToJson(*canary);
    if (startup) j["startup"] = startup->ToJson();
    j["snapshot"] = probe::ToJson(*s);
    PrintJson(j);
    return v.exit_code;
  }
  // Verdict first: the one line an operator needs, then why and what to do.
  std::string o = Paint(policy::VerdictName(v.verdict), VerdictTone(v.verdict)) + "\n";
  if (!v.overturned.empty()) o += "  because " + v.overturned + "\n";
  if (canary) o += "  " + runtime::FormatCanaryReport(*canary);
  o += "  policy: " + (m->name.empty() ? m->source : m->name) + " (" + m->source + ")\n";
  if (s->onnxruntime.library.loaded && s->onnxruntime.library.version) {
    o += "  onnxruntime " + *s->onnxruntime.library.version + ", driver " +
         s->nvml.driver_version.value_or(s->cuda_driver.library.loaded ? "unknown" : "absent") +
         ", " + std::to_string(s->cuda_driver.device_count.value_or(0)) + " CUDA device(s)\n";
  }
  if (!v.causes.empty()) {
    o += "\nCauses and fixes:\n";
    int i = 0;
    for (const policy::Cause& c : v.causes) {
      o += "  " + std::to_string(++i) + ". [" + c.id + "] " + c.found + "\n";
      if (!c.required.empty()) o += "     required: " + c.required + "\n";
      o += "     fix: " + c.fix + "\n";
    }
  }
  if (startup) o += "\n" + startup->Format();
  if (f.verbose) {
    o += "\nAll checks:\n" + r.ChecksText(g.use_color) +
         v.ToText(r.matrix_name.empty() ? r.matrix_source : r.matrix_name);
  } else {
    // The verdict and its causes are what a person acts on; the full list is one flag away.
    int n[3] = {0, 0, 0};
    for (const policy::Check& c : r.checks) ++n[static_cast<int>(c.result)];
    o += "\n" + std::to_string(r.checks.size()) + " checks: " + std::to_string(n[0]) + " passed, " +
         std::to_string(n[1]) + " warned, " + std::to_string(n[2]) +
         " failed (all of them: doctor --verbose; everything: --json)\n";
  }
  Print(o);
  return v.exit_code;
}

struct DiffFlags {
  std::string a, b;
  std::vector<std::string> ignore;
};

// Invalid UTF-8 anywhere in a diff's output: its file names, a path or a value.
std::uint64_t InvalidUtf8In(const DiffFlags& f, const std::vector<policy::DiffEntry>& d) {
  std::uint64_t invalid = common::CountInvalidUtf8(Json::array({f.a, f.b}));
  for (const auto& e : d) {
    invalid += common::CountInvalidUtf8(Json(e.path));
    if (e.before != nullptr) invalid += common::CountInvalidUtf8(*e.before);
    if (e.after != nullptr) invalid += common::CountInvalidUtf8(*e.after);
  }
  return invalid;
}

// `diff --json`, written one difference at a time: the same text as PrintJson of the whole
// document (keys in nlohmann's order, two-space indent), without holding a document of every
// difference and its text at once (a 16 MB snapshot pair can differ in 500 000 places). A diff
// with invalid UTF-8 anywhere takes the whole-document path, which adds the notice member first.
void PrintDiffJson(const DiffFlags& f, const std::vector<policy::DiffEntry>& d) {
  if (InvalidUtf8In(f, d) > 0) {
    Json j = policy::DiffToJson(d);
    j["a"] = f.a;
    j["b"] = f.b;
    PrintJson(j);
    return;
  }
  int added = 0, removed = 0, changed = 0;
  for (const auto& e : d) {
    (e.kind == policy::DiffEntry::Kind::kAdded     ? added
     : e.kind == policy::DiffEntry::Kind::kRemoved ? removed
                                                   : changed)++;
  }
  auto str = [](const std::string& s) { return common::WriteJson(Json(s)); };
  Print("{\n  \"a\": " + str(f.a) + ",\n  \"added\": " + std::to_string(added) + ",\n  \"b\": " +
        str(f.b) + ",\n  \"changed\": " + std::to_string(changed) + ",\n  \"differences\": [");
  for (std::size_t i = 0; i < d.size(); ++i) {
    const std::string text = common::WriteJson(policy::DiffEntryToJson(d[i]), 2);
    std::string indented = i == 0 ? "\n    " : ",\n    ";
    for (char c : text) {
      indented += c;
      if (c == '\n') indented += "    ";  // JSON strings hold no raw newline
    }
    Print(indented);
  }
  Print(std::string(d.empty() ? "]" : "\n  ]") + ",\n  \"equal\": " +
        (d.empty() ? "true" : "false") + ",\n  \"removed\": " + std::to_string(removed) + "\n}\n");
}

int RunDiff(const DiffFlags& f, const GlobalOptions& g) {
  auto diff = policy::DiffSnapshotFiles(f.a, f.b, f.ignore);
  if (!diff.ok()) return ReportError(diff.status());
  const std::vector<policy::DiffEntry>& d = diff->entries;
  if (g.json) {
    PrintDiffJson(f, d);
  } else if (d.empty()) {
    Print(Paint("EQUAL", Tone::kPass) + ": " + f.a + " and " + f.b + " are equal\n");
  } else {
    // One line at a time: the text of 500 000 differences is never held whole.
    Print(Paint("DIFFERENT", Tone::kFail) + ": " + std::to_string(d.size()) +
          " difference(s)\n--- " + f.a + "\n+++ " + f.b + "\n");
    for (const auto& e : d) Print(policy::DiffLine(e));
  }
  // Two nodes whose capabilities differ have drifted apart: exit 4, as admit does for drift.
  return common::ExitCodeFromOutcome(d.empty() ? common::Outcome::kOk : common::Outcome::kDrift);
}

// The verdict of a log scan, named after its result (policy::LogScanOutcome).
std::string_view LogVerdict(common::Outcome o) {
  switch (o) {
    case common::Outcome::kOk:
      return "CLEAN";
    case common::Outcome::kNotAccelerated:
      return "NOT ACCELERATED";
    case common::Outcome::kDrift:
      return "VERSION DRIFT";
    case common::Outcome::kPerformanceFailed:
      return "SLOW PATH";
    case common::Outcome::kAuditFailed:
    case common::Outcome::kInterrupted:
      break;
  }
  return "INTERNAL ERROR";  // a scan has no such result
}

// The reporting half of logscan: gate (--fail-on, --suppressions), verdict first, then the
// findings in the asked format. Every match fails unless suppressed; matches past the listed ones
// cannot be suppressed. The exit code is the most severe category's (policy::LogScanOutcome).
int ReportLogscan(const std::string& path, const policy::LogScanSummary& r, const AuditOutput& out,
                  std::vector<audit::Finding>* findings, const audit::FindingCap& cap,
                  Json* matches, const std::string& text, const GlobalOptions& g) {
  const auto kMaxListed = static_cast<std::int64_t>(out.max_findings);
  audit::Severity fail_on = out.fail_on.value_or(audit::Severity::kError);
  bool printed = false;
  common::Status emitted = EmitAuditReports(out, "logscan", fail_on, findings, &printed, &cap);
  if (!emitted.ok()) return ReportError(emitted);
  const bool fail = r.matches > static_cast<std::int64_t>(findings->size()) ||
                    audit::GateFails(*findings, fail_on);
  for (std::size_t i = 0; i < findings->size() && i < matches->size(); ++i) {
    if ((*findings)[i].suppressed) (*matches)[i]["suppressed"] = (*findings)[i].suppression;
  }
  const common::Outcome outcome = fail ? policy::LogScanOutcome(r) : common::Outcome::kOk;
  const int rc = common::ExitCodeFromOutcome(outcome);
  const std::string_view verdict = LogVerdict(outcome);
  if (printed) return rc;  // SARIF or JUnit went to stdout
  if (out.format == audit::OutputFormat::kJson) {
    Json cats = Json::object();
    for (const auto& [c, n] : r.per_category) cats[c] = n;
    Json j = {{"verdict", verdict},
              {"exit_code", rc},
              {"file", path},
              {"lines", r.lines},
              {"matches", r.matches},
              {"categories", cats},
              {"findings", std::move(*matches)},
              {"findings_not_listed", std::max<std::int64_t>(0, r.matches - kMaxListed)}};
    // Only when matches were left out: the same finding the SARIF and JUnit reports end with.
    if (cap.truncated()) j["truncated"] = audit::FindingToJson(findings->back());
    PrintJson(j);
    return rc;
  }
  std::string summary =
      std::to_string(r.lines) + " line(s), " + std::to_string(r.matches) + " finding(s)";
  for (const auto& [c, n] : r.per_category) summary += "; " + c + " " + std::to_string(n);
  Print(Paint(verdict, rc == 0 ? Tone::kPass : Tone::kFail) + " (exit " + std::to_string(rc) +
        "): " + summary + (r.matches ? "" : " — no fallback or degradation language found") + "\n" +
        text);
  if (cap.truncated()) Print("... " + cap.TruncationFinding().message + "\n");
  return rc;
}

// A suppression whose rule is no pattern id (built-in, or of --patterns) matches nothing: said on
// stderr, as the audits say it of rule ids no audit reports; refused under --strict.
common::Status WarnUnknownLogscanRules(AuditOutput* out, const policy::LogScanner* scanner,
                                       bool strict) {
  if (!out->suppressions) return common::Status::Ok();
  std::set<std::string, std::less<>> ids;
  for (const policy::LogPattern& p : policy::LogPatterns()) ids.insert(p.id);
  if (scanner != nullptr) {
    for (const policy::LogPattern* p : scanner->patterns()) ids.insert(p->id);
  }
  for (const auto& e : out->suppressions->entries) {
    if (ids.count(e.rule) != 0 || e.rule == audit::kTruncatedRule) continue;
    // The nearest pattern id (at most 3 edits) for a typo; ids over 80 bytes are not compared.
    std::string near;
    std::size_t best = 4;
    for (const std::string& id : ids) {
      if (e.rule.size() > 80) break;
      if (std::size_t d = common::EditDistance(e.rule, id); d < best) {
        best = d;
        near = id;
      }
    }
    out->warnings.push_back(out->suppressions->source + ":" + std::to_string(e.line) +
                            ": unknown rule id '" + e.rule.substr(0, 128) +
                            "': no logscan pattern has this id, so this suppression matches "
                            "nothing" +
                            (near.empty() ? "" : " (did you mean '" + near + "'?)"));
    if (strict)
      return common::Status::InvalidArg(out->warnings.back() + " (refused under --strict)");
    Warn(out->warnings.back());
  }
  return common::Status::Ok();
}

int RunLogscan(const std::string& path, const std::string& patterns, const AuditOutputFlags& flags,
               const GlobalOptions& g) {
  auto out = ResolveAuditOutput(flags, g);
  if (!out.ok()) return ReportError(out.status());
  std::unique_ptr<policy::LogScanner> scanner;
  if (!patterns.empty()) {
    auto s = policy::LogScanner::WithUserPatterns(patterns);
    if (!s.ok()) return ReportError(s.status());
    scanner = std::move(*s);
  }
  if (common::Status st = WarnUnknownLogscanRules(&*out, scanner.get(), flags.strict); !st.ok()) {
    return ReportError(st);
  }
  // Findings are collected (not streamed) so the verdict can come first. Each is at most one
  // truncated line plus its explanation, and at most --max-findings are kept (the rest are
  // counted by pattern), so memory stays bounded on a log that matches on every line.
  const auto kMaxListed = static_cast<std::int64_t>(out->max_findings);
  audit::FindingCap cap(out->max_findings);
  Json matches = Json::array();
  std::vector<audit::Finding> findings;
  std::string text;
  std::int64_t listed = 0;
  auto on_match = [&](const policy::LogMatch& m) {
    if (++listed > kMaxListed) return cap.CountDropped(m.pattern->id, audit::Severity::kError);
    audit::Finding f;
    f.rule = m.pattern->id;
    f.path = path == "-" ? "" : path;
    f.line = m.line;
    f.message = "[" + std::string(m.pattern->category) + "] " + m.text;
    f.fix = m.pattern->explanation;
    findings.push_back(std::move(f));
    if (out->format != audit::OutputFormat::kText) {
      matches.push_back({{"line", m.line},
                         {"category", m.pattern->category},
                         {"pattern", m.pattern->id},
                         {"text", m.text},
                         {"explanation", m.pattern->explanation}});
    } else {
      text += path + ":" + std::to_string(m.line) + ": [" + m.pattern->category + "] " + m.text +
              "\n    -> " + m.pattern->explanation + "\n";
    }
  };
  auto r = policy::ScanLogFile(path, on_match, scanner.get());
  if (!r.ok()) return ReportError(r.status());
  return ReportLogscan(path, *r, *out, &findings, cap, &matches, text, g);
}

}  // namespace

void RegisterPolicyCommands(CLI::App& app, GlobalOptions& g, CommandRegistry& r) {
  auto admit_flags = std::make_shared<AdmitFlags>();
  CLI::App* admit = app.add_subcommand(
      "admit",
      "Judge a capability snapshot against the version matrix (exit 0 pass, 3 no GPU path, "
      "4 version drift, 2 bad input)");
  admit
      ->add_option("--matrix", admit_flags->matrix,
                   "Version matrix YAML (default: the matrix the --policy names; production)")
      ->type_name("FILE");
  admit
      ->add_option("--snapshot", admit_flags->snapshot,
                   "Snapshot JSON from `truegreen probe --json` (default: probe this node now)")
      ->type_name("FILE");
  admit->add_option("--root", admit_flags->root, "Root prefix for device nodes and /proc (tests)")
      ->type_name("DIR");
  r.Add(admit, [admit_flags, &g] { return RunAdmit(*admit_flags, g); });

  auto doctor_flags = std::make_shared<AdmitFlags>();
  CLI::App* doctor = app.add_subcommand(
      "doctor",
      "Probe this node and judge it against the production expectations: ACCELERATED or NOT "
      "ACCELERATED, with causes and fixes (--policy dev: CPU allowed, reported as DEGRADED)");
  doctor
      ->add_option("--matrix", doctor_flags->matrix,
                   "Version matrix YAML instead of the one --policy names")
      ->type_name("FILE");
  doctor
      ->add_option("--snapshot", doctor_flags->snapshot,
                   "Snapshot JSON file to judge instead of probing this node")
      ->type_name("FILE");
  doctor->add_option("--root", doctor_flags->root, "Root prefix for device nodes and /proc")
      ->type_name("DIR");
  AddCanaryFlags(doctor, &doctor_flags->canary);
  doctor->add_flag("--verbose", doctor_flags->verbose,
                   "List every check after the verdict and causes (--json always has them)");
  r.Add(doctor, [doctor_flags, &g] { return RunDoctor(*doctor_flags, g); });

  auto diff_flags = std::make_shared<DiffFlags>();
  CLI::App* diff = app.add_subcommand(
      "diff", "Capability diff of two snapshots (exit 0 equal, 4 different, 2 bad input)");
  diff->add_option("a", diff_flags->a, "First snapshot JSON file")->required()->type_name("FILE");
  diff->add_option("b", diff_flags->b, "Second snapshot JSON file")->required()->type_name("FILE");
  diff->add_option("--ignore", diff_flags->ignore, "Dotted path to leave out (repeatable)")
      ->type_name("PATH");
  r.Add(diff, [diff_flags, &g] { return RunDiff(*diff_flags, g); });

  auto log_path = std::make_shared<std::string>("-");
  CLI::App* logscan = app.add_subcommand(
      "logscan",
      "Find ONNX Runtime/TensorRT/cuDNN/CUDA fallback and degradation language in a log (exit 0 "
      "clean, 3 no GPU path, 4 version drift, 5 slow path: the most severe finding decides)");
  logscan->add_option("file", *log_path, "Log file, or - for standard input (default)")
      ->type_name("FILE|-");
  auto logscan_output = std::make_shared<AuditOutputFlags>();
  auto logscan_patterns = std::make_shared<std::string>();
  logscan
      ->add_option("--patterns", *logscan_patterns,
                   "YAML file of extra patterns (id, regex, category, advice[, needle])")
      ->type_name("FILE");
  AddAuditOutputFlags(logscan, logscan_output.get());
  r.Add(logscan, [log_path, logscan_patterns, logscan_output, &g] {
    return RunLogscan(*log_path, *logscan_patterns, *logscan_output, g);
  });
}

}  // namespace tg::cli
