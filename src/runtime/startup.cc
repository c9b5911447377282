#include "runtime/startup.h"

#include <chrono>
#include <cstdio>
#include <set>

#include "common/file_util.h"
#include "common/log.h"
#include "policy/matrix.h"
#include "probe/probe.h"
#include "runtime/canary_ops.h"
#include "runtime/onnx_graph.h"
#include "runtime/ort_api.h"

namespace tg::runtime {
namespace {

using common::Result;
using common::Status;
using TimePoint = common::Clock::TimePoint;

// Records one step that began at `t0` on `clock`; returns `st` so a refusal can be returned in
// one line.
Status Record(StartupReport* r, const std::string& name, const common::Clock& clock, TimePoint t0,
              const Status& st, bool production, const std::string& detail = "") {
  StartupStep s;
  s.name = name;
  s.ms = clock.MsSince(t0);
  s.outcome = st.ok()      ? policy::StepOutcome::kOk
              : production ? policy::StepOutcome::kRefused
                           : policy::StepOutcome::kAdvisory;
  s.code = st.code();
  s.detail = st.ok() ? detail : st.message();
  r->steps.push_back(std::move(s));
  return production ? st : Status::Ok();
}

// The ORT core facts of this process's own load: version, build info, compiled providers and
// flavor. Providers are not registered here: the factory registers each one once, in the process's
// OrtRuntime.
void CompleteOrtCore(const common::LibraryLoader& loader, probe::OrtInfo* o) {
  o->library.soname = kOrtLibraryName;
  auto ort = LoadOrt(loader);
  if (!ort.ok()) {
    o->library.error = ort.status().message();
    return;
  }
  o->library.loaded = true;
  o->library.resolved_path = ort->library_path;
  o->library.version = ort->version;
  o->build_info = ort->build_info;
  o->compiled_providers = ort->providers;
  o->core_flavor = "cpu";
  for (const auto& p : ort->providers) {
    if (p == "CUDAExecutionProvider") o->core_flavor = "gpu";
  }
}

// A GPU provider the factory attached (the canary has nothing to compare without one).
bool GpuProviderAttached(const SessionFactory& f) {
  for (const auto& p : f.prepared_providers()) {
    if (p.attached && p.path != AttachPath::kCpu && p.name != "CPUExecutionProvider") return true;
  }
  return false;
}

// The op types of `paths` that the built-in canary set covers (sorted, unique); `uncovered` gets
// those it neither covers nor excludes (canary_ops.h). A model that cannot be read contributes
// nothing here: opening it already proved or refused it.
std::vector<std::string> CanaryOpTypes(const std::vector<std::string>& paths,
                                       std::vector<std::string>* uncovered) {
  std::set<std::string> used;
  for (const auto& p : paths) {
    auto g = ReadOnnxGraph(p);
    if (!g.ok()) continue;
    for (const auto& n : g->nodes) used.insert(n.op_type);
  }
  *uncovered = UncoveredOpTypes({used.begin(), used.end()});
  std::set<std::string> covered;
  for (const auto& c : BuiltinCanaryCases()) {
    if (used.count(c.op_type) != 0) covered.insert(c.op_type);
  }
  return {covered.begin(), covered.end()};
}

// snapshot + admit: refuses drift (exit 4); the rest is the factory's to prove. When the node has
// integrity findings too, the factory's exact cause (exit 3) comes first, as in admission's own
// verdict: the drift refusal is then `deferred` until the factory has attached.
Status AdmitSteps(const RuntimePolicy& policy, const common::LibraryLoader& loader,
                  const StartupOptions& options, StartupReport* report, Status* deferred,
                  CanaryKeyInputs* key) {
  const bool production = policy.profile == Profile::kProduction;
  const common::Clock& clock = *options.clock;
  auto t0 = clock.Now();
  probe::ProbeOptions po;
  po.root = options.root;
  probe::Snapshot snap;
  if (options.snapshot != nullptr) {
    snap = *options.snapshot;  // taken by the caller, ORT core facts included
  } else {
    snap = probe::TakeSnapshot(loader, po);
    CompleteOrtCore(loader, &snap.onnxruntime);
  }
  key->gpu = CanaryGpuKey(snap);
  if (!snap.onnxruntime.library.resolved_path.empty()) {
    key->library_files.push_back(snap.onnxruntime.library.resolved_path);
  }
  for (const auto& p : snap.onnxruntime.provider_libraries) {
    if (!p.file.empty()) key->library_files.push_back(p.file);
  }
  report->snapshot = snap;
  TG_RETURN_IF_ERROR(Record(report, "snapshot", clock, t0, Status::Ok(), production));

  t0 = clock.Now();
  Result<policy::Matrix> matrix =
      options.matrix != nullptr ? Result<policy::Matrix>(*options.matrix)
      : policy.matrix_path.empty()
          ? Result<policy::Matrix>(production ? policy::ProductionMatrix() : policy::DevMatrix())
          : policy::LoadMatrix(policy.matrix_path);
  if (!matrix.ok()) return matrix.status().WithPrefix("runtime policy " + policy.source);
  report->admission = policy::Admit(snap, *matrix);
  key->matrix_fingerprint = report->admission->matrix_fingerprint;
  std::string drift, integrity;
  for (const auto& c : report->admission->checks) {
    if (c.result != policy::CheckResult::kFail) continue;
    std::string line =
        "\n  - [" + c.id + "] " + c.found + " (required " + c.required + "): " + c.cause;
    (c.kind == policy::FailureKind::kDrift ? drift : integrity) += line;
  }
  Status st = Status::Ok();
  if (!drift.empty()) {
    st = Status::FailedPrecondition("version drift against the matrix " +
                                    (matrix->name.empty() ? matrix->source : matrix->name) + ":" +
                                    drift + "\nrun `truegreen doctor` for the full report");
  }
  const std::string detail =
      integrity.empty() ? "" : "integrity findings, proven at attach:" + integrity;
  if (!st.ok() && !integrity.empty() && production) {
    *deferred = st;
    return Record(report, "admit", clock, t0, Status::Ok(), production, detail + drift);
  }
  return Record(report, "admit", clock, t0, st, production, detail);
}

// Random inputs for one session (dynamic dimensions as 1).
Result<std::vector<NamedTensor>> WarmupInputs(const Session& s) {
  std::vector<NamedTensor> in;
  std::uint64_t seed = 1;
  for (const auto& info : s.inputs()) {
    std::vector<std::int64_t> shape = info.shape;
    for (auto& d : shape) d = d < 0 ? 1 : d;
    auto t = RandomTensor(info.dtype, shape, seed++);
    if (!t.ok()) return t.status().WithPrefix("warm-up input " + info.name);
    in.push_back({info.name, std::move(t).value()});
  }
  return in;
}

// doctor --matrix M judges the node against M, so the factory attaches M's GPU providers in M's
// order (and keys engines by M), not the ones the --policy names; a matrix without GPU providers
// leaves the policy's.
RuntimePolicy FactoryPolicy(const RuntimePolicy& policy, const StartupOptions& options) {
  RuntimePolicy p = policy;
  if (options.matrix == nullptr) return p;
  std::vector<std::string> gpu;
  for (const auto& name : options.matrix->onnxruntime.providers) {
    if (CanonicalProviderName(name).ok()) gpu.push_back(name);
  }
  if (!gpu.empty()) p.providers = std::move(gpu);
  if (common::IsRegularFile(options.matrix->source)) p.matrix_path = options.matrix->source;
  return p;
}

}  // namespace

Result<StartupChain> StartupChain::Start(const RuntimePolicy& policy,
                                         const common::LibraryLoader& loader,
                                         const Result<OrtRuntime*>& runtime,
                                         const StartupOptions& options, StartupReport* report) {
  const common::Clock& clock = *options.clock;
  const auto start = clock.Now();
  StartupChain chain;
  chain.production_ = policy.profile == Profile::kProduction;
  Status deferred_drift;
  CanaryKeyInputs key;
  Status st = AdmitSteps(policy, loader, options, report, &deferred_drift, &key);
  chain.matrix_fingerprint_ = key.matrix_fingerprint;
  chain.gpu_identity_ = key.gpu;
  chain.library_files_ = key.library_files;
  if (st.ok()) {
    auto t0 = clock.Now();
    // Without ONNX Runtime there is no GPU path: production names it UNAVAILABLE (exit 3).
    Result<SessionFactory> factory =
        runtime.ok() ? SessionFactory::Create(FactoryPolicy(policy, options), **runtime)
        : chain.production_
            ? Result<SessionFactory>(Status::Unavailable(runtime.status().message()))
            : Result<SessionFactory>(runtime.status());
    // The factory's failure is fatal in dev too: there is nothing to run on.
    st = Record(report, "factory", clock, t0, factory.ok() ? deferred_drift : factory.status(),
                true);
    if (factory.ok()) chain.factory_ = std::move(factory).value();
  }
  for (std::size_t i = 0; st.ok() && i < options.models.size(); ++i) {
    auto t0 = clock.Now();
    auto s = chain.factory_.Open(options.models[i], options.open);
    st = Record(report, "open", clock, t0, s.status(), true, options.models[i]);
    if (s.ok()) chain.sessions_.push_back(std::move(s).value());
  }
  if (st.ok() && !options.models.empty()) st = chain.Finish(options.models, options, report);
  report->total_ms = clock.MsSince(start);
  if (!st.ok()) return st;
  return chain;
}

Status StartupChain::Finish(const std::vector<std::string>& model_paths,
                            const StartupOptions& options, StartupReport* report) {
  const common::Clock& clock = *options.clock;
  const auto start = clock.Now();
  auto t0 = start;
  Status st = Status::Ok();
  std::vector<std::string> ops, uncovered;
  if (!GpuProviderAttached(factory_)) {
    // A CPU-only run: nothing to canary, and no child process (tests run this path often).
    RecordStep(report, "canary", clock.MsSince(t0), Status::Ok(), production_,
               "skipped: no GPU provider attached");
    report->steps.back().outcome = policy::StepOutcome::kSkipped;
  } else if (!options.canary) {
    RecordStep(report, "canary", clock.MsSince(t0), Status::Ok(), production_,
               "skipped: not asked for");
    report->steps.back().outcome = policy::StepOutcome::kSkipped;
  } else if (ops = CanaryOpTypes(model_paths, &uncovered); !model_paths.empty() && ops.empty()) {
    RecordStep(report, "canary", clock.MsSince(t0), Status::Ok(), production_,
               "skipped: no op of the model(s) is in the built-in canary set");
    report->steps.back().outcome = policy::StepOutcome::kSkipped;
  } else {
    CanaryOptions o = *options.canary;
    o.op_types = ops;
    o.key.matrix_fingerprint = matrix_fingerprint_;
    o.key.gpu = gpu_identity_;
    o.key.library_files = library_files_;
    report->canary = RunCanary(o);
    const policy::CanaryOutcome v = report->canary->verdict;
    Status c = v == policy::CanaryOutcome::kPass
                   ? Status::Ok()
                   : Status::Unavailable("op canary " + std::string(policy::CanaryOutcomeName(v)) +
                                         ": " + report->canary->reason);
    std::string detail = report->canary->reason;
    if (report->canary->from_cache) detail += " (cached)";
    if (!uncovered.empty()) {
      detail += "; op types of the model(s) not in the canary set:";
      for (const auto& op : uncovered) detail += " " + op;
    }
    st = Record(report, "canary", clock, t0, c, production_, detail);
  }
  if (st.ok() && (options.warmup_runs <= 0 || sessions_.empty())) {
    RecordStep(report, "warmup", 0.0, Status::Ok(), production_, "skipped: no warm-up runs asked");
    report->steps.back().outcome = policy::StepOutcome::kSkipped;
  }
  for (std::size_t i = 0; st.ok() && options.warmup_runs > 0 && i < sessions_.size(); ++i) {
    t0 = clock.Now();
    auto in = WarmupInputs(sessions_[i]);
    Status w = in.status();
    std::vector<Tensor> out;
    for (int k = 0; w.ok() && k < options.warmup_runs; ++k) w = sessions_[i].Run(*in, {}, &out);
    st = Record(report, "warmup", clock, t0, w, true, sessions_[i].report().model_path);
  }
  report->total_ms += clock.MsSince(start);
  return st;
}

void StartupChain::RecordStep(StartupReport* report, const std::string& name, double ms,
                              const Status& status, bool production, const std::string& detail) {
  StartupStep s;
  s.name = name;
  s.ms = ms;
  s.outcome = status.ok()  ? policy::StepOutcome::kOk
              : production ? policy::StepOutcome::kRefused
                           : policy::StepOutcome::kAdvisory;
  s.code = status.code();
  s.detail = status.ok() ? detail : status.message();
  report->steps.push_back(std::move(s));
  report->total_ms += ms;
}

common::Json StartupReport::ToJson() const {
  common::Json steps_json = common::Json::array();
  for (const auto& s : steps) {
    steps_json.push_back({{"step", s.name},
                          {"outcome", std::string(policy::StepOutcomeName(s.outcome))},
                          {"ms", s.ms},
                          {"detail", s.detail}});
  }
  common::Json j = {{"steps", steps_json}, {"total_ms", total_ms}};
  if (admission) {
    j["admission"] = {{"verdict", std::string(policy::VerdictName(admission->verdict))},
                      {"causes", admission->ToJson()["causes"]}};
  }
  if (auto v = Verdict()) j["verdict"] = v->ToJson();
  if (canary) j["canary"] = CanaryReportToJson(*canary);
  return j;
}

std::optional<policy::NodeVerdict> StartupReport::Verdict() const {
  if (!admission) return std::nullopt;
  std::optional<policy::CanaryFinding> c;
  if (canary) c = policy::CanaryFinding{canary->verdict, canary->reason};
  return policy::JudgeNode(*admission, steps, c);
}

namespace {

// A step's detail on one line: a detail that announces a list ("...:") followed by "  - item"
// lines lists the items after its colon, separated by "; ", so no line ends on an announcement;
// any further text follows the same way.
std::string OneLine(const std::string& detail) {
  std::string out;
  std::size_t pos = 0;
  while (pos <= detail.size()) {
    const std::size_t nl = std::min(detail.find('\n', pos), detail.size());
    std::string_view part(detail.data() + pos, nl - pos);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    if (part.starts_with("- ")) part.remove_prefix(2);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    if (!part.empty()) {
      if (!out.empty()) out += out.back() == ':' ? " " : "; ";
      out += part;
    }
    pos = nl + 1;
  }
  // Whatever was announced and not listed: the line still does not end on a colon.
  while (!out.empty() && (out.back() == ':' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

std::string StartupReport::Format() const {
  std::string out;
  char line[160];
  for (const auto& s : steps) {
    std::snprintf(line, sizeof line, "startup:    %-8s %-8s %9.1f ms  ", s.name.c_str(),
                  std::string(policy::StepOutcomeName(s.outcome)).c_str(), s.ms);
    out += line + OneLine(s.detail) + "\n";
  }
  return out;
}

// The GPU part of the canary's cache key: every visible device's name and UUID.
std::string CanaryGpuKey(const probe::Snapshot& s) {
  std::string id;
  for (const auto& d : s.nvml.devices) {
    id += d.name.value_or("?") + " " + d.uuid.value_or("?") + ";";
  }
  if (id.empty()) {
    for (const auto& d : s.cuda_driver.devices) id += d.name.value_or("?") + ";";
  }
  return id;
}

}  // namespace tg::runtime
