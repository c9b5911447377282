#include "bench/loadgen_windows.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <vector>

namespace tg::bench {
namespace {

using common::Clock;
using std::chrono::milliseconds;

TEST(IsStableTest, PerfAnalyzersRule) {
  std::vector<WindowStat> w = {{100, 1000}, {50, 2000}, {100, 1000}, {105, 1050}, {98, 990}};
  EXPECT_TRUE(IsStable(w, 3, 0.10));
  EXPECT_FALSE(IsStable(w, 4, 0.10));  // the 50 req/s window is inside the last 4
  w.push_back({100, 1200});            // latency 1200/990 > 1.10
  EXPECT_FALSE(IsStable(w, 3, 0.10));
  EXPECT_TRUE(IsStable(w, 3, 0.25));
  EXPECT_FALSE(IsStable({{100, 1000}, {100, 1000}}, 3, 0.10));  // too few windows
  EXPECT_FALSE(IsStable({{0, 0}, {0, 0}, {0, 0}}, 3, 0.10));    // nothing measured
  EXPECT_FALSE(IsStable({{100, 1000}}, 0, 0.10));               // no windows asked for
}

// Runs the windows on a FakeClock with the figures of `stats` (window i gets stats[i]), and
// records when (on the fake clock) each window was read.
struct FakeRun {
  common::FakeClock clock;
  std::vector<Clock::TimePoint> read_at;
  std::vector<int> progress;
  int measure_started = 0;

  WindowOutcome Go(const WindowOptions& o, const std::vector<WindowStat>& stats) {
    WindowHooks h;
    h.measure_started = [&] { ++measure_started; };
    h.read_window = [&](int index, double seconds) {
      EXPECT_EQ(index, static_cast<int>(read_at.size()));
      EXPECT_DOUBLE_EQ(seconds, o.window_s);
      read_at.push_back(clock.Now());
      return stats.at(static_cast<std::size_t>(index));
    };
    h.on_window = [&](int complete, bool) { progress.push_back(complete); };
    start = clock.Now();
    return RunWindows(o, clock, start, h);
  }
  Clock::TimePoint start;
};

WindowOptions Options() {
  WindowOptions o;
  o.warmup_s = 1;
  o.window_s = 0.5;
  o.max_trials = 8;
  o.stable_windows = 3;
  o.stability = 0.10;
  return o;
}

TEST(RunWindowsTest, StopsAtTheFirstStableWindowsAndMeasuresTheLastThree) {
  FakeRun r;
  // Unstable until windows 2..4 agree within 10 %.
  const std::vector<WindowStat> stats = {{100, 1000}, {50, 2000}, {100, 1000},
                                         {105, 1050}, {98, 990},  {10, 10}};
  WindowOutcome w = r.Go(Options(), stats);
  EXPECT_TRUE(w.stable);
  EXPECT_FALSE(w.interrupted);
  EXPECT_EQ(w.complete, 5);
  EXPECT_EQ(w.windows.size(), 5u);
  EXPECT_EQ(r.progress, (std::vector<int>{1, 2, 3, 4, 5}));
  EXPECT_EQ(r.measure_started, 1);
  // Each window is read the moment it ends: after the 1 s warm-up, every 0.5 s.
  ASSERT_EQ(r.read_at.size(), 5u);
  for (std::size_t i = 0; i < r.read_at.size(); ++i) {
    EXPECT_EQ(r.read_at[i], r.start + milliseconds(1000 + 500 * static_cast<int>(i + 1))) << i;
  }
  EXPECT_EQ(w.measure_start, r.start + milliseconds(1000));
  EXPECT_EQ(w.first, 2);
  EXPECT_EQ(w.measured_begin, r.start + milliseconds(2000));
  EXPECT_EQ(w.measured_end, r.start + milliseconds(3500));
  EXPECT_DOUBLE_EQ(w.measured_s, 1.5);
  EXPECT_FALSE(w.partial);
  EXPECT_EQ(r.clock.Now(), r.start + milliseconds(3500));  // no window more than needed
}

TEST(RunWindowsTest, NeverStableStopsAfterMaxTrials) {
  FakeRun r;
  std::vector<WindowStat> stats;
  for (int i = 0; i < 8; ++i) stats.push_back({i % 2 == 0 ? 100.0 : 200.0, 1000});
  WindowOutcome w = r.Go(Options(), stats);
  EXPECT_FALSE(w.stable);
  EXPECT_FALSE(w.interrupted);
  EXPECT_EQ(w.complete, 8);
  EXPECT_EQ(w.first, 5);
  EXPECT_DOUBLE_EQ(w.measured_s, 1.5);
  EXPECT_EQ(w.measured_end, r.start + milliseconds(1000 + 8 * 500));
}

TEST(RunWindowsTest, FewerWindowsThanTheRuleNeedsMeasureWhatThereIs) {
  FakeRun r;
  WindowOptions o = Options();
  o.max_trials = 2;
  WindowOutcome w = r.Go(o, {{100, 1000}, {100, 1000}});
  EXPECT_FALSE(w.stable);  // two windows cannot satisfy a three-window rule
  EXPECT_EQ(w.complete, 2);
  EXPECT_EQ(w.first, 0);
  EXPECT_DOUBLE_EQ(w.measured_s, 1.0);
}

// A FakeClock that sets `stop` once its time reaches `at`, as a SIGINT would at that moment.
class InterruptingClock : public common::FakeClock {
 public:
  InterruptingClock(std::atomic<bool>* stop, Duration at) : stop_(stop), at_(Now() + at) {}
  void SleepFor(Duration d) override {
    Advance(d);
    if (Now() >= at_) stop_->store(true);
  }

 private:
  std::atomic<bool>* stop_;
  TimePoint at_;
};

WindowOutcome RunInterrupted(Clock::Duration at, std::vector<int>* read, Clock::TimePoint* start) {
  std::atomic<bool> stop{false};
  InterruptingClock clock(&stop, at);
  WindowOptions o = Options();
  o.stop = &stop;
  WindowHooks h;
  h.read_window = [&](int index, double) {
    read->push_back(index);
    return WindowStat{100, 1000 + 100.0 * index};  // never stable
  };
  *start = clock.Now();
  return RunWindows(o, clock, *start, h);
}

TEST(RunWindowsTest, InterruptedInsideTheFirstWindowMeasuresThePartialWindow) {
  std::vector<int> read;
  Clock::TimePoint start;
  WindowOutcome w = RunInterrupted(milliseconds(1200), &read, &start);
  EXPECT_TRUE(w.interrupted);
  EXPECT_TRUE(read.empty());
  EXPECT_EQ(w.complete, 0);
  EXPECT_TRUE(w.partial);
  // Stopped at the first 20 ms poll at or after 1.2 s: 0.2 s into the first window.
  EXPECT_EQ(w.measured_end, start + milliseconds(1200));
  EXPECT_NEAR(w.measured_s, 0.2, 1e-9);
}

TEST(RunWindowsTest, InterruptedLaterKeepsTheCompleteWindows) {
  std::vector<int> read;
  Clock::TimePoint start;
  WindowOutcome w = RunInterrupted(milliseconds(2100), &read, &start);
  EXPECT_TRUE(w.interrupted);
  EXPECT_EQ(read, (std::vector<int>{0, 1}));
  EXPECT_EQ(w.complete, 2);
  EXPECT_FALSE(w.partial);
  EXPECT_EQ(w.first, 0);
  EXPECT_EQ(w.measured_end, start + milliseconds(2000));
  EXPECT_DOUBLE_EQ(w.measured_s, 1.0);
}

TEST(RunWindowsTest, InterruptedInTheWarmUpMeasuresNothing) {
  std::vector<int> read;
  Clock::TimePoint start;
  WindowOutcome w = RunInterrupted(milliseconds(500), &read, &start);
  EXPECT_TRUE(w.interrupted);
  EXPECT_TRUE(read.empty());
  EXPECT_EQ(w.complete, 0);
  EXPECT_FALSE(w.partial);
  EXPECT_DOUBLE_EQ(w.measured_s, 0);
}

}  // namespace
}  // namespace tg::bench
