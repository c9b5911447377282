#include "server/serve_metrics.h"

#include <gtest/gtest.h>

#include <string>

namespace tg::server {
namespace {

// Each render reads the one ServerState: exactly one truegreen_server_state series is 1, and
// truegreen_ready agrees with it, as the gates and the drain move.
TEST(ServeMetricsTest, TheStateSeriesFollowTheOneServerState) {
  Metrics metrics;
  const std::vector<std::string> gates = {"admit", "canary"};
  DeclareServerMetrics(metrics, gates);
  ServeConfig config;
  config.access_log = "off";
  RouteTable routes;
  Readiness readiness(gates, nullptr);
  ModelRegistry models;
  MemoryAdmission memory;
  FrontEnd front(config, routes, readiness, metrics, nullptr);
  auto render = [&] { return RenderServerMetrics(metrics, models, memory, front, readiness).body; };
  auto one = [](const std::string& text, const std::string& state) {
    int ones = 0;
    for (const char* s : {"starting", "ready", "not_ready", "draining"}) {
      const std::string series = "truegreen_server_state{state=\"" + std::string(s) + "\"} ";
      const auto at = text.find(series);
      EXPECT_NE(at, std::string::npos) << series << "\n" << text;
      if (at == std::string::npos) continue;
      const bool on = text.compare(at + series.size(), 2, "1\n") == 0;
      ones += on ? 1 : 0;
      EXPECT_EQ(on, state == s) << series;
    }
    EXPECT_EQ(ones, 1);
  };

  std::string text = render();
  one(text, "starting");
  EXPECT_NE(text.find("truegreen_gate_status{gate=\"canary\"} 0"), std::string::npos) << text;
  EXPECT_NE(text.find("truegreen_ready 0"), std::string::npos);
  readiness.GateDone(0, common::Status::Ok(), 1.0);
  readiness.GateDone(1, common::Status::Ok(), 1.0);
  text = render();
  one(text, "ready");
  EXPECT_NE(text.find("truegreen_ready 1"), std::string::npos);
  readiness.SetDraining();
  text = render();
  one(text, "draining");
  EXPECT_NE(text.find("truegreen_ready 0"), std::string::npos);
}

}  // namespace
}  // namespace tg::server
