// Admission control: does a node's capability snapshot satisfy the version matrix and the
// NVIDIA/ONNX Runtime compatibility rules?
//
// Admit() is a pure function (snapshot + matrix -> report): no IO, no library calls, no globals,
// so `admit`, `doctor` and the startup chain (runtime/startup.h: run, generate, serve) share it
// and tests drive it with synthesized snapshots. Every check yields one line: PASS, WARN or
// FAIL. A FAIL carries what was found, what was required and the likely cause in plain words, and
// is one of two kinds:
//   integrity — no usable GPU path (missing driver, device, provider, ...)      -> exit 3
//   drift     — the GPU path works but a version differs from the matrix        -> exit 4
// Integrity dominates drift. With a development matrix (require_gpu: false) integrity failures
// are reported as WARN and the verdict is DEGRADED (exit 0); drift still fails.
//
// Thread safety: pure functions over value types; safe from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/config.h"
#include "policy/matrix.h"
#include "probe/snapshot.h"

namespace tg::policy {

enum class CheckResult { kPass, kWarn, kFail };
std::string_view CheckResultName(CheckResult r);  // "PASS" | "WARN" | "FAIL"

enum class FailureKind { kNone, kIntegrity, kDrift };
std::string_view FailureKindName(FailureKind k);  // "none" | "integrity" | "drift"

struct Check {
  std::string id;     // stable dotted id: "driver.library", "onnxruntime.provider.CUDA..."
  std::string title;  // short human name: "NVIDIA driver library (libcuda.so.1)"
  CheckResult result = CheckResult::kPass;
  // For FAIL: the exit-code class. For a WARN that a dev matrix downgraded from an integrity
  // failure: kIntegrity (so callers can tell "degraded" from "merely noteworthy").
  FailureKind kind = FailureKind::kNone;
  std::string found;     // what the snapshot shows
  std::string required;  // what the matrix / rule requires ("" for informational PASS lines)
  std::string cause;     // WARN/FAIL: likely cause and fix, in plain words
};

enum class Verdict {
  kAccelerated,     // every requirement met: the GPU fast path is available
  kDegraded,        // dev matrix: GPU path missing but CPU allowed (exit 0, never "accelerated")
  kDrift,           // GPU path usable but versions differ from the matrix (exit 4)
  kNotAccelerated,  // no usable GPU path (exit 3)
};
// "ACCELERATED" | "DEGRADED (dev policy: CPU allowed)" | "VERSION DRIFT" | "NOT ACCELERATED"
std::string_view VerdictName(Verdict v);

struct AdmissionReport {
  std::string matrix_name;
  std::string matrix_source;
  std::string matrix_fingerprint;
  std::vector<Check> checks;  // in evaluation order: root causes come before their consequences
  Verdict verdict = Verdict::kAccelerated;
  int exit_code = 0;  // ExitCodeForVerdict(verdict) (policy/verdict.h)

  // FAIL checks (and, for DEGRADED, the downgraded WARNs), in order; the first is the root cause.
  // The pointers point into `checks` and live as long as this report is not changed.
  std::vector<const Check*> Causes() const;
  // The check with this id, or nullptr.
  const Check* Find(std::string_view id) const;

  // {"verdict", "accelerated", "exit_code", "matrix", "checks", "causes": [ids]}.
  common::Json ToJson() const;
  // One line per check, then the verdict line. `color` adds ANSI colours (terminals only).
  std::string ToText(bool color = false) const;
  // The per-check lines of ToText without the verdict line (for a caller whose verdict also
  // weighs the startup steps and the canary: policy/verdict.h).
  std::string ChecksText(bool color = false) const;
};

// Runs every check of `matrix` against `snapshot`. Never fails (a missing fact is a check that
// fails); pure.
AdmissionReport Admit(const probe::Snapshot& snapshot, const Matrix& matrix);

// Plain-words explanation of a dynamic loader error text ("libcuda.so.1: cannot open shared
// object file ..." -> "the NVIDIA driver is not mounted into this container ..."), or "" when the
// text names nothing we recognise. Exposed for the runtime and for tests.
std::string ExplainLoadError(std::string_view loader_error);

// Minimum driver major for a CUDA major (13 -> 580, 12 -> 525, 11 -> 450), 0 when unknown.
int DriverFloorForCudaMajor(int cuda_major);

}  // namespace tg::policy
