#include "server/readiness.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace tg::server {
namespace {

using common::Status;

TEST(ReadinessTest, ReasonFollowsGatesFaultsAndDraining) {
  std::string live;
  Readiness r({"admit", "canary"}, [&live] { return live; });
  EXPECT_EQ(r.NotReadyReason(), "gate admit pending");
  r.GateRunning(0);
  EXPECT_EQ(r.NotReadyReason(), "gate admit running");
  r.GateDone(0, Status::Ok(), 1.0);
  EXPECT_EQ(r.NotReadyReason(), "gate canary pending");
  r.GateDone(1, Status::Ok(), 2.0);
  EXPECT_EQ(r.NotReadyReason(), "");
  live = "GPU 0 lost";
  EXPECT_EQ(r.NotReadyReason(), "GPU 0 lost");
  live.clear();
  CanaryResult bad;
  bad.message = "too slow";
  EXPECT_EQ(r.SetBackgroundCanary(bad), "");
  EXPECT_EQ(r.NotReadyReason(), "background canary failed: too slow");
  CanaryResult good;
  good.ok = true;
  EXPECT_EQ(r.SetBackgroundCanary(good), "background canary failed: too slow");
  EXPECT_EQ(r.NotReadyReason(), "");
  r.SetDraining();
  EXPECT_EQ(r.NotReadyReason(), "draining: shutting down");
}

// Work is accepted by GatesPassed: true exactly when /readyz first could say 200 (every gate
// passed), and not undone by a later fault or the drain (those only turn /readyz to 503).
TEST(ReadinessTest, GatesPassedFlipsWithTheLastGateAndStays) {
  std::string live;
  Readiness r({"admit", "canary"}, [&live] { return live; });
  EXPECT_FALSE(r.GatesPassed());
  r.GateDone(0, Status::Ok(), 1.0);
  EXPECT_FALSE(r.GatesPassed());
  r.GateRunning(1);
  EXPECT_FALSE(r.GatesPassed());
  r.GateDone(1, Status::Ok(), 1.0);
  EXPECT_TRUE(r.GatesPassed());
  EXPECT_EQ(r.NotReadyReason(), "");
  live = "GPU 0 lost";
  r.SetDraining();
  EXPECT_TRUE(r.GatesPassed());
  Readiness failed({"admit"}, nullptr);
  failed.GateDone(0, Status::Unavailable("no GPU"), 1.0);
  EXPECT_FALSE(failed.GatesPassed());
}

TEST(ReadinessTest, AFailedGateNamesItselfAndReadyzSharesItsBodyWhileNothingChanges) {
  Readiness r({"admit"}, nullptr);
  r.GateDone(0, Status::Unavailable("no GPU"), 3.0);
  EXPECT_EQ(r.NotReadyReason(), "gate admit failed: no GPU");
  HttpResponse a = r.Readyz(), b = r.Readyz();
  EXPECT_EQ(a.status, 503);
  ASSERT_NE(a.shared_body, nullptr);
  EXPECT_EQ(a.shared_body, b.shared_body);  // rendered once
  EXPECT_NE(a.shared_body->find("\"reason\":\"gate admit failed: no GPU\""), std::string::npos);
  r.SetDegraded();
  HttpResponse c = r.Readyz();
  EXPECT_NE(c.shared_body, a.shared_body);
  EXPECT_NE(c.shared_body->find("\"degraded\":true"), std::string::npos);
  EXPECT_EQ(r.GatesJson()[0]["status"], "failed");
}

TEST(ReadinessTest, BackgroundRunsRepeatAndStopJoinsAtOnce) {
  Readiness r({"admit"}, nullptr);
  std::atomic<int> runs{0};
  r.StartBackground(std::chrono::seconds(0), [&runs] { ++runs; });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (runs.load() < 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  r.StopBackground();
  const int stopped_at = runs.load();
  EXPECT_GE(stopped_at, 2);
  std::this_thread::yield();
  EXPECT_EQ(runs.load(), stopped_at);  // joined: no run after StopBackground returned
  r.StopBackground();                  // idempotent
}

TEST(ReadinessTest, StopBackgroundDoesNotWaitForTheInterval) {
  Readiness r({"admit"}, nullptr);
  std::atomic<int> runs{0};
  r.StartBackground(std::chrono::hours(1), [&runs] { ++runs; });
  const auto t0 = std::chrono::steady_clock::now();
  r.StopBackground();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  EXPECT_EQ(runs.load(), 0);
}

}  // namespace
}  // namespace tg::server
