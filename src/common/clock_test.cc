#include "common/clock.h"

#include <gtest/gtest.h>

#include <chrono>

namespace tg::common {
namespace {

TEST(ClockTest, MsSinceCountsSteadyMillisecondsFromAPastPoint) {
  const auto t0 = std::chrono::steady_clock::now() - std::chrono::milliseconds(250);
  const double ms = MsSince(t0);
  EXPECT_GE(ms, 250.0);
  EXPECT_LT(ms, 250.0 + 60'000.0);  // not seconds or microseconds by mistake
  EXPECT_LE(MsSince(std::chrono::steady_clock::now()), MsSince(t0));
}

TEST(ClockTest, AClocksMsSinceReadsThatClock) {
  FakeClock clock;
  const auto t0 = clock.Now();
  clock.Advance(std::chrono::microseconds(1500));
  EXPECT_DOUBLE_EQ(clock.MsSince(t0), 1.5);
}

}  // namespace
}  // namespace tg::common
