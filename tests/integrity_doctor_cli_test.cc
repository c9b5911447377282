// `truegreen doctor` on this machine: production expectations (the default) and --policy dev.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

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
  // The verdict and causes; the full check list only behind --verbose.
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("All checks:")));
  EXPECT_THAT(r.out, HasSubstr("(all of them: doctor --verbose; everything: --json)"));
  testing::ProcessResult v = testing::RunTruegreen({"doctor", "--verbose"}, kEnv);
  EXPECT_EQ(v.exit_code, 3);
  EXPECT_THAT(v.out, StartsWith("NOT ACCELERATED\n"));
  EXPECT_THAT(v.out, HasSubstr("All checks:"));
  EXPECT_THAT(v.out, HasSubstr("Causes and fixes:"));
  EXPECT_GT(v.out.size(), r.out.size());
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

// doctor goes through the one startup chain: production stops at the factory (no GPU path here),
// dev runs to the end and skips the canary (no GPU provider attached: nothing proven, no child).
TEST(DoctorCli, StartupChainStepsInJson) {
  if (GpuPathHere()) GTEST_SKIP() << "this machine has a working GPU path";
  testing::ProcessResult p = testing::RunTruegreen({"--json", "doctor"}, kEnv);
  ASSERT_EQ(p.exit_code, 3) << p.out << p.err;
  auto pj = common::ParseJson(p.out, "doctor");
  ASSERT_TRUE(pj.ok()) << p.out;
  const common::Json& ps = (*pj)["startup"]["steps"];
  ASSERT_EQ(ps.size(), 3u) << (*pj)["startup"].dump(2);
  EXPECT_EQ(ps[0]["step"], "snapshot");
  EXPECT_EQ(ps[1]["step"], "admit");
  EXPECT_EQ(ps[2]["step"], "factory");
  EXPECT_EQ(ps[2]["outcome"], "refused");
  EXPECT_THAT(ps[2]["detail"].get<std::string>(), HasSubstr("cannot be attached"));

  testing::ProcessResult d = testing::RunTruegreen({"--json", "--policy", "dev", "doctor"}, kEnv);
  ASSERT_EQ(d.exit_code, 0) << d.out << d.err;
  auto dj = common::ParseJson(d.out, "doctor");
  ASSERT_TRUE(dj.ok()) << d.out;
  const common::Json& ds = (*dj)["startup"]["steps"];
  ASSERT_EQ(ds.size(), 5u) << (*dj)["startup"].dump(2);
  const char* order[] = {"snapshot", "admit", "factory", "canary", "warmup"};
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(ds[i]["step"], order[i]) << i;
  EXPECT_EQ(ds[2]["outcome"], "ok");
  EXPECT_EQ(ds[3]["outcome"], "skipped");
  EXPECT_EQ(ds[3]["detail"], "skipped: no GPU provider attached");
}

// Each "startup:" line is complete: one that announces a list lists it; none ends on a colon.
TEST(DoctorCli, NoStartupLineEndsWithAColon) {
  std::size_t seen = 0;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"doctor"},
        std::vector<std::string>{"--policy", "dev", "doctor"}}) {
    testing::ProcessResult r = testing::RunTruegreen(args, kEnv);
    for (std::size_t pos = 0; pos < r.out.size();) {
      const std::size_t nl = std::min(r.out.find('\n', pos), r.out.size());
      std::string line = r.out.substr(pos, nl - pos);
      pos = nl + 1;
      if (!line.starts_with("startup:")) continue;
      ++seen;
      while (!line.empty() && line.back() == ' ') line.pop_back();
      EXPECT_NE(line.back(), ':') << line << "\n" << r.out;
      if (line.find("cannot be attached:") != std::string::npos) {
        EXPECT_GT(line.size(), line.find("cannot be attached:") + 20) << line;
      }
    }
  }
  EXPECT_GE(seen, 3u) << "doctor printed no startup lines";
}

// The failing check ids of `truegreen --json doctor <args>`, with exit code 3 asserted.
std::set<std::string> FailingChecks(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"--json", "doctor"};
  argv.insert(argv.end(), args.begin(), args.end());
  testing::ProcessResult r = testing::RunTruegreen(argv, kEnv);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  auto j = common::ParseJson(r.out, "doctor");
  EXPECT_TRUE(j.ok()) << r.out;
  std::set<std::string> out;
  if (!j.ok()) return out;
  for (const auto& c : (*j)["checks"]) {
    if (c["result"] == "FAIL") out.insert(c["id"].get<std::string>());
  }
  return out;
}

// With setup's pair (a GPU-flavor core beside its providers), what keeps this GPU-less machine out
// is the missing driver and devices, and TensorRT where the matrix names it (not installed here):
// never the ONNX Runtime core or its pairing.
TEST(DoctorCli, SetupPairFailsOnlyForTheDriverAndTheDevices) {
  if (GpuPathHere()) GTEST_SKIP() << "this machine has a working GPU path";
  const std::set<std::string> driver_and_devices = {"driver.library", "devices.nodes",
                                                    "devices.count",
                                                    "onnxruntime.provider.CUDAExecutionProvider"};
  // The production matrix (what truegreen's image ships): the CUDA provider, no TensorRT.
  EXPECT_EQ(FailingChecks({}), driver_and_devices);
  EXPECT_EQ(FailingChecks({"--matrix", testing::SourceDir() + "/deploy/matrix.production.yaml"}),
            driver_and_devices);
  // The TensorRT variant adds TensorRT, which this machine does not have; nothing else.
  std::set<std::string> with_trt = driver_and_devices;
  with_trt.insert({"tensorrt", "onnxruntime.provider.TensorrtExecutionProvider"});
  EXPECT_EQ(
      FailingChecks({"--matrix", testing::SourceDir() + "/deploy/matrix.production-tensorrt.yaml"}),
      with_trt);
}

}  // namespace
}  // namespace tg
