#include "common/telemetry.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "common/process.h"

namespace tg::common {
namespace {

TEST(TelemetryTest, OnlyOneOptsIn) {
  EXPECT_TRUE(IsOrtTelemetryOptIn("1"));
  for (const char* v : {static_cast<const char*>(nullptr), "", "0", "true", "yes", "1 ", " 1"}) {
    EXPECT_FALSE(IsOrtTelemetryOptIn(v)) << (v ? v : "(unset)");
  }
}

// This test binary has not opted in: the policy sets the opt-out in its own environment and every
// child gets it, even one whose caller asked to remove or change it.
TEST(TelemetryTest, ProcessAndChildrenCarryTheOptOut) {
  if (IsOrtTelemetryOptIn(std::getenv(kOrtTelemetryOptInVar))) {
    GTEST_SKIP() << kOrtTelemetryOptInVar << "=1 in this test's environment: opted in";
  }
  ApplyOrtTelemetryPolicy();
  EXPECT_FALSE(OrtTelemetryOptedIn());
  const char* own = std::getenv(kOrtDisableTelemetryVar);
  ASSERT_NE(own, nullptr);
  EXPECT_STREQ(own, "1");
  for (int variant = 0; variant < 3; ++variant) {
    ProcessOptions o;
    if (variant == 1) o.unset_env.insert(kOrtDisableTelemetryVar);
    if (variant == 2) o.env[kOrtDisableTelemetryVar] = "0";
    ProcessResult r = RunProcess({"/usr/bin/env"}, o);
    ASSERT_TRUE(r.started) << r.error;
    EXPECT_NE(("\n" + r.out).find("\nORT_DISABLE_TELEMETRY=1\n"), std::string::npos)
        << "variant " << variant << ":\n"
        << r.out;
  }
}

}  // namespace
}  // namespace tg::common
