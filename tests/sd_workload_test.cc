// The small real-architecture pipelines through the whole product, as a user runs them: one with
// its UNet weights in external data (sd15-legacy: unet/weights.pb) and one fp16 export
// (sd15-optimum-fp16) each go through `generate` (a PNG), `serve` (ready, its startup chain
// recorded) and `bench` against that server (requests answered, none failed). Dev policy (CPU).
#include <gtest/gtest.h>

#include <filesystem>

#include "common/config.h"
#include "sd/png.h"
#include "tests/server_harness.h"
#include "tests/support/test_util.h"

namespace tg {
namespace {

namespace fs = std::filesystem;
using testing::RunTruegreen;

class SdWorkloadTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::string Pipeline() const { return testing::BinaryDir() + "/models/sd-tiny/" + GetParam(); }
};

TEST_P(SdWorkloadTest, GeneratesAPng) {
  testing::TempDir d;
  const std::string png = d / "out.png";
  auto r = RunTruegreen({"--policy", "dev", "--json", "generate", "--model", Pipeline(), "--prompt",
                         "a photo of a cat", "--steps", "2", "--size", "256x320", "-o", png});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = common::ParseJson(r.out, "generate --json");
  ASSERT_TRUE(j.ok()) << r.out;
  EXPECT_EQ((*j)["precision"], GetParam() == "sd15-optimum-fp16" ? "fp16" : "fp32");
  EXPECT_TRUE((*j)["degraded"].get<bool>()) << "CPU under the dev policy";
  auto img = sd::DecodePng(testing::ReadFile(png), png);
  ASSERT_TRUE(img.ok()) << img.status().ToString();
  EXPECT_EQ(img->width, 256);
  EXPECT_EQ(img->height, 320);
}

TEST_P(SdWorkloadTest, ServesAndBenchAnswersEveryRequest) {
  testing::TempDir repo;
  fs::create_directories(repo / "models");
  fs::create_symlink(Pipeline(), repo / "models/sd");
  testing::ServerProcess s({"--policy", "dev"}, {"--models", repo / "models"});
  ASSERT_GT(s.WaitPort(), 0) << s.Log();
  ASSERT_TRUE(s.WaitReady()) << s.Log();
  const std::string out = repo / "bench.json";
  auto r = RunTruegreen({"bench", "--url", "http://127.0.0.1:" + std::to_string(s.port()),
                         "--concurrency", "2", "--size", "256x256", "--steps", "2", "--warmup", "0",
                         "--window", "10", "--max-trials", "1", "--no-progress", "--no-nvml",
                         "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto j = common::ParseJson(testing::ReadFile(out), out);
  ASSERT_TRUE(j.ok()) << j.status().message();
  ASSERT_EQ((*j)["points"].size(), 1u);
  const auto& p = (*j)["points"][0];
  EXPECT_GT(p["ok"].get<int>(), 0) << p.dump();
  std::uint64_t errors = 0;
  for (const auto& [kind, n] : p["errors"].items()) errors += n.get<std::uint64_t>();
  EXPECT_EQ(errors, 0u) << p.dump();
}

INSTANTIATE_TEST_SUITE_P(ExternalDataAndFp16, SdWorkloadTest,
                         ::testing::Values("sd15-legacy", "sd15-optimum-fp16"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace tg
