#include "bench/loadgen_windows.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "tests/support/fake_clocks.h"

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
  testing::SetTestWindows(&o, /*warmup_s=*/1, /*window_s=*/0.5, /*max_trials=*/8);
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

// What a run of never-stable windows did when `stop` was set (as a SIGINT would) the first time
// the clock reached `at`: the outcome, the windows read, and the run's start.
struct Interrupted {
  WindowOutcome w;
  std::vector<int> read;
  Clock::TimePoint start;
};

Interrupted RunInterrupted(Clock::Duration at) {
  std::atomic<bool> stop{false};
  Interrupted out;
  testing::SteppedFakeClock clock([&](Clock::TimePoint now) {
    if (now >= out.start + at) stop.store(true);
  });
  WindowOptions o = Options();
  o.stop = &stop;
  WindowHooks h;
  h.read_window = [&](int index, double) {
    out.read.push_back(index);
    return WindowStat{100, 1000 + 100.0 * index};  // never stable
  };
  out.start = clock.Now();
  out.w = RunWindows(o, clock, out.start, h);
  return out;
}

// Where the stop lands decides what is measured: inside the first window, that partial window
// (stopped at the first 20 ms poll at or after 1.2 s: 0.2 s into it); later, the complete
// windows; in the warm-up, nothing.
TEST(RunWindowsTest, InterruptedRunsMeasureWhatCompletedBeforeTheStop) {
  struct Case {
    int at_ms;
    std::vector<int> read;
    int complete;
    bool partial;
    int measured_end_ms;  // after the start; -1: nothing was measured
    double measured_s;
  };
  const Case cases[] = {
      {1200, {}, 0, true, 1200, 0.2},
      {2100, {0, 1}, 2, false, 2000, 1.0},
      {500, {}, 0, false, -1, 0},
  };
  for (const Case& c : cases) {
    const Interrupted r = RunInterrupted(milliseconds(c.at_ms));
    SCOPED_TRACE("stopped at " + std::to_string(c.at_ms) + " ms");
    EXPECT_TRUE(r.w.interrupted);
    EXPECT_EQ(r.read, c.read);
    EXPECT_EQ(r.w.complete, c.complete);
    EXPECT_EQ(r.w.partial, c.partial);
    EXPECT_EQ(r.w.first, 0);
    if (c.measured_end_ms >= 0) {
      EXPECT_EQ(r.w.measured_end, r.start + milliseconds(c.measured_end_ms));
    }
    EXPECT_NEAR(r.w.measured_s, c.measured_s, 1e-9);
  }
}

}  // namespace
}  // namespace tg::bench
