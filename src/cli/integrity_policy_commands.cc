// admit, diff, logscan, doctor: the judging half of the integrity core (probe is the measuring
// half). Each runner returns the shared exit codes: 0 pass, 1 internal, 2 usage/config,
// 3 integrity (no usable GPU path), 4 version drift.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/audit_output.h"
#include "cli/command_areas.h"
#include "common/status.h"
#include "policy/admission.h"
#include "policy/logscan.h"
#include "policy/matrix.h"
#include "policy/snapshot_diff.h"
#include "probe/probe.h"

namespace tg::cli {
namespace {

using common::Json;

int UsageError(const common::Status& s) {
  std::fprintf(stderr, "truegreen: %s\n", s.message().c_str());
  int rc = common::ExitCodeFromStatus(s);
  // Everything that reaches here is about the user's input (files, flags).
  return rc == common::kExitInternal ? common::kExitUsage : rc;
}

void Print(const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); }

struct AdmitFlags {
  std::string matrix;
  std::string snapshot;
  std::string root = "/";
};

// The snapshot to judge: read from --snapshot, or taken live with the global --lib-path.
common::Result<probe::Snapshot> GetSnapshot(const AdmitFlags& f, const GlobalOptions& g) {
  if (!f.snapshot.empty()) return probe::LoadSnapshotFile(f.snapshot);
  probe::ProbeOptions o;
  o.root = f.root;
  return probe::TakeSnapshot(g.Loader(), o);
}

// --matrix wins; otherwise the global --policy (production by default, dev, or a file).
common::Result<policy::Matrix> GetMatrix(const std::string& matrix, const GlobalOptions& g) {
  if (!matrix.empty()) return policy::LoadMatrix(matrix);
  return policy::ResolvePolicyMatrix(g.policy);
}

// What admit and doctor both evaluate: the matrix, the snapshot and the report on the two.
struct Evaluation {
  policy::Matrix matrix;
  probe::Snapshot snapshot;
  policy::AdmissionReport report;
};

common::Result<Evaluation> Evaluate(const AdmitFlags& f, const GlobalOptions& g) {
  auto m = GetMatrix(f.matrix, g);
  if (!m.ok()) return m.status();
  auto s = GetSnapshot(f, g);
  if (!s.ok()) return s.status();
  policy::AdmissionReport r = policy::Admit(*s, *m);
  return Evaluation{std::move(m).value(), std::move(s).value(), std::move(r)};
}

int RunAdmit(const AdmitFlags& f, const GlobalOptions& g) {
  auto e = Evaluate(f, g);
  if (!e.ok()) return UsageError(e.status());
  const policy::AdmissionReport& r = e->report;
  if (g.json) {
    Print(r.ToJson().dump(2) + "\n");
  } else {
    Print(r.ToText(isatty(STDOUT_FILENO) != 0));
  }
  return r.exit_code;
}

int RunDoctor(const AdmitFlags& f, const GlobalOptions& g) {
  auto e = Evaluate(f, g);
  if (!e.ok()) return UsageError(e.status());
  const policy::Matrix* m = &e->matrix;
  const probe::Snapshot* s = &e->snapshot;
  const policy::AdmissionReport& r = e->report;
  if (g.json) {
    Json j = r.ToJson();
    j["snapshot"] = probe::ToJson(*s);
    Print(j.dump(2) + "\n");
    return r.exit_code;
  }
  // Verdict first: the one line an operator needs, then why and what to do.
  std::string o = std::string(policy::VerdictName(r.verdict)) + "\n";
  o += "  policy: " + (m->name.empty() ? m->source : m->name) + " (" + m->source + ")\n";
  if (s->onnxruntime.library.loaded && s->onnxruntime.library.version) {
    o += "  onnxruntime " + *s->onnxruntime.library.version + ", driver " +
         s->nvml.driver_version.value_or(s->cuda_driver.library.loaded ? "unknown" : "absent") +
         ", " + std::to_string(s->cuda_driver.device_count.value_or(0)) + " CUDA device(s)\n";
  }
  auto causes = r.Causes();
  if (!causes.empty()) {
    o += "\nCauses and fixes:\n";
    int i = 0;
    for (const policy::Check* c : causes) {
      o += "  " + std::to_string(++i) + ". [" + c->id + "] " + c->found + "\n";
      if (!c->required.empty()) o += "     required: " + c->required + "\n";
      o += "     fix: " + c->cause + "\n";
    }
  }
  o += "\nAll checks:\n" + r.ToText(isatty(STDOUT_FILENO) != 0);
  Print(o);
  return r.exit_code;
}

struct DiffFlags {
  std::string a, b;
  std::vector<std::string> ignore;
};

int RunDiff(const DiffFlags& f, const GlobalOptions& g) {
  auto d = policy::DiffSnapshotFiles(f.a, f.b, f.ignore);
  if (!d.ok()) return UsageError(d.status());
  if (g.json) {
    Json j = policy::DiffToJson(*d);
    j["a"] = f.a;
    j["b"] = f.b;
    Print(j.dump(2) + "\n");
  } else if (d->empty()) {
    Print("snapshots are equal: " + f.a + " and " + f.b + "\n");
  } else {
    Print("--- " + f.a + "\n+++ " + f.b + "\n" + policy::DiffToText(*d) +
          std::to_string(d->size()) + " difference(s)\n");
  }
  return d->empty() ? 0 : 1;
}

// Matches kept for --format sarif|junit and --suppressions; beyond this many a log is reported by
// its counts (the text stream still shows every match).
constexpr std::size_t kMaxLogFindings = 10000;

int RunLogscan(const std::string& path, const std::string& patterns, const AuditOutputFlags& flags,
               const GlobalOptions& g) {
  auto out = ResolveAuditOutput(flags, g);
  if (!out.ok()) return UsageError(out.status());
  std::unique_ptr<policy::LogScanner> scanner;
  if (!patterns.empty()) {
    auto s = policy::LogScanner::WithUserPatterns(patterns);
    if (!s.ok()) return UsageError(s.status());
    scanner = std::move(*s);
  }
  Json matches = Json::array();
  std::vector<audit::Finding> findings;
  auto on_match = [&](const policy::LogMatch& m) {
    if (findings.size() < kMaxLogFindings) {
      audit::Finding f;
      f.rule = m.pattern->id;
      f.path = path == "-" ? "" : path;
      f.line = m.line;
      f.message = "[" + std::string(m.pattern->category) + "] " + m.text;
      f.fix = m.pattern->explanation;
      findings.push_back(std::move(f));
    }
    if (out->format != audit::OutputFormat::kText) {
      matches.push_back({{"line", m.line},
                         {"category", m.pattern->category},
                         {"pattern", m.pattern->id},
                         {"text", m.text},
                         {"explanation", m.pattern->explanation}});
    } else {
      // Streamed: a match is printed as soon as it is found.
      Print(path + ":" + std::to_string(m.line) + ": [" + m.pattern->category + "] " + m.text +
            "\n    -> " + m.pattern->explanation + "\n");
    }
  };
  auto r = policy::ScanLogFile(path, on_match, scanner.get());
  if (!r.ok()) return UsageError(r.status());
  audit::Severity fail_on = out->fail_on.value_or(audit::Severity::kError);
  bool printed = false;
  common::Status emitted = EmitAuditReports(*out, "logscan", fail_on, &findings, &printed);
  if (!emitted.ok()) return UsageError(emitted);
  // Every match fails unless suppressed; matches past kMaxLogFindings cannot be suppressed.
  bool fail = r->matches > static_cast<std::int64_t>(findings.size()) ||
              audit::GateFails(findings, fail_on);
  for (std::size_t i = 0; i < findings.size() && i < matches.size(); ++i) {
    if (findings[i].suppressed) matches[i]["suppressed"] = findings[i].suppression;
  }
  if (printed) {
    // SARIF or JUnit went to stdout.
  } else if (out->format == audit::OutputFormat::kJson) {
    Json cats = Json::object();
    for (const auto& [c, n] : r->per_category) cats[c] = n;
    Print(Json{{"file", path},
               {"lines", r->lines},
               {"matches", r->matches},
               {"categories", cats},
               {"findings", matches}}
              .dump(2) +
          "\n");
  } else {
    std::string summary = "logscan: " + std::to_string(r->lines) + " line(s), " +
                          std::to_string(r->matches) + " finding(s)";
    for (const auto& [c, n] : r->per_category) summary += "; " + c + " " + std::to_string(n);
    Print(summary + (r->matches ? "" : " — no fallback or degradation language found") + "\n");
  }
  return fail ? common::kExitIntegrity : common::kExitOk;
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
                   "Version matrix YAML (default: the --policy matrix, production)")
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
  doctor->add_option("--matrix", doctor_flags->matrix, "Version matrix YAML instead of --policy")
      ->type_name("FILE");
  doctor->add_option("--snapshot", doctor_flags->snapshot, "Judge this snapshot instead")
      ->type_name("FILE");
  doctor->add_option("--root", doctor_flags->root, "Root prefix for device nodes and /proc")
      ->type_name("DIR");
  r.Add(doctor, [doctor_flags, &g] { return RunDoctor(*doctor_flags, g); });

  auto diff_flags = std::make_shared<DiffFlags>();
  CLI::App* diff = app.add_subcommand(
      "diff", "Capability diff of two snapshots (exit 0 equal, 1 different, 2 bad input)");
  diff->add_option("a", diff_flags->a, "First snapshot JSON")->required()->type_name("A.json");
  diff->add_option("b", diff_flags->b, "Second snapshot JSON")->required()->type_name("B.json");
  diff->add_option("--ignore", diff_flags->ignore, "Dotted path to leave out (repeatable)")
      ->type_name("PATH");
  r.Add(diff, [diff_flags, &g] { return RunDiff(*diff_flags, g); });

  auto log_path = std::make_shared<std::string>("-");
  CLI::App* logscan = app.add_subcommand(
      "logscan",
      "Find ONNX Runtime/TensorRT/cuDNN/CUDA fallback and degradation language in a log (exit 3 "
      "when anything matched, 0 when clean)");
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
