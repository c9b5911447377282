// What the hostile-input tables (tests/hostile_*_test.cc) assert about one run of the binary: it
// ended on its own, with the expected exit code and message, within its peak-RSS ceiling and its
// time limit. One copy of the checks, and of the allowance sanitizer builds get. Header-only;
// test thread only.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "tests/support/measured_run.h"

namespace tg::testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kUnderAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kUnderAsan = true;
#else
inline constexpr bool kUnderAsan = false;
#endif
#else
inline constexpr bool kUnderAsan = false;
#endif

// The peak-RSS ceiling (MiB) of a case whose budget in a plain build is `mib`. ASan reports its
// shadow memory and quarantine as RSS: four times the use, on top of its own fixed ~384 MiB.
inline long RssCeilingMib(long mib) { return kUnderAsan ? mib * 4 + 384 : mib; }

// The time limit (s) of a case whose limit in a plain build is `seconds`: instrumented code runs
// about three times slower.
inline int TimeLimitS(int seconds) { return kUnderAsan ? seconds * 3 : seconds; }

struct HostileBounds {
  int exit_code = 0;
  std::string fragment;          // expected in stderr + stdout; "" = not checked
  std::string must_not_contain;  // never echoed; "" = not checked
  long max_rss_mib = 0;          // plain-build budget (scaled by RssCeilingMib); 0 = none
  int time_limit_s = 0;          // plain-build limit (scaled by TimeLimitS); 0 = none
  // Under ASan, for a case whose memory is millions of small blocks (YAML nodes, JSON values):
  // ASan pads every block and keeps 256 MiB of freed ones in quarantine, far more than the
  // generic scaling allows. 0 = RssCeilingMib(max_rss_mib).
  long asan_rss_mib = 0;
};

// The peak-RSS ceiling (MiB) of a case in this build.
inline long CaseRssCeilingMib(long max_rss_mib, long asan_rss_mib) {
  return kUnderAsan && asan_rss_mib > 0 ? asan_rss_mib : RssCeilingMib(max_rss_mib);
}

// Checks `r`, a run that took `took_s` seconds, against `b`. Stops at a hang (the watchdog killed
// the child: nothing else it reports means anything).
inline void ExpectWithinBounds(const MeasuredOutcome& r, const HostileBounds& b, double took_s) {
  const std::string all = r.err + r.out;
  ASSERT_FALSE(r.timed_out) << "hung: " << all.substr(0, 2000);
  EXPECT_EQ(r.exit_code, b.exit_code) << all.substr(0, 2000);
  if (!b.fragment.empty()) {
    EXPECT_NE(all.find(b.fragment), std::string::npos) << all.substr(0, 2000);
  }
  if (!b.must_not_contain.empty()) {
    EXPECT_EQ(all.find(b.must_not_contain), std::string::npos) << all.substr(0, 2000);
  }
  if (b.max_rss_mib > 0) {
    EXPECT_LE(r.max_rss_kb, CaseRssCeilingMib(b.max_rss_mib, b.asan_rss_mib) * 1024)
        << "peak RSS " << r.max_rss_kb / 1024 << " MB";
  }
  if (b.time_limit_s > 0) {
    EXPECT_LE(took_s, TimeLimitS(b.time_limit_s)) << "took " << took_s << " s";
  }
}

}  // namespace tg::testing
