#include "runtime/canary.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "common/clock.h"
#include "common/file_util.h"
#include "common/json_writer.h"
#include "common/process.h"
#include "common/strings.h"
#include "runtime/canary_ops.h"

namespace tg::runtime {
namespace {

using common::Json;
using common::Status;

constexpr const char* kFaultEnv = "TG_CANARY_FAULT";

// --------------------------------------------------------------------------------------------
// Child side

// TG_CANARY_FAULT="<kind>:<case>[,<kind>:<case>...]": case name -> kind.
using Faults = std::map<std::string, std::string>;

Faults ReadFaults() {
  Faults f;
  const char* v = std::getenv(kFaultEnv);
  if (v == nullptr) return f;
  for (const std::string& item : common::Split(v, ',', common::SplitMode::kSkipEmpty)) {
    auto colon = item.find(':');
    if (colon != std::string::npos) f[item.substr(colon + 1)] = item.substr(0, colon);
  }
  return f;
}

// The provider the case's op ran on: a GPU provider when any node went there (the op under
// test is the only compute node), else the CPU.
std::string ProviderOf(const SessionReport& rep) {
  std::string best;
  for (const auto& [prov, count] : rep.placement.nodes_per_provider) {
    if (count <= 0) continue;
    if (prov != "CPUExecutionProvider") return prov;
    best = prov;
  }
  if (!best.empty()) return best;
  for (const auto& p : rep.providers) {
    if (p.attached) return p.name;
  }
  return "";
}

common::Result<Tensor> RunOnce(const Session& s, const CanaryCase& c) {
  std::vector<Tensor> out;
  TG_RETURN_IF_ERROR(s.Run(c.inputs, {"y"}, &out));
  if (out.size() != 1 || out[0].dtype() != DataType::kFloat32) {
    return Status::Internal("the model's output y is not one float32 tensor");
  }
  return std::move(out[0]);
}

// Compares with the CPU reference: |a - b| <= 1e-2 + 1e-2 |b| everywhere (TF32 and reordered
// sums stay well inside that; a provider calling the wrong host entry does not).
void Compare(const Tensor& ref, const Tensor& got, Json* r) {
  if (ref.shape() != got.shape()) {
    (*r)["status"] = "mismatch";
    (*r)["detail"] =
        "output shape " + ShapeToString(got.shape()) + ", CPU gives " + ShapeToString(ref.shape());
    return;
  }
  const float* a = got.data<float>();
  const float* b = ref.data<float>();
  double worst = 0.0;
  std::int64_t worst_at = -1, bad = 0;
  for (std::int64_t i = 0; i < ref.element_count(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    const bool ok = d <= 1e-2 + 1e-2 * std::fabs(b[i]);
    if (!ok || std::isnan(a[i])) ++bad;
    if (d > worst || std::isnan(d)) {
      worst = std::isnan(d) ? INFINITY : d;
      worst_at = i;
    }
  }
  (*r)["max_abs_diff"] = std::isfinite(worst) ? worst : 1e30;
  if (bad == 0) {
    (*r)["status"] = "ok";
    return;
  }
  std::ostringstream d;
  d << bad << " of " << ref.element_count() << " elements differ from the CPU result (max |diff| "
    << worst << " at element " << worst_at << ": " << a[worst_at] << " vs " << b[worst_at] << ")";
  (*r)["status"] = "mismatch";
  (*r)["detail"] = d.str();
}

Json RunCase(const SessionFactory& factory, const CanaryCase& c, const std::string& path,
             const Faults& faults) {
  Json r = {{"event", "result"}, {"case", c.name}, {"status", "error"}};
  auto it = faults.find(c.name);
  const std::string fault = it == faults.end() ? "" : it->second;
  if (fault == "segv") {
    // Like a provider crashing inside the core: the default action, so that even a sanitizer's
    // handler cannot turn the signal into an ordinary exit.
    ::signal(SIGSEGV, SIG_DFL);
    ::raise(SIGSEGV);
  }
  if (fault == "hang") {
    while (true) ::pause();
  }
  Status st = common::WriteFileAtomic(path, c.model);
  if (!st.ok()) {
    r["detail"] = st.message();
    return r;
  }
  OpenOptions ref_opts;
  ref_opts.placement_proof = false;
  ref_opts.attention_check = false;
  ref_opts.cpu_reference = true;
  auto ref_session = factory.Open(path, ref_opts);
  if (!ref_session.ok()) {
    r["detail"] = "CPU reference: " + ref_session.status().message();
    return r;
  }
  auto ref = RunOnce(*ref_session, c);
  if (!ref.ok()) {
    r["detail"] = "CPU reference: " + ref.status().message();
    return r;
  }
  OpenOptions opts;
  opts.attention_check = false;
  Status violation;  // placement is judged elsewhere; the canary is about running right
  auto session = factory.OpenForDiagnosis(path, opts, &violation);
  if (!session.ok()) {
    r["detail"] = session.status().message();
    return r;
  }
  r["provider"] = ProviderOf(session->report());
  auto got = RunOnce(*session, c);
  if (!got.ok()) {
    r["detail"] = got.status().message();
    return r;
  }
  if (fault == "error") {
    r["detail"] = std::string("injected error (") + kFaultEnv + ")";
    return r;
  }
  if (fault == "wrong" && got->element_count() > 0) got->data<float>()[0] += 1.0f;
  Compare(*ref, *got, &r);
  return r;
}

void Emit(std::FILE* out, const Json& j) {
  const std::string s = common::WriteJson(j, -1, common::JsonNotice::kNone);
  std::fprintf(out, "%s\n", s.c_str());
  std::fflush(out);
}

// --------------------------------------------------------------------------------------------
// Parent side

std::string Tail(const std::string& s, std::size_t n) {
  std::string t = s.size() > n ? s.substr(s.size() - n) : s;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

struct ChildOutcome {
  std::string pending;  // a case begun without a result
  bool fatal = false;
  std::string fatal_message;
};

// Reads the child's JSON lines into the report.
ChildOutcome ParseChild(const std::string& out, CanaryReport* rep) {
  ChildOutcome o;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    auto j = common::ParseJson(line, "canary child");
    if (!j.ok() || !j->is_object() || !j->contains("event")) continue;
    const std::string ev = (*j)["event"].is_string() ? (*j)["event"].get<std::string>() : "";
    if (ev == "providers" && (*j)["gpu"].is_array()) {
      rep->gpu_providers.clear();
      for (const auto& p : (*j)["gpu"]) {
        if (p.is_string()) rep->gpu_providers.push_back(p.get<std::string>());
      }
    } else if (ev == "fatal") {
      o.fatal = true;
      o.fatal_message = j->value("message", std::string());
    } else if (ev == "begin") {
      o.pending = j->value("case", std::string());
    } else if (ev == "result") {
      const std::string name = j->value("case", std::string());
      for (auto& c : rep->cases) {
        if (c.name != name) continue;
        c.status = j->value("status", std::string("error"));
        c.provider = j->value("provider", std::string());
        c.detail = j->value("detail", std::string());
        c.max_abs_diff = j->value("max_abs_diff", 0.0);
      }
      if (name == o.pending) o.pending.clear();
    }
  }
  return o;
}

// The case the child died in: crash (signal named), hang (killed at the time limit) or error.
void MarkPending(const std::string& name, const common::ProcessResult& pr,
                 std::chrono::milliseconds timeout, CanaryReport* rep) {
  for (auto& c : rep->cases) {
    if (c.name != name) continue;
    // The child died before naming the node's provider: the first GPU provider would have taken
    // the op; with none attached it ran on the CPU.
    if (c.provider.empty()) {
      c.provider = rep->gpu_providers.empty() ? "CPUExecutionProvider" : rep->gpu_providers.front();
    }
    if (pr.timed_out) {
      c.status = "hang";
      c.detail = "no result within " + std::to_string(timeout.count()) +
                 " ms: the child was killed (SIGKILL)";
    } else if (pr.term_signal != 0) {
      c.status = "crash";
      c.detail = "the child process died of " + common::SignalName(pr.term_signal);
    } else if (pr.err.find("AddressSanitizer: SEGV") != std::string::npos) {
      c.status = "crash";
      c.detail = "the child process died of SIGSEGV (reported by AddressSanitizer)";
    } else {
      c.status = "error";
      c.detail =
          "the child exited with code " + std::to_string(pr.exit_code) + ": " + Tail(pr.err, 400);
    }
  }
}

void Conclude(CanaryReport* rep) {
  for (const auto& c : rep->cases) {
    if (c.status == "ok" || c.status == "not_run") continue;
    rep->verdict = policy::CanaryOutcome::kFail;
    rep->reason = c.name + " on " + (c.provider.empty() ? "the attached provider" : c.provider) +
                  ": " + c.status + (c.detail.empty() ? "" : " (" + c.detail + ")");
    return;
  }
  const bool all_ok = std::all_of(rep->cases.begin(), rep->cases.end(),
                                  [](const CanaryCaseResult& c) { return c.status == "ok"; });
  if (rep->gpu_providers.empty()) {
    rep->verdict = policy::CanaryOutcome::kNotRun;
    if (rep->reason.empty()) rep->reason = "no GPU provider attached: nothing to prove";
  } else if (!all_ok) {
    rep->verdict = policy::CanaryOutcome::kNotRun;
    if (rep->reason.empty()) rep->reason = "not every op ran";
  } else {
    rep->verdict = policy::CanaryOutcome::kPass;
    rep->reason = std::to_string(rep->cases.size()) + " ops match the CPU on " +
                  common::Join(rep->gpu_providers, ",");
  }
}

bool LoadCached(const std::string& file, CanaryReport* rep) {
  auto text = common::ReadFileLimited(file, 1u << 20);
  if (!text.ok()) return false;
  auto j = common::ParseJson(*text, file);
  if (!j.ok() || !j->is_object() || !(*j)["cases"].is_array()) return false;
  try {
    auto verdict = policy::ParseCanaryOutcome((*j)["verdict"].get<std::string>());
    if (!verdict) return false;
    rep->verdict = *verdict;
    rep->reason = (*j)["reason"].get<std::string>();
    rep->gpu_providers = (*j)["gpu_providers"].get<std::vector<std::string>>();
    rep->cases.clear();
    for (const auto& c : (*j)["cases"]) {
      CanaryCaseResult r;
      r.name = c.at("name").get<std::string>();
      r.op_type = c.at("op_type").get<std::string>();
      r.status = c.at("status").get<std::string>();
      r.provider = c.at("provider").get<std::string>();
      r.detail = c.at("detail").get<std::string>();
      r.max_abs_diff = c.at("max_abs_diff").get<double>();
      rep->cases.push_back(std::move(r));
    }
  } catch (const std::exception&) {
    return false;  // a damaged cache file is a miss, never a verdict
  }
  return rep->verdict != policy::CanaryOutcome::kNotRun;
}

// One pass of children over the cases still to run; a crash or hang restarts the child after
// the case it died in.
void RunChildren(const CanaryOptions& o, CanaryReport* rep) {
  while (true) {
    std::vector<std::string> remaining;
    for (const auto& c : rep->cases) {
      if (c.status == "not_run") remaining.push_back(c.name);
    }
    if (remaining.empty()) return;
    std::vector<std::string> argv = o.child_argv;
    if (!o.cases_flag.empty()) argv.push_back(o.cases_flag);
    argv.push_back(common::Join(remaining, ","));
    common::ProcessOptions po;
    po.timeout = o.timeout;
    po.max_output_bytes = 4u << 20;
    const common::ProcessResult pr = common::RunProcess(argv, po);
    ++rep->children;
    if (!pr.started) {
      rep->reason = "the canary child could not start: " + pr.error;
      return;
    }
    const ChildOutcome oc = ParseChild(pr.out, rep);
    if (!oc.pending.empty()) {
      MarkPending(oc.pending, pr, o.timeout, rep);
      continue;
    }
    if (oc.fatal || pr.exit_code != 0) {
      rep->reason = "the canary child could not run: " +
                    (oc.fatal ? oc.fatal_message
                              : "exit " + std::to_string(pr.exit_code) + ": " + Tail(pr.err, 400));
      return;
    }
    // A clean exit that left cases unanswered would loop for ever: stop and say so.
    const bool progress = std::any_of(rep->cases.begin(), rep->cases.end(), [&](const auto& c) {
      return c.status != "not_run" &&
             std::find(remaining.begin(), remaining.end(), c.name) != remaining.end();
    });
    if (!progress) {
      rep->reason = "the canary child answered none of " + common::Join(remaining, ",");
      return;
    }
  }
}

}  // namespace

int RunCanaryChild(const SessionFactory& factory, const std::vector<std::string>& cases,
                   std::FILE* out) {
  std::vector<std::string> gpu;
  for (const auto& a : factory.prepared_providers()) {
    if (a.attached && a.path != AttachPath::kCpu) gpu.push_back(a.name);
  }
  Emit(out, {{"event", "providers"}, {"gpu", gpu}});
  std::string tmpl = (std::filesystem::temp_directory_path() / "truegreen-canary-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    const common::Status s = common::Status::Unavailable("cannot create a temporary directory");
    Emit(out, {{"event", "fatal"}, {"message", s.message()}});
    return common::ExitCodeFromStatus(s);
  }
  const Faults faults = ReadFaults();
  int index = 0;
  for (const CanaryCase& c : BuiltinCanaryCases()) {
    ++index;
    if (!cases.empty() && std::find(cases.begin(), cases.end(), c.name) == cases.end()) continue;
    Emit(out, {{"event", "begin"}, {"case", c.name}});
    const std::string path = tmpl + "/case" + std::to_string(index) + ".onnx";
    Emit(out, RunCase(factory, c, path, faults));
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  std::error_code ec;
  std::filesystem::remove_all(tmpl, ec);
  return 0;
}

std::string DefaultCacheDir() {
  if (const char* d = std::getenv("TRUEGREEN_CACHE_DIR"); d != nullptr && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x) {
    return std::string(x) + "/truegreen";
  }
  if (const char* h = std::getenv("HOME"); h != nullptr && *h) {
    return std::string(h) + "/.cache/truegreen";
  }
  return "";
}

std::string CanaryCacheKey(const CanaryKeyInputs& key) {
  std::string m = "truegreen-canary/v1\nmatrix=" + key.matrix_fingerprint +
                  "\npolicy=" + key.policy + "\ngpu=" + key.gpu + "\n";
  for (const auto& f : key.library_files) {
    auto sha = common::Sha256File(f);
    m += "lib=" + f + " " + (sha.ok() ? *sha : std::string("unreadable")) + "\n";
  }
  m += "ops=" + CanaryOpSetHash(BuiltinCanaryCases()) + "\n";
  // The test hook changes the verdict, so it is part of the key (never set in production).
  if (const char* fault = std::getenv(kFaultEnv)) m += std::string("fault=") + fault + "\n";
  return common::Sha256Hex(m.data(), m.size());
}

CanaryReport RunCanary(const CanaryOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  CanaryReport rep;
  std::string filter;  // "" = the whole set
  for (const auto& t : o.op_types) filter += t + ",";
  for (const CanaryCase& c : BuiltinCanaryCases()) {
    if (!o.op_types.empty() &&
        std::find(o.op_types.begin(), o.op_types.end(), c.op_type) == o.op_types.end()) {
      continue;
    }
    CanaryCaseResult r;
    r.name = c.name;
    r.op_type = c.op_type;
    rep.cases.push_back(std::move(r));
  }
  if (!o.cache_dir.empty()) {
    rep.cache_key = CanaryCacheKey(o.key);
    if (!filter.empty()) {
      const std::string k = rep.cache_key + "\nop_types=" + filter;
      rep.cache_key = common::Sha256Hex(k.data(), k.size());
    }
    rep.cache_file = o.cache_dir + "/canary-" + rep.cache_key + ".json";
    CanaryReport cached = rep;
    if (LoadCached(rep.cache_file, &cached)) {
      cached.from_cache = true;
      cached.wall_ms = common::MsSince(t0);
      return cached;
    }
  }
  RunChildren(o, &rep);
  Conclude(&rep);
  rep.wall_ms = common::MsSince(t0);
  if (!rep.cache_file.empty() && rep.verdict != policy::CanaryOutcome::kNotRun) {
    std::error_code ec;
    std::filesystem::create_directories(o.cache_dir, ec);
    Status st = common::WriteFileAtomic(rep.cache_file,
                                        common::WriteJson(CanaryReportToJson(rep), 2) + "\n");
    if (!st.ok()) rep.cache_file.clear();  // not cached; the verdict itself stands
  }
  return rep;
}

Json CanaryReportToJson(const CanaryReport& r) {
  Json cases = Json::array();
  for (const auto& c : r.cases) {
    cases.push_back({{"name", c.name},
                     {"op_type", c.op_type},
                     {"status", c.status},
                     {"provider", c.provider},
                     {"detail", c.detail},
                     {"max_abs_diff", c.max_abs_diff}});
  }
  return {{"verdict", std::string(policy::CanaryOutcomeName(r.verdict))},
          {"reason", r.reason},
          {"gpu_providers", r.gpu_providers},
          {"cases", cases},
          {"from_cache", r.from_cache},
          {"cache_key", r.cache_key},
          {"cache_file", r.cache_file},
          {"children", r.children},
          {"wall_ms", r.wall_ms}};
}

std::string FormatCanaryReport(const CanaryReport& r) {
  std::string s = "op canary: " + std::string(policy::CanaryOutcomeName(r.verdict)) + " — " +
                  r.reason + (r.from_cache ? " (cached verdict)" : "") + "\n";
  int not_run = 0;
  for (const auto& c : r.cases) {
    if (c.status == "not_run") ++not_run;
    if (c.status == "ok" || c.status == "not_run") continue;
    s += "  " + c.status + "  " + c.name + (c.provider.empty() ? "" : " on " + c.provider) +
         (c.detail.empty() ? "" : ": " + c.detail) + "\n";
  }
  if (not_run > 0) s += "  " + std::to_string(not_run) + " op(s) not run\n";
  return s;
}

}  // namespace tg::runtime
