// The verdict value over every combination of admission verdict, startup step outcome and canary
// outcome: the exit code, the verdict and the named cause, and the rendered text and JSON.
#include "policy/verdict.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"

namespace tg::policy {
namespace {

using common::StatusCode;

// An admission report with the given verdict and, for anything but ACCELERATED, one cause.
AdmissionReport Admission(Verdict v) {
  AdmissionReport r;
  r.matrix_name = "production";
  r.verdict = v;
  r.exit_code = ExitCodeForVerdict(v);
  Check c;
  c.id = "driver.library";
  c.found = "absent";
  c.required = "libcuda.so.1";
  c.cause = "mount the driver";
  switch (v) {
    case Verdict::kNotAccelerated:
      c.result = CheckResult::kFail;
      c.kind = FailureKind::kIntegrity;
      r.checks.push_back(c);
      break;
    case Verdict::kDrift:
      c.id = "onnxruntime.version";
      c.result = CheckResult::kFail;
      c.kind = FailureKind::kDrift;
      r.checks.push_back(c);
      break;
    case Verdict::kDegraded:
      c.result = CheckResult::kWarn;
      c.kind = FailureKind::kIntegrity;
      r.checks.push_back(c);
      break;
    case Verdict::kAccelerated:
      c.result = CheckResult::kPass;
      r.checks.push_back(c);
      break;
  }
  return r;
}

// The startup steps after admission: snapshot and admit ok, then the factory with `outcome` and
// `code` (skipped steps after a refusal are not recorded, as in the chain).
std::vector<StepResult> Steps(StepOutcome factory, StatusCode code) {
  std::vector<StepResult> s = {{"snapshot", StepOutcome::kOk, StatusCode::kOk, 1.0, ""},
                               {"admit", StepOutcome::kOk, StatusCode::kOk, 1.0, ""}};
  s.push_back({"factory", factory, code, 2.0, factory == StepOutcome::kOk ? "" : "no provider"});
  if (factory != StepOutcome::kRefused) {
    s.push_back({"canary", StepOutcome::kSkipped, StatusCode::kOk, 0.0, "skipped: not asked"});
  }
  return s;
}

struct StepCase {
  StepOutcome outcome;
  StatusCode code;
};

const Verdict kVerdicts[] = {Verdict::kAccelerated, Verdict::kDegraded, Verdict::kDrift,
                             Verdict::kNotAccelerated};
const StepCase kSteps[] = {
    {StepOutcome::kOk, StatusCode::kOk},
    {StepOutcome::kAdvisory, StatusCode::kUnavailable},
    {StepOutcome::kRefused, StatusCode::kUnavailable},
    {StepOutcome::kRefused, StatusCode::kUnsupported},
    {StepOutcome::kRefused, StatusCode::kFailedPrecondition},
    {StepOutcome::kRefused, StatusCode::kNotFound},
    {StepOutcome::kRefused, StatusCode::kInvalidArg},
    {StepOutcome::kRefused, StatusCode::kInternal},
};
const std::optional<CanaryOutcome> kCanaries[] = {std::nullopt, CanaryOutcome::kPass,
                                                  CanaryOutcome::kFail, CanaryOutcome::kNotRun};

// The expected exit code, written out case by case rather than derived from the code under test.
int ExpectedExit(Verdict admission, StepCase step, std::optional<CanaryOutcome> canary) {
  if (admission == Verdict::kNotAccelerated) return 3;
  if (admission == Verdict::kDrift) return 4;
  if (admission == Verdict::kDegraded) return 0;  // dev: nothing later overturns DEGRADED
  if (step.outcome == StepOutcome::kRefused) {
    switch (step.code) {
      case StatusCode::kUnavailable:
      case StatusCode::kUnsupported:
        return 3;
      case StatusCode::kFailedPrecondition:
        return 4;
      case StatusCode::kNotFound:
      case StatusCode::kInvalidArg:
        return 2;
      default:
        return 1;
    }
  }
  if (canary && *canary != CanaryOutcome::kPass) return 3;
  return 0;
}

TEST(VerdictTest, EveryCombinationOfAdmissionStepsAndCanaryGivesItsExitCode) {
  std::set<int> exits_seen;  // every exit path the tables reach
  for (Verdict a : kVerdicts) {
    for (StepCase st : kSteps) {
      for (const auto& c : kCanaries) {
        const AdmissionReport r = Admission(a);
        std::optional<CanaryFinding> canary;
        if (c) canary = CanaryFinding{*c, "Slice on CUDAExecutionProvider: crash"};
        const NodeVerdict v = JudgeNode(r, Steps(st.outcome, st.code), canary);
        const std::string where = std::string(VerdictName(a)) + " / " +
                                  std::string(StepOutcomeName(st.outcome)) + " " +
                                  std::string(common::StatusCodeName(st.code)) + " / " +
                                  (c ? std::string(CanaryOutcomeName(*c)) : "no canary");
        const int want = ExpectedExit(a, st, c);
        EXPECT_EQ(v.exit_code, want) << where;
        // ACCELERATED stands only when nothing later disagreed.
        EXPECT_EQ(v.accelerated(), a == Verdict::kAccelerated && want == 0) << where;
        // A verdict is never improved, and an overturned one says why.
        if (a != Verdict::kAccelerated) {
          EXPECT_EQ(v.verdict, a) << where;
          EXPECT_TRUE(v.overturned.empty()) << where;
        } else if (want != 0) {
          EXPECT_FALSE(v.overturned.empty()) << where;
          EXPECT_EQ(v.verdict, want == 4 ? Verdict::kDrift : Verdict::kNotAccelerated) << where;
          ASSERT_FALSE(v.causes.empty()) << where;
          EXPECT_EQ(v.causes.back().id,
                    st.outcome == StepOutcome::kRefused ? "startup.factory" : "canary")
              << where;
        }
        // Admission's own causes always come first.
        if (a != Verdict::kAccelerated) {
          ASSERT_FALSE(v.causes.empty()) << where;
          EXPECT_EQ(v.causes.front().id, r.Causes().front()->id) << where;
        }
        exits_seen.insert(v.exit_code);
      }
    }
  }
  EXPECT_EQ(exits_seen, (std::set<int>{0, 1, 2, 3, 4}));
}

TEST(VerdictTest, RenderedFromTheValue) {
  const AdmissionReport ok = Admission(Verdict::kAccelerated);
  const NodeVerdict stands = JudgeNode(ok, {}, std::nullopt);
  EXPECT_EQ(stands.ToText("production"), "verdict: ACCELERATED (exit 0, matrix production)\n");
  EXPECT_EQ(ok.ToText().substr(ok.ChecksText().size()), stands.ToText("production"));
  EXPECT_EQ(stands.ToJson()["verdict"], "ACCELERATED");
  EXPECT_FALSE(stands.ToJson().contains("verdict_reason"));

  const NodeVerdict canary =
      JudgeNode(ok, {}, CanaryFinding{CanaryOutcome::kFail, "Slice on CUDA: crash (SIGSEGV)"});
  EXPECT_EQ(canary.ToText("production"),
            "verdict: NOT ACCELERATED (exit 3): the op canary did not pass: Slice on CUDA: crash "
            "(SIGSEGV)\n");
  const common::Json j = canary.ToJson();
  EXPECT_EQ(j["verdict"], "NOT ACCELERATED");
  EXPECT_EQ(j["accelerated"], false);
  EXPECT_EQ(j["exit_code"], 3);
  EXPECT_EQ(j["causes"], common::Json::array({"canary"}));
  EXPECT_EQ(j["verdict_reason"], "the op canary did not pass: Slice on CUDA: crash (SIGSEGV)");
}

TEST(VerdictTest, TheLastRefusedStepDecidesAndAdmitRefusalsAreAdmissions) {
  const AdmissionReport ok = Admission(Verdict::kAccelerated);
  std::vector<StepResult> steps = {
      {"admit", StepOutcome::kRefused, StatusCode::kFailedPrecondition, 1.0, "drift"},
      {"open", StepOutcome::kRefused, StatusCode::kUnavailable, 1.0, "placement violated"}};
  const NodeVerdict v = JudgeNode(ok, steps, std::nullopt);
  EXPECT_EQ(v.exit_code, 3);
  EXPECT_NE(v.overturned.find("'open'"), std::string::npos) << v.overturned;
  // Only an admit refusal: admission itself already spoke (its report says ACCELERATED here, so
  // the refusal is ignored rather than double counted).
  steps.pop_back();
  EXPECT_EQ(JudgeNode(ok, steps, std::nullopt).exit_code, 0);
}

TEST(VerdictTest, NamesRoundTrip) {
  for (CanaryOutcome o : {CanaryOutcome::kNotRun, CanaryOutcome::kPass, CanaryOutcome::kFail}) {
    EXPECT_EQ(ParseCanaryOutcome(CanaryOutcomeName(o)), o);
  }
  EXPECT_EQ(ParseCanaryOutcome("pass"), std::nullopt);
  EXPECT_EQ(ParseCanaryOutcome(""), std::nullopt);
  EXPECT_EQ(StepOutcomeName(StepOutcome::kOk), "ok");
  EXPECT_EQ(StepOutcomeName(StepOutcome::kRefused), "refused");
  EXPECT_EQ(StepOutcomeName(StepOutcome::kAdvisory), "advisory");
  EXPECT_EQ(StepOutcomeName(StepOutcome::kSkipped), "skipped");
  EXPECT_EQ(ExitCodeForVerdict(Verdict::kAccelerated), 0);
  EXPECT_EQ(ExitCodeForVerdict(Verdict::kDegraded), 0);
  EXPECT_EQ(ExitCodeForVerdict(Verdict::kDrift), 4);
  EXPECT_EQ(ExitCodeForVerdict(Verdict::kNotAccelerated), 3);
}

}  // namespace
}  // namespace tg::policy
