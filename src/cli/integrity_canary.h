// The op canary's command-line side (integrity area): `doctor --canary` runs it, and the hidden
// `__canary-child` subcommand is the child process it runs (runtime/canary.h).
#pragma once

#include <string>

#include "cli/command.h"
#include "probe/snapshot.h"
#include "runtime/canary.h"
#include "runtime/startup.h"

namespace tg::cli {

struct CanaryFlags {
  bool run = false;        // doctor --canary
  std::string cache_dir;   // "" = $TRUEGREEN_CACHE_DIR, $XDG_CACHE_HOME/truegreen, ~/.cache/...
  bool no_cache = false;   // --canary-no-cache
  int timeout_ms = 60000;  // per child process
};

// Adds --canary, --canary-cache-dir, --canary-no-cache and --canary-timeout-ms to `doctor`.
void AddCanaryFlags(CLI::App* doctor, CanaryFlags* flags);

// Runs the canary for this node: the child is this binary with the same --lib-path/--policy.
runtime::CanaryReport RunDoctorCanary(const GlobalOptions& g, const CanaryFlags& f,
                                      const probe::Snapshot& s,
                                      const std::string& matrix_fingerprint);

// The canary options of the startup chain (run, generate): this binary with the same
// --lib-path/--policy as the child, the default cache, the default time limit. The chain fills the
// key from its snapshot and the op types from the opened models.
runtime::CanaryOptions StartupCanaryOptions(const GlobalOptions& g);
// The same with doctor's --canary-* flags applied (time limit, cache directory or no cache).
runtime::CanaryOptions DoctorCanaryOptions(const GlobalOptions& g, const CanaryFlags& f);

// The startup chain of run and generate up to its "factory" step: opens this process's one
// OrtRuntime through g's loader, sets `options->canary` to StartupCanaryOptions(g) and starts the
// chain with `policy`, recording into `startup` (not null). The caller then opens its model,
// records "open" and calls Finish with the same `options`. Errors: the chain's refusal.
common::Result<runtime::StartupChain> StartCommandChain(const GlobalOptions& g,
                                                        const runtime::RuntimePolicy& policy,
                                                        runtime::StartupOptions* options,
                                                        runtime::StartupReport* startup);

// The error path of a command that ran the startup chain (run, generate): ReportError with the
// chain's steps so far beside the error object under --json, else as lines on stderr before the
// error line. Returns the exit code of `status` (common::ExitCodeFromStatus).
int ReportChainError(const GlobalOptions& g, const common::Status& status,
                     const runtime::StartupReport& startup);

// The hidden `__canary-child --cases LIST` subcommand.
void RegisterCanaryChildCommand(CLI::App& app, GlobalOptions& g, CommandRegistry& r);

}  // namespace tg::cli
