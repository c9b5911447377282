// What a command found when it ran to its end: a result, not an error. Errors leave through a
// Status and common::ExitCodeFromStatus; results leave through ExitCodeFromOutcome. These two
// functions are the only places that choose a non-zero exit code (tests/house_rules_test.cc).
//
// Thread safety: pure functions over an enum; safe from any thread.
#pragma once

#include <string_view>

namespace tg::common {

enum class Outcome {
  kOk,                 // nothing the command checks failed: exit 0
  kNotAccelerated,     // no usable GPU path was found (fallback, no device/provider): exit 3
  kDrift,              // versions or capabilities differ from the pinned ones: exit 4
  kPerformanceFailed,  // a performance gate or SLO failed: exit 5
  kAuditFailed,        // an audit rule or budget failed: exit 6
  kInterrupted,        // SIGINT stopped the command before it finished measuring: exit 130
};

// The one mapping from a result to a process exit code (the README's exit-code table):
// kOk 0, kNotAccelerated 3, kDrift 4, kPerformanceFailed 5, kAuditFailed 6, kInterrupted 130.
int ExitCodeFromOutcome(Outcome o);

// Which result decides when a command finds several: kInterrupted (nothing measured is complete)
// before kNotAccelerated before kDrift before kAuditFailed before kPerformanceFailed before kOk.
// Returns the more severe of `a` and `b` (either when equal).
Outcome WorseOutcome(Outcome a, Outcome b);

// "ok" "not-accelerated" "drift" "performance-failed" "audit-failed" "interrupted".
std::string_view OutcomeName(Outcome o);

}  // namespace tg::common
