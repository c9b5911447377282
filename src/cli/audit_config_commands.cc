// `truegreen audit dockerfile`, `truegreen audit k8s` and `truegreen k8s render`.
//
// Exit codes: 0 clean, 6 (Outcome::kAuditFailed) when a rule fails, 2 (INVALID_ARG) for
// unreadable or malformed input (the message names the file and line). Results go to stdout (text
// or --json), verdict first; errors through cli::ReportError.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <regex>

#include "audit/dockerfile/dockerfile_audit.h"
#include "audit/dockerfile/dockerfile_parser.h"
#include "audit/k8s/k8s_audit.h"
#include "audit/k8s/kustomize.h"
#include "bench/bench_file.h"
#include "bench/slo.h"
#include "cli/audit_k8s_commands.h"
#include "cli/audit_output.h"
#include "cli/command_areas.h"
#include "cli/output.h"
#include "cli/policy_option.h"
#include "common/file_util.h"
#include "common/json_stream.h"
#include "common/json_writer.h"
#include "common/outcome.h"
#include "common/strings.h"
#include "deploy/k8s_client.h"
#include "deploy/k8s_render.h"
#include "policy/matrix.h"

namespace tg::cli {
namespace {

namespace fs = std::filesystem;
using common::kExitOk;
using common::Status;

// A Dockerfile larger than this is not a Dockerfile.
constexpr std::uint64_t kMaxDockerfileBytes = 4ull << 20;

struct DockerfileArgs {
  std::string file;
  std::string context;
  std::vector<std::string> build_args;
  AuditOutputFlags output;
};

int RunAuditDockerfile(const DockerfileArgs& a, const GlobalOptions& g) {
  constexpr std::string_view kCmd = "audit dockerfile";
  std::map<std::string, std::string> build_args;
  for (const auto& kv : a.build_args) {
    std::size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return ReportError(
          Status::InvalidArg(fmt::format("--build-arg '{}': expected NAME=VALUE", kv)));
    }
    if (!build_args.emplace(kv.substr(0, eq), kv.substr(eq + 1)).second) {
      return ReportError(Status::InvalidArg(
          fmt::format("--build-arg '{}': {} is given twice", kv, kv.substr(0, eq))));
    }
  }
  std::error_code ec;
  if (!a.context.empty() && !fs::is_directory(a.context, ec)) {
    return ReportError(
        Status::InvalidArg(fmt::format("--context '{}' is not a directory", a.context)));
  }
  auto text = common::ReadFileLimited(a.file, kMaxDockerfileBytes);
  if (!text.ok()) return ReportError(text.status());
  auto df = audit::ParseDockerfile(*text, a.file, build_args);
  if (!df.ok()) return ReportError(df.status());
  auto rep = audit::AuditDockerfile(*df, {a.file, a.context});
  if (!rep.ok()) return ReportError(rep.status());
  auto out = ResolveAuditOutput(a.output, g, true);
  if (!out.ok()) return ReportError(out.status());
  audit::Severity fail_on = out->fail_on.value_or(audit::Severity::kError);
  bool printed = false;
  common::Status emitted = EmitAuditReports(*out, kCmd, fail_on, &rep->findings, &printed);
  if (!emitted.ok()) return ReportError(emitted);
  bool fail = audit::GateFails(rep->findings, fail_on);

  if (printed) {
    // SARIF or JUnit went to stdout.
  } else if (out->format == audit::OutputFormat::kJson) {
    common::Json j;
    j["dockerfile"] = a.file;
    j["context"] = a.context.empty() ? fs::path(a.file).parent_path().string() : a.context;
    j["dockerignore"] = rep->dockerignore;
    common::Json stages = common::Json::array();
    for (const auto& st : df->stages) {
      stages.push_back({{"index", st.index},
                        {"name", st.name},
                        {"base", st.base},
                        {"line", st.line},
                        {"parent_stage", st.parent_stage}});
    }
    j["stages"] = std::move(stages);
    j["runtime_chain"] = rep->runtime_chain;
    j["findings"] = common::Json::array();  // written finding by finding below
    j["verdict"] = fail ? "fail" : "pass";
    if (!out->warnings.empty()) j["warnings"] = out->warnings;
    common::WriteJsonStreamed(
        common::FileSink(stdout), j, {"findings"}, rep->findings.size(),
        [&rep](std::size_t i) { return audit::FindingToJson(rep->findings[i]); }, 2);
    Print("\n");
  } else {
    std::string chain;
    for (int i : rep->runtime_chain) {
      const auto& st = df->stages[i];
      chain +=
          (chain.empty() ? "" : " <- ") + (st.name.empty() ? fmt::format("stage {}", i) : st.name);
    }
    // Verdict first, like doctor.
    Print(fail ? Paint("FAIL", Tone::kFail) + fmt::format(": {} finding(s)\n", rep->findings.size())
               : Paint("PASS", Tone::kPass) + "\n");
    Print(fmt::format("{}: {} stage(s); runtime: {}; ignore file: {}\n", a.file, rep->stages, chain,
                      rep->dockerignore.empty() ? "none" : rep->dockerignore));
    audit::WriteFindingsText(common::FileSink(stdout), audit::ViewOf(rep->findings));
  }
  return common::ExitCodeFromOutcome(fail ? common::Outcome::kAuditFailed : common::Outcome::kOk);
}

struct K8sArgs {
  std::vector<std::string> files;
  std::string matrix;
  std::string runtime_class;
  std::string kustomize = "auto";
  AuditOutputFlags output;
};

// The report as JSON on stdout, finding by finding (common/json_stream.h): the same text as
// WriteJson of the whole document.
void PrintK8sJson(const audit::K8sAuditReport& rep, const std::string& matrix_name, bool fail,
                  const std::vector<std::string>& warnings) {
  common::Json head = audit::K8sReportHeadToJson(rep);
  head["matrix"] = matrix_name;
  head["verdict"] = fail ? "fail" : "pass";
  if (!warnings.empty()) head["warnings"] = warnings;
  common::WriteJsonStreamed(
      common::FileSink(stdout), head, {"findings"}, rep.findings.size(),
      [&rep](std::size_t i) { return audit::K8sFindingToJson(rep.findings[i]); }, 2);
  Print("\n");
}

// Verdict first, like doctor; then what was read, then the findings, one at a time.
void PrintK8sText(const audit::K8sAuditReport& rep, const std::string& matrix_name, bool fail) {
  Print(fail ? Paint("FAIL", Tone::kFail) + fmt::format(": {} finding(s)\n", rep.findings.size())
             : Paint("PASS", Tone::kPass) + "\n");
  Print(fmt::format("{} document(s), {} workload(s), {} container(s){}\n", rep.documents,
                    rep.workloads, rep.containers,
                    matrix_name.empty() ? " (no --matrix: node affinity not checked)"
                                        : "; matrix " + matrix_name));
  for (const auto& r : rep.renderers) Print(fmt::format("rendered {}\n", r));
  for (const auto& p : rep.audited) {
    Print(fmt::format("  {} {}: {} ({})\n", p.object, p.path, p.role, p.reason));
  }
  if (!rep.not_audited.empty()) {
    Print(fmt::format("NOT AUDITED: {} object(s) of unknown kinds hold pods: {}\n",
                      rep.not_audited.size(), fmt::join(rep.not_audited, ", ")));
  }
  for (const auto& kf : rep.findings) Print(audit::RenderFindingText(kf.finding));
}

int RunAuditK8s(const K8sArgs& a, const GlobalOptions& g) {
  constexpr std::string_view kCmd = "audit k8s";
  audit::K8sAuditOptions opts;
  opts.runtime_class = a.runtime_class;
  if (a.kustomize == "auto") {
    opts.kustomize = audit::FindKustomizeCommand();
  } else if (a.kustomize != "builtin") {
    opts.kustomize = a.kustomize;
  }
  auto m = RequestedMatrix(a.matrix, g);
  if (!m.ok()) return ReportError(m.status());
  if (*m) opts.requirements = audit::NodeRequirementsFromMatrix(**m);
  const std::string matrix_name =
      !a.matrix.empty() ? a.matrix : (*m ? "of --policy " + g.policy : std::string());
  audit::K8sAuditReport rep;
  rep.cap = audit::FindingCap(a.output.max_findings);  // applied while the documents are read
  for (const auto& f : a.files) {
    common::Status s = audit::AuditK8sPath(f, opts, &rep);
    if (!s.ok()) return ReportError(s);
  }
  audit::AddCoverageFindings(&rep);
  auto out = ResolveAuditOutput(a.output, g, true);
  if (!out.ok()) return ReportError(out.status());
  audit::Severity fail_on = out->fail_on.value_or(audit::Severity::kError);
  // The findings are capped already (rep.cap, while the documents were read): suppress them in
  // place, then add the truncation finding, which no suppression touches.
  if (out->suppressions) {
    const std::string today = audit::TodayUtc();
    for (auto& kf : rep.findings) audit::ApplySuppressions(*out->suppressions, today, &kf.finding);
  }
  if (rep.cap.truncated()) rep.findings.push_back({rep.cap.TruncationFinding()});
  const audit::FindingsView view{
      rep.findings.size(),
      [&rep](std::size_t i) -> const audit::Finding& { return rep.findings[i].finding; }};
  bool printed = false;
  common::Status emitted = WriteAuditReports(*out, kCmd, fail_on, view, rep.cap, &printed);
  if (!emitted.ok()) return ReportError(emitted);
  bool fail = audit::GateFails(view, fail_on);
  if (printed) {
    // SARIF or JUnit went to stdout.
  } else if (out->format == audit::OutputFormat::kJson) {
    PrintK8sJson(rep, matrix_name, fail, out->warnings);
  } else {
    PrintK8sText(rep, matrix_name, fail);
  }
  return common::ExitCodeFromOutcome(fail ? common::Outcome::kAuditFailed : common::Outcome::kOk);
}

// Kubernetes quantities as `k8s render` accepts them: CPU "2", "0.5", "500m"; memory "8Gi",
// "512Mi", "1G", "1073741824". Positive, digits checked by hand (the input is a command-line
// argument of any length).
bool IsQuantity(std::string_view q, bool cpu) {
  std::size_t i = 0, digits = 0, nonzero = 0;
  bool dot = false;
  for (; i < q.size() && (std::isdigit(static_cast<unsigned char>(q[i])) || q[i] == '.'); ++i) {
    if (q[i] == '.') {
      if (dot) return false;
      dot = true;
      continue;
    }
    ++digits;
    if (q[i] != '0') ++nonzero;
  }
  if (digits == 0 || nonzero == 0 || q.size() > 32 || q.back() == '.') return false;
  std::string_view unit = q.substr(i);
  if (cpu) return unit.empty() || (unit == "m" && !dot);
  for (std::string_view u :
       {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "k", "M", "G", "T", "P", "E"}) {
    if (unit == u) return true;
  }
  return false;
}

// An image reference: name[:tag][@digest] in the reference grammar's character set. Anything
// else (spaces, newlines, quotes) would be written verbatim into the rendered YAML.
bool IsImageReference(std::string_view ref) {
  if (ref.empty() || ref.size() > 512) return false;
  for (char c : ref) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ||
          c == '/' || c == ':' || c == '@')) {
      return false;
    }
  }
  return true;
}

struct RenderArgs {
  std::string matrix;
  std::string rollout = "single";
  std::string bench_file;
  std::vector<std::string> fail_on;
  deploy::K8sRenderOptions opts;
};

// The bench file the gate Job runs with: a YAML mapping whose `slo` list holds at least one valid
// threshold (a gate that measures against nothing proves nothing).
Status CheckGateBenchFile(const std::string& path, const std::string& text) {
  TG_ASSIGN_OR_RETURN(bench::BenchFile f, bench::ParseBenchFile(text, path));
  if (f.slos.empty()) {
    return Status::InvalidArg(
        fmt::format("{}: field slo: the blue-green gate needs at least one threshold (e.g. slo: "
                    "[\"p95<8s\"]), found none",
                    path));
  }
  // The gate Job's bench line names no model: a KServe gate must find it in the file.
  if (f.api == "kserve" && !f.model) {
    return Status::InvalidArg(path +
                              ": api: kserve needs model: NAME (the gate Job's bench "
                              "command takes both from this file)");
  }
  return Status::Ok();
}

// Options that only matter for, or only make sense with, --rollout blue-green.
Status CheckRolloutOptions(RenderArgs& a) {
  if (a.opts.min_replicas > a.opts.max_replicas) {
    return Status::InvalidArg(fmt::format("--min-replicas {} is above --max-replicas {}",
                                          a.opts.min_replicas, a.opts.max_replicas));
  }
  if (!a.opts.models_pvc.empty() && !deploy::IsK8sObjectName(a.opts.models_pvc)) {
    return Status::InvalidArg(fmt::format("--models-pvc '{}': not a Kubernetes object name",
                                          a.opts.models_pvc.substr(0, 64)));
  }
  if (auto gates = bench::ParseGates(a.fail_on); !gates.ok()) return gates.status();
  if (!a.fail_on.empty()) a.opts.fail_on = a.fail_on;
  if (a.rollout != "blue-green") {
    for (auto [given, flag] : {std::pair{!a.bench_file.empty(), "--bench-file"},
                               std::pair{!a.opts.live_image.empty(), "--live-image"},
                               std::pair{!a.fail_on.empty(), "--fail-on"}}) {
      if (given) {
        return Status::InvalidArg(fmt::format("{} applies only with --rollout blue-green", flag));
      }
    }
    return Status::Ok();
  }
  a.opts.rollout = deploy::Rollout::kBlueGreen;
  if (a.bench_file.empty()) {
    return Status::InvalidArg(
        "--rollout blue-green needs --bench-file FILE: the SLOs the gate Job benchmarks the new "
        "colour against");
  }
  TG_ASSIGN_OR_RETURN(a.opts.bench_text,
                      common::ReadFileLimited(a.bench_file, common::kMaxConfigBytes));
  TG_RETURN_IF_ERROR(CheckGateBenchFile(a.bench_file, a.opts.bench_text));
  if (!a.opts.live_image.empty() && !IsImageReference(a.opts.live_image)) {
    return Status::InvalidArg(
        "--live-image: expected an image reference (name[:tag][@sha256:digest])");
  }
  return Status::Ok();
}

int RunK8sRender(RenderArgs a, const GlobalOptions& g) {
  // No --matrix: the embedded production matrix (deploy/matrix.production.yaml's requirements).
  auto text = a.matrix.empty()
                  ? common::Result<std::string>(std::string(policy::ProductionMatrixYaml()))
                  : common::ReadFileLimited(a.matrix, common::kMaxConfigBytes);
  if (!text.ok()) return ReportError(text.status());
  auto m = policy::ParseMatrix(*text, a.matrix.empty() ? "<embedded production>" : a.matrix);
  if (!m.ok()) return ReportError(m.status());
  static const std::regex kName("^[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?$");
  if (!std::regex_match(a.opts.name, kName)) {
    return ReportError(Status::InvalidArg(
        fmt::format("--name '{}': must be a DNS label (lower case letters, digits and '-', at "
                    "most 42 characters)",
                    a.opts.name)));
  }
  if (!IsQuantity(a.opts.cpu, true)) {
    return ReportError(
        Status::InvalidArg(fmt::format("--cpu '{}': expected a positive CPU quantity such as 2, "
                                       "0.5 or 500m",
                                       a.opts.cpu.substr(0, 64))));
  }
  if (!IsQuantity(a.opts.memory, false)) {
    return ReportError(
        Status::InvalidArg(fmt::format("--memory '{}': expected a positive memory quantity such "
                                       "as 8Gi, 512Mi or 1G",
                                       a.opts.memory.substr(0, 64))));
  }
  if (!IsImageReference(a.opts.image)) {
    return ReportError(
        Status::InvalidArg("--image: expected an image reference (name[:tag][@sha256:digest]; "
                           "letters, digits and . _ - / : @ only, at most 512 characters)"));
  }
  if (!common::IsPinnedByDigest(a.opts.image)) {
    Warn(
        fmt::format("image '{}' is not pinned by digest; `truegreen audit k8s` will report "
                    "k8s.image-digest",
                    a.opts.image));
  }
  if (Status s = CheckRolloutOptions(a); !s.ok()) return ReportError(s);
  if (!a.opts.live_image.empty() && !common::IsPinnedByDigest(a.opts.live_image)) {
    Warn(fmt::format("live image '{}' is not pinned by digest", a.opts.live_image));
  }
  a.opts.matrix_text = *text;
  std::vector<deploy::RenderJson> docs = deploy::RenderK8sObjects(*m, a.opts);
  if (g.json) {
    Print(common::WriteJson(deploy::RenderJson(docs), 2) + "\n");
  } else {
    Print(deploy::JsonToYamlDocuments(docs));
  }
  return kExitOk;
}

// The flags that shape autoscaling, alerts and the blue-green rollout.
void AddRolloutFlags(CLI::App* render, RenderArgs& a) {
  render
      ->add_option("--models-pvc", a.opts.models_pvc,
                   "PersistentVolumeClaim holding the model repository, mounted read-only at "
                   "/models (default <name>-models)")
      ->type_name("NAME");
  render->add_option("--min-replicas", a.opts.min_replicas, "HPA minimum replicas (default 1)")
      ->check(CLI::Range(1, 1000))
      ->type_name("N");
  render->add_option("--max-replicas", a.opts.max_replicas, "HPA maximum replicas (default 4)")
      ->check(CLI::Range(1, 1000))
      ->type_name("N");
  render
      ->add_option("--target-queue-depth", a.opts.target_queue_depth,
                   "HPA target: average queued requests per pod (default 4)")
      ->check(CLI::Range(1, 100000))
      ->type_name("N");
  render
      ->add_option("--gpu-util-floor", a.opts.gpu_util_floor,
                   "Alert when GPU utilisation is below this while requests queue (default 0.5)")
      ->check(CLI::Range(0.0, 1.0))
      ->type_name("FRACTION");
  render
      ->add_option("--rollout", a.rollout,
                   "single | blue-green (two colours, a gated promotion Job; docs/DEPLOY.md)")
      ->check(CLI::IsMember({"single", "blue-green"}));
  render->add_option("--live", a.opts.live, "blue-green: the colour live now (default blue)")
      ->check(CLI::IsMember({"blue", "green"}));
  render
      ->add_option("--live-image", a.opts.live_image,
                   "blue-green: the live colour's image (default --image, which the candidate "
                   "colour runs)")
      ->type_name("REF");
  render
      ->add_option("--bench-file", a.bench_file,
                   "blue-green: bench file with the SLOs the gate checks (slo: [...])")
      ->type_name("FILE");
  render->add_option("--fail-on", a.fail_on,
                     "blue-green: compare gate against the live baseline (repeatable; default "
                     "\"p95 +10%\" and \"throughput -10%\")");
}

}  // namespace

void RegisterAuditConfigCommands(CLI::App& app, CLI::App& audit, GlobalOptions& g,
                                 CommandRegistry& r) {
  auto dfa = std::make_shared<DockerfileArgs>();
  CLI::App* df = audit.add_subcommand(
      "dockerfile",
      "Audit a Dockerfile: multi-stage, runtime stage free of build tools, bases "
      "pinned by digest, caches removed, .dockerignore coverage");
  df->add_option("DOCKERFILE", dfa->file, "Path of the Dockerfile")->required()->type_name("FILE");
  df->add_option("--context", dfa->context,
                 "Build context directory (default: the Dockerfile's directory)")
      ->type_name("DIR");
  df->add_option("--build-arg", dfa->build_args, "NAME=VALUE for a global ARG used in FROM")
      ->type_name("NAME=VALUE");
  AddAuditOutputFlags(df, &dfa->output);
  r.Add(df, [dfa, &g] { return RunAuditDockerfile(*dfa, g); });

  auto ka = std::make_shared<K8sArgs>();
  CLI::App* k8s = audit.add_subcommand(
      "k8s",
      "Audit Kubernetes manifests (files or kustomize directories): GPU requests, "
      "probes, node affinity vs. the matrix, resources, image digests");
  k8s->add_option("FILE", ka->files, "Manifest files (multi-document YAML) or kustomize dirs")
      ->required()
      ->type_name("FILE|DIR");
  k8s->add_option("--matrix", ka->matrix, "Version matrix: check node affinity against it")
      ->type_name("FILE");
  k8s->add_option("--runtime-class", ka->runtime_class,
                  "The RuntimeClass GPU pods must use on this cluster (k8s.runtime-class)")
      ->type_name("NAME");
  k8s->add_option("--kustomize", ka->kustomize,
                  "How kustomize directories are rendered: auto (kubectl kustomize or kustomize "
                  "build when on PATH, else the built-in reader), builtin, or a command such as "
                  "'kustomize build' (default auto)")
      ->type_name("auto|builtin|CMD");
  AddAuditOutputFlags(k8s, &ka->output);
  r.Add(k8s, [ka, &g] { return RunAuditK8s(*ka, g); });

  CLI::App* group = app.add_subcommand("k8s", "Kubernetes objects for truegreen");
  group->require_subcommand(1);
  auto ra = std::make_shared<RenderArgs>();
  CLI::App* render = group->add_subcommand(
      "render",
      "Print the Kubernetes objects for a version matrix: Deployment, Service, autoscaling on "
      "queue depth, monitoring, alerts, node admission; --rollout blue-green adds a gated "
      "promotion (YAML; --json for a JSON array)");
  render
      ->add_option("--matrix", ra->matrix,
                   "Version matrix file (default: the embedded production matrix, as "
                   "deploy/matrix.production.yaml)")
      ->type_name("FILE");
  render->add_option("--image", ra->opts.image, "Image reference, pinned: name@sha256:<digest>")
      ->type_name("REF");
  render->add_option("--name", ra->opts.name, "Object name prefix (default truegreen)");
  render->add_option("--port", ra->opts.port, "HTTP port (default 8000)")
      ->check(CLI::Range(1, 65535));
  render->add_option("--cpu", ra->opts.cpu, "CPU request (default 2)");
  render->add_option("--memory", ra->opts.memory, "Memory request and limit (default 8Gi)");
  AddRolloutFlags(render, *ra);
  r.Add(render, [ra, &g] { return RunK8sRender(*ra, g); });
  RegisterK8sApiCommands(*group, g, r);
}

}  // namespace tg::cli
