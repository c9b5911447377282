// The one verdict value: what admission, the startup steps and the op canary found about a node,
// reduced to one Verdict, its causes and the one exit code derived from them.
//
// JudgeNode is called by `admit` and `doctor` and by the startup chain's report
// (runtime::StartupReport::Verdict: run, generate, serve's admission); the verdict's text and JSON
// are rendered from the value by NodeVerdict::ToText / ToJson.
//
// Thread safety: pure functions over value types; safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "policy/admission.h"

namespace tg::policy {

// The outcome of one startup step (snapshot, admit, factory, open, canary, warmup).
enum class StepOutcome {
  kOk,        // the step ran and its requirement holds
  kRefused,   // the step failed and the command stops (production, or a failure fatal in dev)
  kAdvisory,  // the step failed but the dev policy lets the command go on
  kSkipped,   // the step did not run (the detail says why); never counts as proof
};
// "ok" | "refused" | "advisory" | "skipped"
std::string_view StepOutcomeName(StepOutcome o);

// One startup step as recorded by the startup chain (runtime/startup.h).
struct StepResult {
  std::string name;  // "snapshot" "admit" "factory" "open" "canary" "warmup"
  StepOutcome outcome = StepOutcome::kOk;
  // The failed step's status code (kRefused, kAdvisory); kOk otherwise.
  common::StatusCode code = common::StatusCode::kOk;
  double ms = 0.0;
  std::string detail;  // the failure's message, or why the step was skipped
};

// The op canary's verdict (runtime/canary.h).
enum class CanaryOutcome {
  kNotRun,  // nothing proven: no GPU provider attached, or the child could not start
  kPass,    // every op ran on a GPU provider and matched the CPU
  kFail,    // a crash, hang, error or mismatch
};
// "NOT_RUN" | "PASS" | "FAIL"
std::string_view CanaryOutcomeName(CanaryOutcome o);
// The inverse of CanaryOutcomeName; nullopt for any other text.
std::optional<CanaryOutcome> ParseCanaryOutcome(std::string_view name);

// The exit code of a verdict standing alone: ACCELERATED and DEGRADED 0, VERSION DRIFT 4,
// NOT ACCELERATED 3 (common::ExitCode).
int ExitCodeForVerdict(Verdict v);

// The op canary as the verdict sees it: only a canary that was asked for can overturn a verdict.
struct CanaryFinding {
  CanaryOutcome outcome = CanaryOutcome::kNotRun;
  std::string reason;  // one line: why FAIL / NOT_RUN, or what PASS covered
};

// One cause of a verdict other than ACCELERATED, root cause first.
struct Cause {
  std::string id;        // admission check id ("driver.library"), "startup.<step>" or "canary"
  std::string found;     // what was found
  std::string required;  // what is required ("" when the check states none)
  std::string fix;       // likely cause and fix, in plain words
};

struct NodeVerdict {
  Verdict verdict = Verdict::kAccelerated;
  int exit_code = common::kExitOk;
  // Why admission's verdict did not stand ("" when it did): the refused step, else the canary.
  std::string overturned;
  std::vector<Cause> causes;  // admission's causes, then the overturning step or canary
  // ACCELERATED, which is more than exit 0 (DEGRADED exits 0 too).
  bool accelerated() const { return verdict == Verdict::kAccelerated; }
  // {"verdict", "accelerated", "exit_code", "causes": [ids], "verdict_reason" (when overturned)}.
  common::Json ToJson() const;
  // "verdict: ACCELERATED (exit 0, matrix M)\n"; when overturned, the reason instead of the
  // matrix: "verdict: NOT ACCELERATED (exit 3): <overturned>\n".
  std::string ToText(std::string_view matrix) const;
};

// The verdict for a node: admission's verdict and exit code, unless admission found it
// ACCELERATED and a later step disagrees. Then the last refused step after "admit" decides (its
// status code through common::ExitCodeFromStatus: VERSION DRIFT for FAILED_PRECONDITION, NOT
// ACCELERATED otherwise), else a canary that was asked for and did not pass (NOT ACCELERATED,
// exit 3: a canary that could not run proves nothing). Steps and canary never improve a verdict.
NodeVerdict JudgeNode(const AdmissionReport& admission, const std::vector<StepResult>& steps,
                      const std::optional<CanaryFinding>& canary);

}  // namespace tg::policy
