#include "common/outcome.h"

#include "common/status.h"

namespace tg::common {
namespace {

// 128 + SIGINT, the shell's convention for a process ended by Ctrl-C.
constexpr int kExitInterrupted = 130;

// Higher is more severe; the order WorseOutcome documents.
int Severity(Outcome o) {
  switch (o) {
    case Outcome::kInterrupted:
      return 5;
    case Outcome::kNotAccelerated:
      return 4;
    case Outcome::kDrift:
      return 3;
    case Outcome::kAuditFailed:
      return 2;
    case Outcome::kPerformanceFailed:
      return 1;
    case Outcome::kOk:
      break;
  }
  return 0;
}

}  // namespace

int ExitCodeFromOutcome(Outcome o) {
  switch (o) {
    case Outcome::kNotAccelerated:
      return kExitIntegrity;
    case Outcome::kDrift:
      return kExitDrift;
    case Outcome::kPerformanceFailed:
      return kExitPerformance;
    case Outcome::kAuditFailed:
      return kExitAudit;
    case Outcome::kInterrupted:
      return kExitInterrupted;
    case Outcome::kOk:
      break;
  }
  return kExitOk;
}

Outcome WorseOutcome(Outcome a, Outcome b) { return Severity(b) > Severity(a) ? b : a; }

std::string_view OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kNotAccelerated:
      return "not-accelerated";
    case Outcome::kDrift:
      return "drift";
    case Outcome::kPerformanceFailed:
      return "performance-failed";
    case Outcome::kAuditFailed:
      return "audit-failed";
    case Outcome::kInterrupted:
      return "interrupted";
    case Outcome::kOk:
      break;
  }
  return "ok";
}

}  // namespace tg::common
