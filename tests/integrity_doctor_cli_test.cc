// `truegreen doctor` on this machine: production expectations (the default) and --policy dev.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/config.h"
#include "tests/support/test_util.h"

namespace tg {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::map<std::string, std::string> kEnv = {{"TRUEGREEN_LIB_PATH", testing::kUnset}};

bool GpuPathHere() {
  testing::ProcessResult r = testing::RunTruegreen({"--json", "doctor"}, kEnv);
  auto j = common::ParseJson(r.out, "doctor");
  return j.ok() && (*j)["verdict"] == "ACCELERATED";
}

TEST(DoctorCli, ProductionOnAGpuLessNodeIsNotAccelerated) {
  if (GpuPathHere()) GTEST_SKIP() << "this machine has a working GPU path";
  testing::ProcessResult r = testing::RunTruegreen({"doctor"}, kEnv);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_THAT(r.out, StartsWith("NOT ACCELERATED\n"));
  EXPECT_THAT(r.out, HasSubstr("Causes and fixes:"));
  EXPECT_THAT(r.out, HasSubstr("fix: "));
  EXPECT_THAT(r.out, HasSubstr("libcuda.so.1"));
  // The explicit production policy is the same as the default.
  testing::ProcessResult p = testing::RunTruegreen({"doctor", "--policy", "production"}, kEnv);
  EXPECT_EQ(p.exit_code, 3);
}

TEST(DoctorCli, DevPolicyIsDegradedAndExitsZero) {
  if (GpuPathHere()) GTEST_SKIP() << "this machine has a working GPU path";
  testing::ProcessResult r = testing::RunTruegreen({"doctor", "--policy", "dev"}, kEnv);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, StartsWith("DEGRADED (dev policy: CPU allowed)\n"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("\nACCELERATED")));
  // The same with the deploy file instead of the embedded dev matrix.
  testing::ProcessResult f = testing::RunTruegreen(
      {"doctor", "--matrix", testing::SourceDir() + "/deploy/matrix.dev.yaml"}, kEnv);
  EXPECT_EQ(f.exit_code, 0) << f.out << f.err;
  EXPECT_THAT(f.out, StartsWith("DEGRADED (dev policy: CPU allowed)\n"));
  // JSON carries the verdict, the report and the snapshot it judged.
  testing::ProcessResult j = testing::RunTruegreen({"--json", "doctor", "--policy", "dev"}, kEnv);
  auto doc = common::ParseJson(j.out, "doctor");
  ASSERT_TRUE(doc.ok()) << j.out;
  EXPECT_EQ((*doc)["verdict"], "DEGRADED (dev policy: CPU allowed)");
  EXPECT_EQ((*doc)["accelerated"], false);
  EXPECT_EQ((*doc)["snapshot"]["schema_version"], "truegreen.snapshot/v1");
}

}  // namespace
}  // namespace tg
