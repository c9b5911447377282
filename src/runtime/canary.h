// The op canary: before a node is called GPU-ready, each op of the built-in set (canary_ops.h) runs
// on the attached GPU providers in a CHILD process and is compared with the CPU provider's result.
// A GPU provider paired with the wrong core crashes the process inside ONNX Runtime (SIGSEGV), so
// the parent must survive whatever the child does: a crash (signal named), a hang (killed after
// the time limit), an error or a wrong result each become a verdict naming the op, the provider
// and the signal or difference, and the child is restarted for the ops after the one that failed.
//
// The child is the command the caller gives (CanaryOptions::child_argv: for the CLI, the truegreen
// binary itself with its own hidden child subcommand and the same --lib-path/--policy) followed by
// CanaryOptions::cases_flag and the comma-separated case names; it prints one JSON line per event
// (RunCanaryChild). Test hook, honoured only by the child: TG_CANARY_FAULT="<kind>:<case>" with
// kind segv (the child dies of SIGSEGV), hang (it never answers), error, or wrong (its result is
// perturbed), so every branch of the harness is testable without a GPU.
//
// Verdicts: PASS (every op ran on a GPU provider and matched), FAIL (a crash, hang, error or
// mismatch), NOT_RUN (no GPU provider attached, or the child could not start: nothing proven, so
// never a pass). PASS and FAIL are cached in `cache_dir` under a key of the matrix fingerprint,
// the sha256 of the core and provider libraries, the GPU and the op-set hash, so a warm node pays
// once.
//
// Thread safety: RunCanary may run concurrently (each call owns its child and files).
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "common/config.h"
#include "policy/verdict.h"
#include "runtime/session.h"

namespace tg::runtime {

struct CanaryCaseResult {
  std::string name;     // "Slice", "Resize(sizes)"
  std::string op_type;  // "Slice", "Resize"
  // "ok" | "crash" | "hang" | "error" | "mismatch" | "not_run"
  std::string status = "not_run";
  std::string provider;  // provider its node ran on ("" unknown)
  std::string detail;    // signal, error text or the difference
  double max_abs_diff = 0.0;
};

struct CanaryReport {
  policy::CanaryOutcome verdict = policy::CanaryOutcome::kNotRun;
  std::string reason;                      // one line: why FAIL / NOT_RUN
  std::vector<std::string> gpu_providers;  // GPU providers the child attached
  std::vector<CanaryCaseResult> cases;
  bool from_cache = false;
  std::string cache_key;   // "" when caching is off
  std::string cache_file;  // "" when caching is off
  int children = 0;        // child processes started (0 on a cache hit)
  double wall_ms = 0.0;
};

// What identifies a verdict (the cache key): everything that could change it.
struct CanaryKeyInputs {
  std::string matrix_fingerprint;
  std::vector<std::string> library_files;  // the core and the GPU provider libraries
  std::string gpu;                         // name + UUID (or "" when none is visible)
  std::string policy;                      // --policy value (attach order and options)
};

struct CanaryOptions {
  // The child command line, complete but for the cases: the program, its options and the
  // subcommand that runs RunCanaryChild. Given by the caller; runtime/ names no command.
  std::vector<std::string> child_argv;
  // The flag that precedes the comma-separated case names on the child's command line ("": the
  // names follow child_argv directly).
  std::string cases_flag;
  std::chrono::milliseconds timeout{60000};  // per child process
  std::string cache_dir;                     // "" = no cache
  CanaryKeyInputs key;
  // Only the built-in cases whose op type is listed (the ops of the models a command opened);
  // empty = the whole set. Part of the cache key.
  std::vector<std::string> op_types;
};

// Runs the built-in set (canary_ops.h) in child processes; never fails (problems are verdicts).
CanaryReport RunCanary(const CanaryOptions& options);

// The child side: opens every case named in `cases` (all when empty) with `factory` and a CPU
// reference (the factory's OrtRuntime should allow an unhostable core: the child exists to find
// out which ops crash such a pair, in a process that may die), runs both and prints JSON lines to
// `out`: {"event":"providers","gpu":[...]}, then per case {"event":"begin","case":N} and
// {"event":"result","case":N,"status":...}. Returns the exit code: 0, or 3 (UNAVAILABLE, through
// common::ExitCodeFromStatus) after a {"event":"fatal"} line when it cannot make its temporary
// folder.
int RunCanaryChild(const SessionFactory& factory, const std::vector<std::string>& cases,
                   std::FILE* out);

// truegreen's cache folder (the canary's verdicts, the rewritten attention models): the
// TRUEGREEN_CACHE_DIR environment variable, else $XDG_CACHE_HOME/truegreen, else
// $HOME/.cache/truegreen; "" (no cache) when none is set. Reads the environment only.
std::string DefaultCacheDir();

// The cache key (lowercase hex sha256) for `key` and the op set; file hashes are read here.
std::string CanaryCacheKey(const CanaryKeyInputs& key);
// The report as JSON and as text (verdict line first, then the cases that did not pass). Pure.
common::Json CanaryReportToJson(const CanaryReport& r);
std::string FormatCanaryReport(const CanaryReport& r);

}  // namespace tg::runtime
