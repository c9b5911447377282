// The findings cap: the first N in input order are kept, the rest counted by rule and severity;
// exactly N is not a truncation, N+1 is; the truncation finding is an error no suppression
// touches, so a truncated audit fails the gate whatever was suppressed.
#include "audit/report/finding_cap.h"

#include <gtest/gtest.h>

#include "audit/report/report_format.h"
#include "audit/report/rule_ids.h"

namespace tg::audit {
namespace {

Finding Make(std::string rule, Severity s, int line) {
  Finding f;
  f.rule = std::move(rule);
  f.severity = s;
  f.line = line;
  f.message = "m" + std::to_string(line);
  return f;
}

std::vector<Finding> Numbered(int n) {
  std::vector<Finding> v;
  for (int i = 1; i <= n; ++i) {
    v.push_back(Make(i % 3 == 0 ? "k8s.resources" : "k8s.image-digest",
                     i % 3 == 0 ? Severity::kWarning : Severity::kError, i));
  }
  return v;
}

TEST(FindingCap, ExactlyNIsNotTruncated) {
  std::vector<Finding> v = Numbered(5);
  FindingCap cap(5);
  cap.Trim(&v);
  EXPECT_EQ(v.size(), 5u);
  EXPECT_FALSE(cap.truncated());
  EXPECT_EQ(cap.dropped(), 0u);
}

TEST(FindingCap, NPlusOneKeepsTheFirstNAndCountsTheRest) {
  std::vector<Finding> v = Numbered(6);
  FindingCap cap(5);
  cap.Trim(&v);
  ASSERT_EQ(v.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(v[i].line, i + 1);  // input order, the first five
  EXPECT_TRUE(cap.truncated());
  EXPECT_EQ(cap.dropped(), 1u);
  const auto key = std::make_pair(std::string("k8s.resources"), Severity::kWarning);
  ASSERT_EQ(cap.dropped_by_rule().count(key), 1u);
  EXPECT_EQ(cap.dropped_by_rule().at(key), 1u);
}

TEST(FindingCap, CountsByRuleAndSeverityAcrossTrims) {
  FindingCap cap(4);
  std::vector<Finding> v = Numbered(3);
  cap.Trim(&v);  // under the cap: nothing counted
  for (int i = 4; i <= 12; ++i) {
    v.push_back(Make(i % 3 == 0 ? "k8s.resources" : "k8s.image-digest",
                     i % 3 == 0 ? Severity::kWarning : Severity::kError, i));
    v.push_back(Make("k8s.image-digest", Severity::kWarning, 100 + i));
    cap.Trim(&v);  // as AuditK8sText does after every document
  }
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[3].line, 4);
  EXPECT_EQ(cap.dropped(), 9u * 2 - 1);
  EXPECT_EQ(cap.dropped_by_rule().at({"k8s.resources", Severity::kWarning}), 3u);
  EXPECT_EQ(cap.dropped_by_rule().at({"k8s.image-digest", Severity::kError}), 5u);
  EXPECT_EQ(cap.dropped_by_rule().at({"k8s.image-digest", Severity::kWarning}), 9u);
  FindingCap other(4);
  other.CountDropped("k8s.resources", Severity::kWarning);
  cap.Merge(other);
  EXPECT_EQ(cap.dropped(), 18u);
  EXPECT_EQ(cap.dropped_by_rule().at({"k8s.resources", Severity::kWarning}), 4u);
}

TEST(FindingCap, TruncationFindingNamesCountsByRuleLargestFirst) {
  FindingCap cap(2);
  for (int i = 0; i < 7; ++i) cap.CountDropped("k8s.resources", Severity::kError);
  for (int i = 0; i < 3; ++i) cap.CountDropped("k8s.probes", Severity::kWarning);
  const Finding f = cap.TruncationFinding();
  EXPECT_EQ(f.rule, kTruncatedRule);
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_TRUE(IsAuditRuleId(f.rule));
  EXPECT_NE(f.message.find("10 more finding(s) not listed: at most 2 are listed"),
            std::string::npos)
      << f.message;
  const std::size_t a = f.message.find("7 k8s.resources (error)");
  const std::size_t b = f.message.find("3 k8s.probes (warning)");
  ASSERT_NE(a, std::string::npos) << f.message;
  ASSERT_NE(b, std::string::npos) << f.message;
  EXPECT_LT(a, b);
  EXPECT_NE(f.fix.find("--max-findings"), std::string::npos);
}

TEST(FindingCap, ManyRulesListTwentyThenCountTheRest) {
  FindingCap cap(1);
  for (int r = 0; r < 25; ++r) cap.CountDropped("p" + std::to_string(r), Severity::kError);
  const std::string m = cap.TruncationFinding().message;
  EXPECT_NE(m.find("and 5 more rule(s)"), std::string::npos) << m;
}

TEST(FindingCap, SuppressionsNeverTouchTheTruncationFindingAndTheGateStillFails) {
  std::vector<Finding> v = Numbered(4);
  FindingCap cap(2);
  cap.Trim(&v);
  Suppressions s;
  s.source = "s.yaml";
  for (const char* rule : {"k8s.image-digest", "k8s.resources", "audit.findings-truncated"}) {
    Suppression e;
    e.rule = rule;
    e.reason = "accepted";
    e.line = 1;
    s.entries.push_back(e);
  }
  ApplySuppressions(s, "2026-01-01", &v);
  // Suppressed findings are still listed: they keep their places under the cap.
  ASSERT_EQ(v.size(), 2u);
  EXPECT_TRUE(v[0].suppressed && v[1].suppressed);
  EXPECT_FALSE(GateFails(v, Severity::kInfo));
  v.push_back(cap.TruncationFinding());
  ApplySuppressions(s, "2026-01-01", &v);
  EXPECT_FALSE(v.back().suppressed);
  EXPECT_TRUE(v.back().suppression.empty());
  EXPECT_TRUE(GateFails(v, Severity::kError));
}

TEST(FindingCap, SarifCarriesTheTruncationAsAToolExecutionNotification) {
  std::vector<Finding> v = Numbered(3);
  FindingCap cap(2);
  cap.Trim(&v);
  v.push_back(cap.TruncationFinding());
  const nlohmann::json sarif = ToSarif(v, "audit k8s", "1.0", &cap);
  const nlohmann::json& inv = sarif["runs"][0]["invocations"];
  ASSERT_EQ(inv.size(), 1u) << sarif.dump(2);
  EXPECT_EQ(inv[0]["executionSuccessful"], false);
  EXPECT_EQ(inv[0]["toolExecutionNotifications"][0]["level"], "error");
  EXPECT_EQ(inv[0]["toolExecutionNotifications"][0]["descriptor"]["id"], kTruncatedRule);
  EXPECT_EQ(sarif["runs"][0]["results"].size(), 3u);
  // Untruncated: no invocation member, as before the cap.
  FindingCap none(10);
  EXPECT_FALSE(ToSarif(Numbered(3), "audit k8s", "1.0", &none)["runs"][0].contains("invocations"));
}

}  // namespace
}  // namespace tg::audit
