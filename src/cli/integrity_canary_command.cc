// `doctor --canary` and the hidden `__canary-child` subcommand (see runtime/canary.h).
#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "cli/integrity_canary.h"
#include "cli/output.h"
#include "common/json_writer.h"
#include "common/process.h"
#include "common/status.h"
#include "common/strings.h"
#include "runtime/canary.h"
#include "runtime/ort_runtime.h"
#include "runtime/runtime_policy.h"
#include "runtime/session.h"
#include "runtime/startup.h"

namespace tg::cli {
namespace {

// The hidden subcommand that is the op canary's child process, and its one option.
constexpr const char* kCanaryChildCommand = "__canary-child";
constexpr const char* kCasesFlag = "--cases";

int RunChild(const GlobalOptions& g, const std::string& cases) {
  auto fatal = [](const std::string& msg, int code) {
    std::string line = common::WriteJson(common::Json{{"event", "fatal"}, {"message", msg}}, -1,
                                         common::JsonNotice::kNone) +
                       "\n";
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
    return code;
  };
  auto policy = runtime::LoadRuntimePolicy(g.policy);
  if (!policy.ok())
    return fatal(policy.status().message(), common::ExitCodeFromStatus(policy.status()));
  // This process may crash: that is what it is for. Attach even to a core that cannot host the
  // provider, so the parent learns which ops fail (the serving path refuses that pair).
  runtime::OrtRuntimeOptions ro;
  ro.allow_unhostable_core = true;
  auto ort = runtime::OrtRuntime::Open(g.Loader(), ro);
  if (!ort.ok()) {
    const common::Status st = common::Status::Unavailable(ort.status().message());
    return fatal(st.message(), common::ExitCodeFromStatus(st));
  }
  auto factory = runtime::SessionFactory::Create(*policy, **ort);
  if (!factory.ok()) {
    return fatal(factory.status().message(), common::ExitCodeFromStatus(factory.status()));
  }
  return runtime::RunCanaryChild(*factory, common::Split(cases, ',', common::SplitMode::kSkipEmpty),
                                 stdout);
}

}  // namespace

void AddCanaryFlags(CLI::App* doctor, CanaryFlags* flags) {
  doctor->add_flag("--canary", flags->run,
                   "Also run every op of the built-in canary set on the attached GPU providers in "
                   "a child process and compare with the CPU (cached per node)");
  doctor
      ->add_option("--canary-cache-dir", flags->cache_dir,
                   "Canary verdict cache (default $TRUEGREEN_CACHE_DIR, else "
                   "$XDG_CACHE_HOME/truegreen or ~/.cache/truegreen)")
      ->type_name("DIR");
  doctor->add_flag("--canary-no-cache", flags->no_cache, "Neither read nor write a cached verdict");
  doctor
      ->add_option("--canary-timeout-ms", flags->timeout_ms,
                   "Time limit per canary child process (default 60000)")
      ->check(CLI::Range(100, 3600000))
      ->type_name("MS");
}

int ReportChainError(const GlobalOptions& g, const common::Status& status,
                     const runtime::StartupReport& startup) {
  if (!g.json) StderrLines("info", startup.Format());
  return ReportError(status, common::Json{{"startup", startup.ToJson()}});
}

runtime::CanaryOptions StartupCanaryOptions(const GlobalOptions& g) {
  runtime::CanaryOptions o;
  o.child_argv = {common::SelfExePath()};
  for (const auto& d : g.lib_paths) {
    o.child_argv.push_back("--lib-path");
    o.child_argv.push_back(d);
  }
  o.child_argv.insert(o.child_argv.end(),
                      {"--policy", g.policy, "--log-level", g.log_level, kCanaryChildCommand});
  o.cases_flag = kCasesFlag;
  o.cache_dir = runtime::DefaultCacheDir();
  o.key.policy = g.policy;
  return o;
}

common::Result<runtime::StartupChain> StartCommandChain(const GlobalOptions& g,
                                                        const runtime::RuntimePolicy& policy,
                                                        runtime::StartupOptions* options,
                                                        runtime::StartupReport* startup) {
  options->canary = StartupCanaryOptions(g);
  const common::LibraryLoader loader = g.Loader();
  const auto ort = runtime::OrtRuntime::Open(loader);  // the process's one runtime
  return runtime::StartupChain::Start(policy, loader, ort, *options, startup);
}

runtime::CanaryOptions DoctorCanaryOptions(const GlobalOptions& g, const CanaryFlags& f) {
  runtime::CanaryOptions o = StartupCanaryOptions(g);
  o.timeout = std::chrono::milliseconds(f.timeout_ms);
  o.cache_dir = f.no_cache ? "" : (f.cache_dir.empty() ? runtime::DefaultCacheDir() : f.cache_dir);
  return o;
}

runtime::CanaryReport RunDoctorCanary(const GlobalOptions& g, const CanaryFlags& f,
                                      const probe::Snapshot& s,
                                      const std::string& matrix_fingerprint) {
  runtime::CanaryOptions o = DoctorCanaryOptions(g, f);
  o.key.matrix_fingerprint = matrix_fingerprint;
  o.key.policy = g.policy;
  o.key.gpu = runtime::CanaryGpuKey(s);
  if (!s.onnxruntime.library.resolved_path.empty()) {
    o.key.library_files.push_back(s.onnxruntime.library.resolved_path);
  }
  for (const auto& p : s.onnxruntime.provider_libraries) {
    if (!p.file.empty()) o.key.library_files.push_back(p.file);
  }
  return runtime::RunCanary(o);
}

void RegisterCanaryChildCommand(CLI::App& app, GlobalOptions& g, CommandRegistry& r) {
  auto cases = std::make_shared<std::string>();
  CLI::App* child = app.add_subcommand(
      kCanaryChildCommand, "Internal: the op canary's child process (prints JSON lines)");
  child->group("");  // hidden from help
  child->add_option(kCasesFlag, *cases, "Comma-separated case names (default: all)");
  r.Add(child, [cases, &g] { return RunChild(g, *cases); });
}

}  // namespace tg::cli
