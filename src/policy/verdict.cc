#include "policy/verdict.h"

#include "common/outcome.h"

namespace tg::policy {

std::string_view StepOutcomeName(StepOutcome o) {
  switch (o) {
    case StepOutcome::kRefused:
      return "refused";
    case StepOutcome::kAdvisory:
      return "advisory";
    case StepOutcome::kSkipped:
      return "skipped";
    case StepOutcome::kOk:
      break;
  }
  return "ok";
}

std::string_view CanaryOutcomeName(CanaryOutcome o) {
  switch (o) {
    case CanaryOutcome::kPass:
      return "PASS";
    case CanaryOutcome::kFail:
      return "FAIL";
    case CanaryOutcome::kNotRun:
      break;
  }
  return "NOT_RUN";
}

std::optional<CanaryOutcome> ParseCanaryOutcome(std::string_view name) {
  for (CanaryOutcome o : {CanaryOutcome::kNotRun, CanaryOutcome::kPass, CanaryOutcome::kFail}) {
    if (CanaryOutcomeName(o) == name) return o;
  }
  return std::nullopt;
}

int ExitCodeForVerdict(Verdict v) {
  switch (v) {
    case Verdict::kNotAccelerated:
      return common::ExitCodeFromOutcome(common::Outcome::kNotAccelerated);
    case Verdict::kDrift:
      return common::ExitCodeFromOutcome(common::Outcome::kDrift);
    case Verdict::kAccelerated:
    case Verdict::kDegraded:
      break;
  }
  return common::ExitCodeFromOutcome(common::Outcome::kOk);
}

NodeVerdict JudgeNode(const AdmissionReport& admission, const std::vector<StepResult>& steps,
                      const std::optional<CanaryFinding>& canary) {
  NodeVerdict v;
  v.verdict = admission.verdict;
  v.exit_code = ExitCodeForVerdict(admission.verdict);
  for (const Check* c : admission.Causes())
    v.causes.push_back({c->id, c->found, c->required, c->cause});
  if (admission.verdict != Verdict::kAccelerated) return v;
  // The chain stops at its first refusal, so the last refused step is the one that stopped it.
  const StepResult* refused = nullptr;
  for (const StepResult& s : steps) {
    if (s.outcome == StepOutcome::kRefused && s.name != "admit") refused = &s;
  }
  if (refused != nullptr) {
    const common::StatusCode code =
        refused->code == common::StatusCode::kOk ? common::StatusCode::kInternal : refused->code;
    v.exit_code = common::ExitCodeFromStatus(common::Status(code, refused->detail));
    v.verdict = code == common::StatusCode::kFailedPrecondition ? Verdict::kDrift
                                                                : Verdict::kNotAccelerated;
    v.overturned = "admission passed, but startup step '" + refused->name +
                   "' was refused: " + refused->detail;
    v.causes.push_back({"startup." + refused->name, refused->detail, "",
                        "the step's message names what is missing or wrong"});
    return v;
  }
  if (canary && canary->outcome != CanaryOutcome::kPass) {
    v.verdict = Verdict::kNotAccelerated;
    v.exit_code = ExitCodeForVerdict(Verdict::kNotAccelerated);
    v.overturned = "the op canary did not pass: " + canary->reason;
    v.causes.push_back(
        {"canary", std::string(CanaryOutcomeName(canary->outcome)) + ": " + canary->reason, "PASS",
         "the op named ran wrong or not at all on the GPU provider: pair the ONNX "
         "Runtime core with provider libraries built for it"});
  }
  return v;
}

common::Json NodeVerdict::ToJson() const {
  common::Json ids = common::Json::array();
  for (const Cause& c : causes) ids.push_back(c.id);
  common::Json j = {{"verdict", std::string(VerdictName(verdict))},
                    {"accelerated", accelerated()},
                    {"exit_code", exit_code},
                    {"causes", ids}};
  if (!overturned.empty()) j["verdict_reason"] = overturned;
  return j;
}

std::string NodeVerdict::ToText(std::string_view matrix) const {
  const std::string head =
      "verdict: " + std::string(VerdictName(verdict)) + " (exit " + std::to_string(exit_code);
  // An overturned verdict is not the matrix's: the reason takes the matrix's place.
  if (!overturned.empty()) return head + "): " + overturned + "\n";
  return head + ", matrix " + std::string(matrix) + ")\n";
}

}  // namespace tg::policy
