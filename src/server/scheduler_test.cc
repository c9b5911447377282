#include "server/scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace tg::server {
namespace {

std::shared_ptr<Job> MakeJob(const std::string& key, std::chrono::milliseconds deadline) {
  auto j = std::make_shared<Job>();
  j->batch_key = key;
  j->enqueued = Clock::now();
  j->deadline = j->enqueued + deadline;
  return j;
}

TEST(LaneTest, BatchesJobsWithEqualKeysUpToMaxBatch) {
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
      [](const std::shared_ptr<Job>&) {});
  for (const char* k : {"a", "b", "a", "a", "a"}) {
    ASSERT_TRUE(lane.Submit(MakeJob(k, std::chrono::seconds(60))));
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
  // All five were queued well within the 200 ms batching delay of the first job.
  ASSERT_FALSE(batches.empty());
  EXPECT_EQ(batches.front(), (std::vector<std::string>{"a", "a", "a"}));
}

TEST(LaneTest, FullQueueRefusesAndDrainFinishesQueuedJobs) {
  std::atomic<bool> gate{false};
  std::atomic<int> ran{0};
  Lane lane(
      "t", 2, 1, 1, std::chrono::milliseconds(0),
      [&](std::vector<std::shared_ptr<Job>>& jobs) {
        while (!gate.load()) std::this_thread::yield();
        ran += static_cast<int>(jobs.size());
      },
      [](const std::shared_ptr<Job>&) {});
  ASSERT_TRUE(lane.Submit(MakeJob("1", std::chrono::seconds(60))));
  // Wait until the worker holds the first job, so the queue has exactly two free places.
  while (lane.in_flight() == 0) std::this_thread::yield();
  EXPECT_TRUE(lane.Submit(MakeJob("2", std::chrono::seconds(60))));
  EXPECT_TRUE(lane.Submit(MakeJob("3", std::chrono::seconds(60))));
  EXPECT_FALSE(lane.Submit(MakeJob("4", std::chrono::seconds(60))));
  EXPECT_EQ(lane.depth(), 2);
  gate.store(true);
  lane.Drain();
  EXPECT_EQ(ran.load(), 3);
  EXPECT_FALSE(lane.Submit(MakeJob("5", std::chrono::seconds(60))));  // draining
}

TEST(LaneTest, JobsPastTheirDeadlineAreExpiredNotRun) {
  std::atomic<int> ran{0}, expired{0};
  Lane lane(
      "t", 10, 1, 1, std::chrono::milliseconds(0),
      [&](std::vector<std::shared_ptr<Job>>& jobs) { ran += static_cast<int>(jobs.size()); },
      [&](const std::shared_ptr<Job>&) { ++expired; });
  ASSERT_TRUE(lane.Submit(MakeJob("x", std::chrono::milliseconds(-1))));
  ASSERT_TRUE(lane.Submit(MakeJob("y", std::chrono::seconds(60))));
  lane.Drain();
  EXPECT_EQ(expired.load(), 1);
  EXPECT_EQ(ran.load(), 1);
}

TEST(LaneTest, QueuedJobIsExpiredAtItsDeadlineWhileTheWorkerIsBusy) {
  std::atomic<bool> gate{false};
  std::atomic<int> expired{0};
  Lane lane(
      "t", 10, 1, 1, std::chrono::milliseconds(0),
      [&](std::vector<std::shared_ptr<Job>>&) {
        while (!gate.load()) std::this_thread::yield();
      },
      [&](const std::shared_ptr<Job>&) { ++expired; });
  ASSERT_TRUE(lane.Submit(MakeJob("busy", std::chrono::seconds(60))));
  while (lane.in_flight() == 0) std::this_thread::yield();
  ASSERT_TRUE(lane.Submit(MakeJob("late", std::chrono::milliseconds(20))));
  // The worker is still blocked: only the reaper can answer the queued job.
  while (expired.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(lane.depth(), 0);
  gate.store(true);
  lane.Drain();
  EXPECT_EQ(expired.load(), 1);
}

// SD requests count their images: a batch's units never pass max_batch, keys never mix, and a
// job that does not fit waits for the next batch instead of being skipped for good.
TEST(LaneTest, UnitsOfABatchNeverExceedMaxBatch) {
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
      [](const std::shared_ptr<Job>&) {});
  // key/units: the first batch can take a4 + a3 (7), not a2 (9 > 8), then a1 (8).
  const std::vector<std::pair<std::string, int>> spec = {
      {"a", 4}, {"steps3", 1}, {"a", 3}, {"a", 2}, {"a", 1}, {"big", 12}, {"steps3", 1}};
  for (const auto& [k, u] : spec) {
    auto j = MakeJob(k, std::chrono::seconds(60));
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

}  // namespace
}  // namespace tg::server
