// The GPU verification kit's check script, run here without a GPU: it must still write one valid
// JSON summary that says there is no GPU and why, with the steps that need none (probe, doctor
// with the bundled pair and the op canary, the full-size models' parameter counts) and their
// findings.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/config.h"
#include "tests/support/test_util.h"

namespace tg {
namespace {

using ::testing::HasSubstr;

const common::Json* Step(const common::Json& summary, const std::string& prefix) {
  for (const auto& s : summary["steps"]) {
    if (s["name"].get<std::string>().rfind(prefix, 0) == 0) return &s;
  }
  return nullptr;
}

TEST(GpuKit, CheckScriptWritesOneJsonSummarySayingNoGpu) {
  testing::TempDir dir;
  const std::string out = dir / "gpu.json";
  testing::ProcessResult r =
      testing::RunProcess({"/bin/bash", testing::SourceDir() + "/scripts/gpu_check.sh", "--build",
                           testing::BinaryDir(), "--out", out},
                          {{"TRUEGREEN_LIB_PATH", testing::kUnset}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = common::ParseJson(testing::ReadFile(out), out);
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_EQ((*j)["schema"], "truegreen.gpu_check/v1");
  if ((*j)["gpu"].get<bool>()) GTEST_SKIP() << "this machine has a GPU; the summary says so";
  EXPECT_THAT((*j)["reason"].get<std::string>(), HasSubstr("nvidia-smi"));

  const common::Json* probe = Step(*j, "probe");
  ASSERT_NE(probe, nullptr);
  EXPECT_EQ((*probe)["exit_code"], 0);
  EXPECT_EQ((*probe)["ort"]["core_flavor"], "gpu");

  // The bundled pair (a GPU-flavor core beside its providers) passes the build-flavor rule; the
  // node is refused for its missing driver.
  const common::Json* prod = Step(*j, "doctor production");
  ASSERT_NE(prod, nullptr);
  EXPECT_EQ((*prod)["exit_code"], 3);
  EXPECT_EQ((*prod)["verdict"], "NOT ACCELERATED");
  EXPECT_THAT((*prod)["causes"].dump(), HasSubstr("driver.library"));
  EXPECT_THAT((*prod)["causes"].dump(), ::testing::Not(HasSubstr("onnxruntime.core_flavor")));
  EXPECT_EQ((*prod)["canary"]["verdict"], "NOT_RUN");

  const common::Json* dev = Step(*j, "doctor dev");
  ASSERT_NE(dev, nullptr);
  EXPECT_EQ((*dev)["canary"]["verdict"], "NOT_RUN");
  EXPECT_TRUE((*dev)["canary"]["failed"].empty()) << (*dev)["canary"].dump();
  EXPECT_GT((*j)["total_wall_s"].get<double>(), 0.0);

  // The real workload's models are written on the node; here the kit still counts them.
  const common::Json* models = Step(*j, "full-size SD models");
  ASSERT_NE(models, nullptr);
  EXPECT_EQ((*models)["exit_code"], 0) << (*models)["stderr_tail"];
  const double unet = (*models)["models"]["sd15-optimum-fp16"]["unet"]["params"].get<double>();
  EXPECT_NEAR(unet, 859.5e6, 8.6e6);
  EXPECT_GT((*models)["models"]["sdxl-optimum-fp16"]["unet"]["params"].get<double>(), 2.5e9);
  EXPECT_EQ(Step(*j, "write full-size"), nullptr) << "no GPU: nothing is generated";
  EXPECT_TRUE((*j)["figures"].empty()) << (*j)["figures"].dump();
}

}  // namespace
}  // namespace tg
