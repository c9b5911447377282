#include "common/interrupt.h"

#include <gtest/gtest.h>

#include <csignal>

namespace tg::common {
namespace {

std::atomic<int> g_outer_calls{0};
extern "C" void OuterHandler(int) { g_outer_calls.fetch_add(1); }

TEST(SigintScopeTest, SigintSetsTheFlagInsteadOfEndingTheProcess) {
  SigintScope scope;
  EXPECT_FALSE(SigintScope::Interrupted());
  ASSERT_EQ(std::raise(SIGINT), 0);  // without the scope this would end the test binary
  EXPECT_TRUE(SigintScope::Interrupted());
  EXPECT_TRUE(SigintScope::Flag()->load());
}

TEST(SigintScopeTest, ANewScopeClearsTheFlagAndTheOldHandlerComesBack) {
  auto before = std::signal(SIGINT, OuterHandler);
  {
    SigintScope scope;
    ASSERT_EQ(std::raise(SIGINT), 0);
    EXPECT_TRUE(SigintScope::Interrupted());
    EXPECT_EQ(g_outer_calls.load(), 0);  // ours ran, not the outer one
  }
  {
    SigintScope again;
    EXPECT_FALSE(SigintScope::Interrupted());
  }
  ASSERT_EQ(std::raise(SIGINT), 0);
  EXPECT_EQ(g_outer_calls.load(), 1);  // restored
  std::signal(SIGINT, before);
}

}  // namespace
}  // namespace tg::common
