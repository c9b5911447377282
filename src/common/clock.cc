#include "common/clock.h"

#include <thread>

namespace tg::common {
namespace {

class SteadyClock : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  void SleepFor(Duration d) override { std::this_thread::sleep_for(d); }
};

}  // namespace

Clock* RealClock() {
  static SteadyClock* clock = new SteadyClock();  // never destroyed: usable during exit
  return clock;
}

Clock::TimePoint FakeClock::Now() const {
  std::lock_guard<std::mutex> l(mu_);
  return now_;
}

void FakeClock::Advance(Duration d) {
  std::lock_guard<std::mutex> l(mu_);
  now_ += d;
}

}  // namespace tg::common
