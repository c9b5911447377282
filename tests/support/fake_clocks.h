// Fake clocks for tests of code that sleeps on a common::Clock (the load generator's windows,
// RunLoad): time moves only when the code under test sleeps, and a test can act at each step.
#pragma once

#include <functional>
#include <utility>

#include "common/clock.h"

namespace tg::testing {

// A FakeClock whose SleepFor moves time forward by the requested duration, as FakeClock does,
// then calls `after_sleep` with the new time (to set a stop flag at a chosen moment, or to let
// real time pass so that a server answers between steps). Thread-safe as FakeClock is, provided
// `after_sleep` is.
class SteppedFakeClock : public common::FakeClock {
 public:
  explicit SteppedFakeClock(std::function<void(TimePoint now)> after_sleep)
      : after_sleep_(std::move(after_sleep)) {}
  void SleepFor(Duration d) override {
    Advance(d);
    after_sleep_(Now());
  }

 private:
  std::function<void(TimePoint)> after_sleep_;
};

// Short measurement windows for a test, on either kind of options that carries them
// (bench::WindowOptions, bench::LoadOptions): the warm-up, window length and trials given, and the
// stability rule spelled out (3 windows within 10 %) so that a change of the defaults does not
// change the test.
template <typename Options>
void SetTestWindows(Options* o, double warmup_s, double window_s, int max_trials) {
  o->warmup_s = warmup_s;
  o->window_s = window_s;
  o->max_trials = max_trials;
  o->stable_windows = 3;
  o->stability = 0.10;
}

}  // namespace tg::testing
