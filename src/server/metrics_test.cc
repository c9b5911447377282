#include "server/metrics.h"

#include <gtest/gtest.h>

namespace tg::server {
namespace {

TEST(MetricsTest, RendersCountersGaugesAndHistogramsInTextFormat) {
  Metrics m;
  m.DeclareCounter("c_total", "a counter");
  m.DeclareGauge("g", "a gauge");
  m.DeclareHistogram("h_seconds", "a histogram", {0.1, 1});
  m.Add("c_total", {{"model", "a\"b\\c\nd"}}, 2);
  m.Set("g", {}, 3.5);
  m.Observe("h_seconds", {{"m", "x"}}, 0.05);
  m.Observe("h_seconds", {{"m", "x"}}, 0.5);
  m.Observe("h_seconds", {{"m", "x"}}, 5);
  m.Add("undeclared", {}, 1);  // ignored
  const std::string t = m.Render();
  EXPECT_NE(t.find("# TYPE c_total counter\n"), std::string::npos) << t;
  EXPECT_NE(t.find("c_total{model=\"a\\\"b\\\\c\\nd\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("g 3.5\n"), std::string::npos);
  EXPECT_NE(t.find("h_seconds_bucket{m=\"x\",le=\"0.10000000000000001\"} 1\n"), std::string::npos)
      << t;
  EXPECT_NE(t.find("h_seconds_bucket{m=\"x\",le=\"1\"} 2\n"), std::string::npos);
  EXPECT_NE(t.find("h_seconds_bucket{m=\"x\",le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(t.find("h_seconds_count{m=\"x\"} 3\n"), std::string::npos);
  EXPECT_EQ(t.find("undeclared"), std::string::npos);
  EXPECT_EQ(m.Value("c_total", {{"model", "a\"b\\c\nd"}}), 2);
}

TEST(MetricsTest, RemovedSeriesIsAbsentAndTheFamilyStays) {
  Metrics m;
  m.DeclareGauge("g", "a gauge");
  m.Set("g", {{"gpu_uuid", "GPU-a"}}, 1);
  m.Set("g", {{"gpu_uuid", "GPU-b"}}, 2);
  m.Remove("g", {{"gpu_uuid", "GPU-a"}});
  m.Remove("undeclared", {});  // ignored
  const std::string t = m.Render();
  EXPECT_EQ(t.find("GPU-a"), std::string::npos) << t;
  EXPECT_NE(t.find("g{gpu_uuid=\"GPU-b\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("# TYPE g gauge\n"), std::string::npos) << t;
}

}  // namespace
}  // namespace tg::server
