#include "bench/slo.h"

#include <gtest/gtest.h>

namespace tg::bench {
namespace {

TEST(SloTest, ParsesTheIssueExamples) {
  auto t = ParseThresholds({"p95<8s", "images_per_min>40,gpu_util>0.6", "errors<0.1%"});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->size(), 4u);
  EXPECT_EQ((*t)[0].metric, "p95");
  EXPECT_EQ((*t)[0].op, "<");
  EXPECT_DOUBLE_EQ((*t)[0].value, 8e6);
  EXPECT_DOUBLE_EQ((*t)[1].value, 40);
  EXPECT_DOUBLE_EQ((*t)[2].value, 0.6);
  EXPECT_DOUBLE_EQ((*t)[3].value, 0.001);
  auto le = ParseThreshold(" p99.9 <= 250 ms ");
  ASSERT_TRUE(le.ok());
  EXPECT_EQ(le->op, "<=");
  EXPECT_DOUBLE_EQ(le->value, 250000);
}

TEST(SloTest, GrammarErrorsNameTheExpression) {
  for (const char* bad : {"p95", "p96<8s", "p95<8", "p95<8h", "p95<-1s", "gpu_util>1.5",
                          "errors<5x", "images_per_min>40/s", "p95<abc", "<3s", ""}) {
    auto t = ParseThresholds({bad});
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().code(), common::StatusCode::kInvalidArg) << bad;
    if (*bad != 0) {
      EXPECT_NE(t.status().message().find(bad), std::string::npos) << t.status().message();
    }
  }
}

TEST(SloTest, EvaluatesPerPointAndUnmeasuredFails) {
  PointResult p;
  p.config.batch = 2;
  p.measured_s = 60;
  p.ok = 30;  // 0.5 req/s, 60 images/min
  p.errors["http_503"] = 1;
  for (int i = 0; i < 30; ++i) p.latency.Record(9'000'000);
  auto t = ParseThresholds({"p95<8s,images_per_min>40,errors<10%,gpu_util>0.6"});
  ASSERT_TRUE(t.ok());
  EvaluateSlos(*t, p);
  ASSERT_EQ(p.slo_failures.size(), 2u);
  EXPECT_NE(p.slo_failures[0].find("p95<8s"), std::string::npos);
  EXPECT_NE(p.slo_failures[1].find("gpu_util>0.6: not measured"), std::string::npos);
  p.gpu.utilization = 0.9;
  EvaluateSlos(*ParseThresholds({"gpu_util>0.6,images_per_min>=60"}), p);
  EXPECT_TRUE(p.slo_failures.empty());
}

TEST(SloTest, Gates) {
  auto g = ParseGate("p95 +10%");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->metric, "p95");
  EXPECT_DOUBLE_EQ(g->max_change, 0.10);
  auto t = ParseGate("throughput -5%");
  ASSERT_TRUE(t.ok());
  EXPECT_DOUBLE_EQ(t->max_change, -0.05);
  EXPECT_FALSE(ParseGate("p95 10%").ok());
  EXPECT_FALSE(ParseGate("p95 +10").ok());
  EXPECT_FALSE(ParseGate("p97 +10%").ok());
  EXPECT_FALSE(ParseGate("p95 +x%").ok());
}

}  // namespace
}  // namespace tg::bench
