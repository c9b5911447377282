#include "bench/loadgen_windows.h"

#include <algorithm>
#include <chrono>

namespace tg::bench {
namespace {

using common::Clock;

Clock::Duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::Duration>(std::chrono::duration<double>(s));
}

// Sleeps on `clock` until `t` in steps of at most 20 ms, so SIGINT is noticed quickly; false
// when stopped first.
bool SleepUntil(Clock& clock, Clock::TimePoint t, const std::atomic<bool>* stop) {
  constexpr auto kPollEvery = std::chrono::milliseconds(20);
  for (Clock::TimePoint now = clock.Now(); now < t; now = clock.Now()) {
    if (stop != nullptr && stop->load()) return false;
    clock.SleepFor(std::min<Clock::Duration>(t - now, kPollEvery));
  }
  return true;
}

}  // namespace

bool IsStable(const std::vector<WindowStat>& windows, int n, double tolerance) {
  if (n <= 0 || static_cast<int>(windows.size()) < n) return false;
  double tmin = 1e300, tmax = 0, lmin = 1e300, lmax = 0;
  for (auto it = windows.end() - n; it != windows.end(); ++it) {
    tmin = std::min(tmin, it->throughput);
    tmax = std::max(tmax, it->throughput);
    lmin = std::min(lmin, it->latency_us);
    lmax = std::max(lmax, it->latency_us);
  }
  if (tmin <= 0 || lmin <= 0) return false;
  return tmax / tmin <= 1 + tolerance && lmax / lmin <= 1 + tolerance;
}

WindowOutcome RunWindows(const WindowOptions& o, Clock& clock, Clock::TimePoint start,
                         const WindowHooks& hooks) {
  WindowOutcome out;
  out.measure_start = start + Seconds(o.warmup_s);
  const Clock::Duration window = Seconds(o.window_s);
  out.interrupted = !SleepUntil(clock, out.measure_start, o.stop);
  if (!out.interrupted && hooks.measure_started) hooks.measure_started();
  Clock::TimePoint partial_end = clock.Now();
  while (!out.interrupted) {
    if (!SleepUntil(clock, out.measure_start + window * (out.complete + 1), o.stop)) {
      out.interrupted = true;
      partial_end = clock.Now();
      break;
    }
    out.windows.push_back(hooks.read_window(out.complete, o.window_s));
    ++out.complete;
    out.stable = IsStable(out.windows, o.stable_windows, o.stability);
    if (hooks.on_window) hooks.on_window(out.complete, out.stable);
    if (out.stable || out.complete >= o.max_trials) break;
  }
  out.first = std::max(0, out.complete - std::max(1, o.stable_windows));
  out.measured_begin = out.measure_start + window * out.first;
  out.measured_end = out.measure_start + window * out.complete;
  out.measured_s = o.window_s * (out.complete - out.first);
  // Interrupted inside the first window: the partial window, with its real length.
  if (out.complete == 0 && partial_end > out.measure_start) {
    out.partial = true;
    out.measured_end = partial_end;
    out.measured_s = std::chrono::duration<double>(partial_end - out.measure_start).count();
  }
  return out;
}

}  // namespace tg::bench
