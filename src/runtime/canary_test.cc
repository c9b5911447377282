#include "runtime/canary.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "runtime/canary_ops.h"

namespace tg::runtime {
namespace {

// A child that answers nothing (/bin/true): the verdict is NOT_RUN, never a pass, and no file is
// written; what is checked here is which cases the run covers and the key it would cache under.
CanaryReport RunWithSilentChild(const std::vector<std::string>& op_types) {
  CanaryOptions o;
  o.child_argv = {"/bin/true"};
  o.cache_dir = (std::filesystem::temp_directory_path() / "tg-canary-test-never-written").string();
  o.op_types = op_types;
  return RunCanary(o);
}

TEST(CanaryOpFilter, OnlyTheListedOpTypesRunAndTheyKeyTheirOwnVerdict) {
  const CanaryReport all = RunWithSilentChild({});
  const CanaryReport slice = RunWithSilentChild({"Slice", "Softmax"});
  EXPECT_EQ(all.cases.size(), BuiltinCanaryCases().size());
  ASSERT_FALSE(slice.cases.empty());
  EXPECT_LT(slice.cases.size(), all.cases.size());
  for (const auto& c : slice.cases) {
    EXPECT_TRUE(c.op_type == "Slice" || c.op_type == "Softmax") << c.name;
  }
  EXPECT_NE(slice.verdict, policy::CanaryOutcome::kPass);
  EXPECT_NE(all.verdict, policy::CanaryOutcome::kPass);
  // A verdict for a subset must never answer for the whole set (or another subset).
  EXPECT_FALSE(all.cache_key.empty());
  EXPECT_NE(slice.cache_key, all.cache_key);
  EXPECT_NE(RunWithSilentChild({"Slice"}).cache_key, slice.cache_key);
  EXPECT_FALSE(std::filesystem::exists(slice.cache_file));
}

}  // namespace
}  // namespace tg::runtime
