// The startup chain of every command that runs inference (run, generate, serve's admission gate):
// snapshot -> admit -> factory (locked providers) -> open (placement proof) -> op canary ->
// warm-up, each step timed and recorded in a StartupReport.
//
// What each step enforces in production. Under a dev policy a failed admit or canary is recorded
// as an advisory and the chain goes on; a failed factory, open or warmup refuses under every
// policy (there is nothing to run on):
//   snapshot  the node's capability snapshot without registering providers (probe::TakeSnapshot
//             plus the ORT core facts of the process-wide load, so no second provider
//             registration happens in the serving process);
//   admit     policy::Admit against the policy's matrix: version drift refuses the node
//             (FAILED_PRECONDITION, exit 4); integrity findings are left to the factory step,
//             which proves them by attaching and names the exact cause (exit 3). With both, the
//             drift is held back and returned by "factory" if attaching succeeds;
//   factory   SessionFactory::Create in the process's OrtRuntime, which the caller opened and
//             passed to Start (GPU providers locked in policy order, never the CPU);
//   open      each model opened with placement proof (violation: UNAVAILABLE, exit 3);
//   canary    the op canary (runtime/canary.h) for the op types of the opened models: anything
//             but PASS is UNAVAILABLE in production. "skipped" (never "ok", no child process)
//             with no GPU provider attached (a CPU-only dev run), when StartupOptions::canary is
//             absent, or when no model op is in the built-in set;
//   warmup    `warmup_runs` runs of each opened model on random inputs (cuDNN's algorithm search
//             and TensorRT's first-call costs are paid here, not by the first request); "skipped"
//             when no runs were asked for or no session was opened by the chain.
//
// Commands that open their sessions themselves (run opens for diagnosis, generate through the
// pipeline loader, serve per model in its sessions gate) start the chain with no `models`, record
// their "open" step with RecordStep and then call Finish, so every command reports the same steps
// in the same order.
//
// Thread safety: Start may be called from several threads at once (each with its own report);
// a StartupChain is then used like a SessionFactory (see session.h).
// Ownership: the chain owns its factory and the sessions it opened; the caller owns the report.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/config.h"
#include "common/dynlib.h"
#include "common/status.h"
#include "policy/admission.h"
#include "policy/matrix.h"
#include "policy/verdict.h"
#include "probe/snapshot.h"
#include "runtime/canary.h"
#include "runtime/ort_runtime.h"
#include "runtime/runtime_policy.h"
#include "runtime/session.h"

namespace tg::runtime {

// One step: name, outcome (policy::StepOutcome), status code, time and detail.
using StartupStep = policy::StepResult;

struct StartupReport {
  std::vector<StartupStep> steps;
  std::optional<probe::Snapshot> snapshot;  // the node as step "snapshot" saw it
  std::optional<policy::AdmissionReport> admission;
  std::optional<CanaryReport> canary;
  double total_ms = 0.0;
  // The node's verdict from admission, the steps and the canary (policy::JudgeNode); nullopt
  // when the chain stopped before admission (e.g. an unreadable matrix).
  std::optional<policy::NodeVerdict> Verdict() const;
  // {"steps": [...], "total_ms", "admission": {"verdict", "causes"}, "verdict": {...},
  // "canary": {...}}; the last three when known.
  common::Json ToJson() const;
  // One line per step: "startup: canary    skipped  0.0 ms  no GPU provider attached".
  std::string Format() const;
};

struct StartupOptions {
  std::string root = "/";           // device-node root for the snapshot (tests, chroots)
  std::vector<std::string> models;  // opened with placement proof in step "open"
  OpenOptions open;
  // Step "canary": the child command line, cache and timeout. The chain fills the key's matrix
  // fingerprint, GPU identity and library files from its snapshot, and the op types from the
  // models. Skipped (with the reason) when absent or when no GPU provider is attached.
  std::optional<CanaryOptions> canary;
  int warmup_runs = 0;  // step "warmup"; per opened model
  // doctor: the snapshot it already took (ORT core facts included) and its --matrix, used instead
  // of a fresh snapshot and the policy's matrix. Not owned; must outlive Start.
  const probe::Snapshot* snapshot = nullptr;
  const policy::Matrix* matrix = nullptr;
  // Times every step (StartupStep::ms, total_ms). Not owned; must outlive Start and Finish.
  common::Clock* clock = common::RealClock();
};

// The GPU part of the op canary's cache key: every visible device's name and UUID (NVML), else
// the CUDA driver's device names; "" on a node without a GPU.
std::string CanaryGpuKey(const probe::Snapshot& s);

class StartupChain {
 public:
  // Runs the steps in order and stops at the first refusal, whose Status is returned (the report
  // says which step and why). With `options.models` empty it stops after "factory" (the caller
  // opens, records "open" and calls Finish). `report` must not be null. `runtime` is the
  // process's ONNX Runtime as the caller's OrtRuntime::Open returned it (not owned), or why it
  // could not be opened: the "factory" step then refuses with that error (UNAVAILABLE in
  // production: no GPU path). The snapshot step loads through `loader`.
  static common::Result<StartupChain> Start(const RuntimePolicy& policy,
                                            const common::LibraryLoader& loader,
                                            const common::Result<OrtRuntime*>& runtime,
                                            const StartupOptions& options, StartupReport* report);

  // Steps "canary" (over the op types of `model_paths`; the whole built-in set when it is empty,
  // as for doctor) and "warmup" (over sessions()); returns the refusal, if any (the report says
  // which step). Records into `report`, which must not be null. Start calls it when
  // `options.models` is not empty.
  common::Status Finish(const std::vector<std::string>& model_paths, const StartupOptions& options,
                        StartupReport* report);

  // Records a step the caller ran itself (e.g. "open") and adds `ms` to report->total_ms: outcome
  // "ok", or for a failure "refused" when `production` and "advisory" otherwise (a caller for
  // whom the failure is fatal under every policy passes true). `detail` is kept for an OK step;
  // a failure's detail is its message.
  static void RecordStep(StartupReport* report, const std::string& name, double ms,
                         const common::Status& status, bool production, const std::string& detail);

  const SessionFactory& factory() const { return factory_; }
  // The sessions of StartupOptions::models, in that order.
  std::vector<Session>& sessions() { return sessions_; }

 private:
  SessionFactory factory_;
  std::vector<Session> sessions_;
  bool production_ = true;
  // Canary key parts taken from the snapshot.
  std::string matrix_fingerprint_;
  std::string gpu_identity_;
  std::vector<std::string> library_files_;
};

}  // namespace tg::runtime
