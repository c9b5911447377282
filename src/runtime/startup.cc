#include "runtime/startup.h"

#include <chrono>

#include "common/log.h"
#include "policy/matrix.h"
#include "probe/probe.h"
#include "runtime/ort_api.h"

namespace tg::runtime {
namespace {

using common::Result;
using common::Status;
using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Records one step; returns `st` so a refusal can be returned in one line.
Status Record(StartupReport* r, const std::string& name, Clock::time_point t0, const Status& st,
              bool production, const std::string& detail = "") {
  StartupStep s;
  s.name = name;
  s.ms = MsSince(t0);
  s.outcome = st.ok() ? "ok" : (production ? "refused" : "advisory");
  s.detail = st.ok() ? detail : st.message();
  r->steps.push_back(std::move(s));
  return production ? st : Status::Ok();
}

// The ORT core facts of this process's own load: version, build info, compiled providers and
// flavor. Providers are not registered here (that is the factory's job, in its own environment).
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

// snapshot + admit: refuses drift (exit 4); the rest is the factory's to prove. When the node has
// integrity findings too, the factory's exact cause (exit 3) comes first, as in admission's own
// verdict: the drift refusal is then `deferred` until the factory has attached.
Status AdmitSteps(const RuntimePolicy& policy, const common::LibraryLoader& loader,
                  const StartupOptions& options, StartupReport* report, Status* deferred) {
  const bool production = policy.profile == Profile::kProduction;
  auto t0 = Clock::now();
  probe::ProbeOptions po;
  po.root = options.root;
  probe::Snapshot snap = probe::TakeSnapshot(loader, po);
  CompleteOrtCore(loader, &snap.onnxruntime);
  TG_RETURN_IF_ERROR(Record(report, "snapshot", t0, Status::Ok(), production));

  t0 = Clock::now();
  Result<policy::Matrix> matrix =
      policy.matrix_path.empty()
          ? Result<policy::Matrix>(production ? policy::ProductionMatrix() : policy::DevMatrix())
          : policy::LoadMatrix(policy.matrix_path);
  if (!matrix.ok()) return matrix.status().WithPrefix("runtime policy " + policy.source);
  report->admission = policy::Admit(snap, *matrix);
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
    return Record(report, "admit", t0, Status::Ok(), production, detail + drift);
  }
  return Record(report, "admit", t0, st, production, detail);
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

}  // namespace

Result<StartupChain> StartupChain::Start(const RuntimePolicy& policy,
                                         const common::LibraryLoader& loader,
                                         const StartupOptions& options, StartupReport* report) {
  const auto start = Clock::now();
  const bool production = policy.profile == Profile::kProduction;
  StartupChain chain;
  Status deferred_drift;
  Status st = AdmitSteps(policy, loader, options, report, &deferred_drift);
  if (st.ok()) {
    auto t0 = Clock::now();
    auto factory = SessionFactory::Create(policy, loader);
    // The factory's failure is fatal in dev too: there is nothing to run on.
    st = Record(report, "factory", t0, factory.ok() ? deferred_drift : factory.status(), true);
    if (factory.ok()) chain.factory_ = std::move(factory).value();
  }
  for (std::size_t i = 0; st.ok() && i < options.models.size(); ++i) {
    auto t0 = Clock::now();
    auto s = chain.factory_.Open(options.models[i], options.open);
    st = Record(report, "open", t0, s.status(), true, options.models[i]);
    if (s.ok()) chain.sessions_.push_back(std::move(s).value());
  }
  if (st.ok() && options.canary) {
    auto t0 = Clock::now();
    report->canary = RunCanary(*options.canary);
    Status c = report->canary->verdict == "PASS"
                   ? Status::Ok()
                   : Status::Unavailable("op canary " + report->canary->verdict + ": " +
                                         report->canary->reason);
    st = Record(report, "canary", t0, c, production, report->canary->reason);
  }
  for (std::size_t i = 0; st.ok() && i < chain.sessions_.size() && options.warmup_runs > 0; ++i) {
    auto t0 = Clock::now();
    auto in = WarmupInputs(chain.sessions_[i]);
    Status w = in.status();
    std::vector<Tensor> out;
    for (int k = 0; w.ok() && k < options.warmup_runs; ++k)
      w = chain.sessions_[i].Run(*in, {}, &out);
    st = Record(report, "warmup", t0, w, true, options.models[i]);
  }
  report->total_ms = MsSince(start);
  if (!st.ok()) return st;
  return chain;
}

common::Json StartupReport::ToJson() const {
  common::Json steps_json = common::Json::array();
  for (const auto& s : steps) {
    steps_json.push_back(
        {{"step", s.name}, {"outcome", s.outcome}, {"ms", s.ms}, {"detail", s.detail}});
  }
  common::Json j = {{"steps", steps_json}, {"total_ms", total_ms}};
  if (admission) {
    j["admission"] = {{"verdict", std::string(policy::VerdictName(admission->verdict))},
                      {"causes", admission->ToJson()["causes"]}};
  }
  if (canary) j["canary"] = CanaryReportToJson(*canary);
  return j;
}

}  // namespace tg::runtime
