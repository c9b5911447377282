// The clock seam (like LevelDB's Env::NowMicros/SleepForMicroseconds): code that measures or
// waits takes a Clock, so a test drives a FakeClock instead of sleeping and asserts exact times.
#pragma once

#include <chrono>
#include <mutex>

namespace tg::common {

class Clock {
 public:
  using Duration = std::chrono::steady_clock::duration;
  using TimePoint = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;
  // The current time of a monotonic clock. Thread-safe.
  virtual TimePoint Now() const = 0;
  // Blocks the calling thread for `d` (a FakeClock advances instead). Thread-safe.
  virtual void SleepFor(Duration d) = 0;

  // Milliseconds from `since` to Now().
  double MsSince(TimePoint since) const {
    return std::chrono::duration<double, std::milli>(Now() - since).count();
  }
};

// Milliseconds of std::chrono::steady_clock from `since` to now: the one helper for code that
// measures without a Clock seam (a Clock's own MsSince reads that clock). Thread-safe.
inline double MsSince(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since)
      .count();
}

// The process's real monotonic clock (std::chrono::steady_clock). Never null; not owned by the
// caller; lives for the whole process.
Clock* RealClock();

// A clock that moves only when told: Advance, or SleepFor (which advances by the asked time and
// returns at once). Starts at an arbitrary fixed point. Thread-safe.
class FakeClock : public Clock {
 public:
  TimePoint Now() const override;
  void SleepFor(Duration d) override { Advance(d); }
  void Advance(Duration d);  // moves Now() forward by `d`

 private:
  mutable std::mutex mu_;
  TimePoint now_ = TimePoint(std::chrono::hours(1));
};

}  // namespace tg::common
