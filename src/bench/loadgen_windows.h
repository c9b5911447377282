// The measuring half of the load generator, apart from its sockets: the warm-up, the windows,
// the stability rule and the stop, all timed on a common::Clock, so a test drives them with a
// FakeClock and made-up window figures instead of a server and real seconds.
//
// Thread safety: RunWindows runs on the calling thread and calls its callbacks there; the
// options and callbacks must not change during the call.
#pragma once

#include <atomic>
#include <functional>
#include <vector>

#include "bench/result.h"
#include "common/clock.h"

namespace tg::bench {

struct WindowOptions {
  double warmup_s = 1;
  double window_s = 5;  // > 0
  int max_trials = 10;  // >= 1
  int stable_windows = 3;
  double stability = 0.10;
  const std::atomic<bool>* stop = nullptr;  // polled every 20 ms of `clock` time; may be null
};

// What RunWindows saw. The measured interval is the last min(stable_windows, complete) complete
// windows (at least one), or the partial first window when interrupted inside it.
struct WindowOutcome {
  std::vector<WindowStat> windows;          // one per complete window, in order
  int complete = 0;                         // complete windows (the point's trials)
  int first = 0;                            // first window of the measured interval
  bool stable = false;                      // the stability rule held after the last window
  bool interrupted = false;                 // *stop was seen before the run ended on its own
  common::Clock::TimePoint measure_start;   // start + warm-up
  common::Clock::TimePoint measured_begin;  // measure_start + first windows
  common::Clock::TimePoint measured_end;    // the end of the last complete window, or of the
                                            // partial first window
  double measured_s = 0;                    // measured_end - measured_begin, in seconds
  bool partial = false;  // interrupted inside the first window: measured is that partial window
};

// The callbacks RunWindows makes, all on its own thread.
struct WindowHooks {
  std::function<void()> measure_started;  // once, when the warm-up is over (may be empty)
  // The figures of window `index` (requests that completed in its `seconds`), called once as
  // soon as the window is over. Required.
  std::function<WindowStat(int index, double seconds)> read_window;
  std::function<void(int complete, bool stable)> on_window;  // after each window (may be empty)
};

// Waits on `clock` from `start` through the warm-up, then window by window, reading each window
// when it is over, and stops when IsStable holds on the last `stable_windows` windows, after
// `max_trials` windows, or when *stop is set (interrupted). Blocks the calling thread for the
// clock's time (a FakeClock's SleepFor returns at once).
WindowOutcome RunWindows(const WindowOptions& o, common::Clock& clock,
                         common::Clock::TimePoint start, const WindowHooks& hooks);

// perf_analyzer's rule: the last `n` windows have max/min <= 1 + tolerance on throughput and on
// mean latency (and there are at least n windows, none with zero throughput).
bool IsStable(const std::vector<WindowStat>& windows, int n, double tolerance);

}  // namespace tg::bench
