#include "server/lanes.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace tg::server {
namespace {

// Every lane here runs on a fake clock: a batching window or a deadline passes only when the test
// advances it, so no outcome depends on how fast this machine runs the test.
std::shared_ptr<Job> MakeJob(const common::Clock& clock, const std::string& key,
                             std::chrono::milliseconds deadline) {
  auto j = std::make_shared<Job>();
  j->batch_key = key;
  j->enqueued = clock.Now();
  j->deadline = j->enqueued + deadline;
  return j;
}

// Waits (really) until `done` holds, for at most 10 s; false when it never did.
template <typename F>
bool WaitFor(F done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(LaneTest, BatchesJobsWithEqualKeysUpToMaxBatch) {
  common::FakeClock clock;
  std::mutex mu;
  std::vector<std::vector<std::string>> batches;
  std::atomic<bool> gate{false};
  Lane lane(
      "t", 100, 1, 3, std::chrono::milliseconds(200),
      [&](std::vector<std::shared_ptr<Job>>& jobs) {
        while (!gate.load()) std::this_thread::yield();
        std::lock_guard<std::mutex> l(mu);
        batches.emplace_back();
        for (auto& j : jobs) batches.back().push_back(j->batch_key);
      },
      [](const std::shared_ptr<Job>&) {}, &clock);
  for (const char* k : {"a", "b", "a", "a", "a"}) {
    ASSERT_TRUE(lane.Submit(MakeJob(clock, k, std::chrono::seconds(60))));
  }
  gate.store(true);
  lane.Drain();
  std::size_t total = 0;
  for (const auto& b : batches) {
    EXPECT_LE(b.size(), 3u);
    for (const auto& k : b) EXPECT_EQ(k, b.front());  // never mixed keys
    total += b.size();
  }
  EXPECT_EQ(total, 5u);
  // The window of the first job never closed (the fake clock stood still): the batch filled.
  ASSERT_FALSE(batches.empty());
  EXPECT_EQ(batches.front(), (std::vector<std::string>{"a", "a", "a"}));
}

TEST(LaneTest, FullQueueRefusesAndDrainFinishesQueuedJobs) {
  common::FakeClock clock;
  std::atomic<bool> gate{false};
  std::atomic<int> ran{0};
  Lane lane(
      "t", 2, 1, 1, std::chrono::milliseconds(0),
      [&](std::vector<std::shared_ptr<Job>>& jobs) {
        while (!gate.load()) std::this_thread::yield();
        ran += static_cast<int>(jobs.size());
      },
      [](const std::shared_ptr<Job>&) {}, &clock);
  ASSERT_TRUE(lane.Submit(MakeJob(clock, "1", std::chrono::seconds(60))));
  // Wait until the worker holds the first job, so the queue has exactly two free places.
  while (lane.in_flight() == 0) std::this_thread::yield();
  EXPECT_TRUE(lane.Submit(MakeJob(clock, "2", std::chrono::seconds(60))));
  EXPECT_TRUE(lane.Submit(MakeJob(clock, "3", std::chrono::seconds(60))));
  EXPECT_FALSE(lane.Submit(MakeJob(clock, "4", std::chrono::seconds(60))));
  EXPECT_EQ(lane.depth(), 2);
  gate.store(true);
  lane.Drain();
  EXPECT_EQ(ran.load(), 3);
  EXPECT_FALSE(lane.Submit(MakeJob(clock, "5", std::chrono::seconds(60))));  // draining
}

TEST(LaneTest, JobsPastTheirDeadlineAreExpiredNotRun) {
  common::FakeClock clock;
  std::atomic<int> ran{0}, expired{0};
  Lane lane(
      "t", 10, 1, 1, std::chrono::milliseconds(0),
      [&](std::vector<std::shared_ptr<Job>>& jobs) { ran += static_cast<int>(jobs.size()); },
      [&](const std::shared_ptr<Job>&) { ++expired; }, &clock);
  ASSERT_TRUE(lane.Submit(MakeJob(clock, "x", std::chrono::milliseconds(-1))));
  ASSERT_TRUE(lane.Submit(MakeJob(clock, "y", std::chrono::seconds(60))));
  lane.Drain();
  EXPECT_EQ(expired.load(), 1);
  EXPECT_EQ(ran.load(), 1);
}

TEST(LaneTest, QueuedJobIsExpiredAtItsDeadlineWhileTheWorkerIsBusy) {
  common::FakeClock clock;
  std::atomic<bool> gate{false};
  std::atomic<int> expired{0};
  Lane lane(
      "t", 10, 1, 1, std::chrono::milliseconds(0),
      [&](std::vector<std::shared_ptr<Job>>&) {
        while (!gate.load()) std::this_thread::yield();
      },
      [&](const std::shared_ptr<Job>&) { ++expired; }, &clock);
  ASSERT_TRUE(lane.Submit(MakeJob(clock, "busy", std::chrono::seconds(60))));
  while (lane.in_flight() == 0) std::this_thread::yield();
  ASSERT_TRUE(lane.Submit(MakeJob(clock, "late", std::chrono::milliseconds(20))));
  clock.Advance(std::chrono::milliseconds(19));
  EXPECT_EQ(expired.load(), 0);  // not before its deadline
  EXPECT_EQ(lane.depth(), 1);
  clock.Advance(std::chrono::milliseconds(1));
  // The worker is still blocked: only the reaper can answer the queued job.
  EXPECT_TRUE(WaitFor([&] { return expired.load() == 1; }));
  EXPECT_EQ(lane.depth(), 0);
  gate.store(true);
  lane.Drain();
  EXPECT_EQ(expired.load(), 1);
}

// SD requests count their images: a batch's units never pass max_batch, keys never mix, and a
// job that does not fit waits for the next batch instead of being skipped for good.
TEST(LaneTest, UnitsOfABatchNeverExceedMaxBatch) {
  common::FakeClock clock;
  std::mutex mu;
  std::vector<std::vector<std::shared_ptr<Job>>> batches;
  std::atomic<bool> gate{false};
  Lane lane(
      "t", 100, 1, 8, std::chrono::milliseconds(200),
      [&](std::vector<std::shared_ptr<Job>>& jobs) {
        while (!gate.load()) std::this_thread::yield();
        std::lock_guard<std::mutex> l(mu);
        batches.push_back(jobs);
      },
      [](const std::shared_ptr<Job>&) {}, &clock);
  // key/units: the first batch can take a4 + a3 (7), not a2 (9 > 8), then a1 (8).
  const std::vector<std::pair<std::string, int>> spec = {
      {"a", 4}, {"steps3", 1}, {"a", 3}, {"a", 2}, {"a", 1}, {"big", 12}, {"steps3", 1}};
  for (const auto& [k, u] : spec) {
    auto j = MakeJob(clock, k, std::chrono::seconds(60));
    j->units = u;
    ASSERT_TRUE(lane.Submit(j));
  }
  gate.store(true);
  lane.Drain();
  int jobs = 0;
  for (const auto& b : batches) {
    int units = 0;
    for (const auto& j : b) {
      EXPECT_EQ(j->batch_key, b.front()->batch_key) << "keys never mix";
      units += j->units;
    }
    if (b.size() > 1) {
      EXPECT_LE(units, 8);
    }
    jobs += static_cast<int>(b.size());
  }
  EXPECT_EQ(jobs, 7);
  ASSERT_FALSE(batches.empty());
  ASSERT_EQ(batches.front().size(), 3u);
  EXPECT_EQ(batches.front()[0]->units + batches.front()[1]->units + batches.front()[2]->units, 8);
}

// The batching window is measured on the lane's clock: a companion that arrives 59 s into a 60 s
// window joins the batch, and the batch runs once the clock passes the window (without the
// clock seam it would wait a real minute, past this test's 10 s limit).
TEST(LaneTest, TheBatchWindowClosesWhenTheClockPassesIt) {
  common::FakeClock clock;
  std::mutex mu;
  std::vector<std::vector<std::string>> batches;
  Lane lane(
      "t", 100, 1, 8, std::chrono::seconds(60),
      [&](std::vector<std::shared_ptr<Job>>& jobs) {
        std::lock_guard<std::mutex> l(mu);
        batches.emplace_back();
        for (auto& j : jobs) batches.back().push_back(j->batch_key);
      },
      [](const std::shared_ptr<Job>&) {}, &clock);
  auto ran = [&] {
    std::lock_guard<std::mutex> l(mu);
    return batches.size();
  };
  ASSERT_TRUE(lane.Submit(MakeJob(clock, "a", std::chrono::hours(1))));
  ASSERT_TRUE(WaitFor([&] { return lane.depth() == 0; }));  // the worker holds it: window open
  clock.Advance(std::chrono::seconds(59));
  ASSERT_TRUE(lane.Submit(MakeJob(clock, "a", std::chrono::hours(1))));
  ASSERT_TRUE(WaitFor([&] { return lane.depth() == 0; }));  // swept into the open batch
  EXPECT_EQ(ran(), 0u);
  clock.Advance(std::chrono::seconds(1));
  // Another key wakes the worker at once; it is not a companion, and the window is over.
  ASSERT_TRUE(lane.Submit(MakeJob(clock, "z", std::chrono::hours(1))));
  EXPECT_TRUE(WaitFor([&] { return ran() >= 1; })) << "the window did not close on the clock";
  lane.Drain();
  std::lock_guard<std::mutex> l(mu);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0], (std::vector<std::string>{"a", "a"}));
  EXPECT_EQ(batches[1], (std::vector<std::string>{"z"}));
}

}  // namespace
}  // namespace tg::server
