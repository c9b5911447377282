#include "server/readiness.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

namespace tg::server {
namespace {

using common::Status;

// One state, derived in one place: each phase with its reason as gates, faults and the drain move.
TEST(ReadinessTest, StateFollowsGatesFaultsAndDraining) {
  std::string live;
  Readiness r({"admit", "canary"}, [&live] { return live; });
  auto is = [&r](ServerPhase phase, const std::string& reason) {
    const ServerState s = r.State();
    EXPECT_EQ(ServerPhaseName(s.phase), ServerPhaseName(phase)) << s.reason;
    EXPECT_EQ(s.reason, reason);
    EXPECT_EQ(s.ready(), phase == ServerPhase::kReady);
  };
  is(ServerPhase::kStarting, "gate admit pending");
  r.GateRunning(0);
  is(ServerPhase::kStarting, "gate admit running");
  r.GateDone(0, Status::Ok(), 1.0);
  is(ServerPhase::kStarting, "gate canary pending");
  r.GateDone(1, Status::Ok(), 2.0);
  is(ServerPhase::kReady, "");
  live = "GPU 0 lost";
  is(ServerPhase::kNotReady, "GPU 0 lost");
  live.clear();
  CanaryResult bad;
  bad.message = "too slow";
  EXPECT_EQ(r.SetBackgroundCanary(bad), "");
  is(ServerPhase::kNotReady, "background canary failed: too slow");
  CanaryResult good;
  good.ok = true;
  EXPECT_EQ(r.SetBackgroundCanary(good), "background canary failed: too slow");
  is(ServerPhase::kReady, "");
  live = "GPU 0 lost";
  r.SetDraining();
  is(ServerPhase::kDraining, "draining: shutting down");  // the drain wins over a fault
}

TEST(ReadinessTest, PhaseNamesAreDistinct) {
  std::set<std::string_view> names;
  for (ServerPhase p : {ServerPhase::kStarting, ServerPhase::kReady, ServerPhase::kNotReady,
                        ServerPhase::kDraining}) {
    names.insert(ServerPhaseName(p));
  }
  EXPECT_EQ(names.size(), 4u);
  EXPECT_EQ(names.count("unknown"), 0u);
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
  EXPECT_TRUE(r.State().ready());
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
  EXPECT_EQ(r.State().reason, "gate admit failed: no GPU");
  EXPECT_EQ(r.State().phase, ServerPhase::kNotReady);
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
