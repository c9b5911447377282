// `truegreen generate` end to end: the real binary on the tiny generated pipelines, exit codes,
// JSON output, written PNGs, policy behaviour and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sd/infotext.h"
#include "sd/png.h"
#include "tests/support/test_util.h"

namespace {

namespace fs = std::filesystem;
using tg::testing::ReadFile;
using tg::testing::RunTruegreen;
using tg::testing::TempDir;

std::string Tiny(const std::string& variant) {
  return tg::testing::BinaryDir() + "/models/sd-tiny/" + variant;
}

// `--policy dev generate` on a tiny variant with 2 steps at 256x256, unless `extra` sets
// --steps or --size itself (CLI11 refuses a repeated option).
std::vector<std::string> DevGenerate(const std::string& variant, const std::string& out,
                                     std::vector<std::string> extra = {}) {
  auto has = [&](const std::string& flag) {
    return std::find(extra.begin(), extra.end(), flag) != extra.end();
  };
  std::vector<std::string> args = {"--policy",         "dev",         "generate",
                                   "--model",          Tiny(variant), "--prompt",
                                   "a photo of a cat", "-o",          out};
  if (!has("--steps")) args.insert(args.end(), {"--steps", "2"});
  if (!has("--size")) args.insert(args.end(), {"--size", "256x256"});
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(SdPipelineCliTest, DevPolicyWritesPngAndJsonSaysDegraded) {
  TempDir tmp;
  const std::string out = tmp / "cat.png";
  auto r = RunTruegreen(DevGenerate("sd15-legacy", out, {"--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["ok"].get<bool>());
  EXPECT_TRUE(j["degraded"].get<bool>());
  EXPECT_EQ(j["variant"], "sd1");
  EXPECT_EQ(j["export"], "legacy");
  EXPECT_EQ(j["scheduler"], "pndm");
  EXPECT_EQ(j["unet_calls"], 3);
  EXPECT_EQ(j["timings_ms"]["unet_per_step"].size(), 3u);
  ASSERT_EQ(j["images"].size(), 1u);
  EXPECT_EQ(j["images"][0]["path"], out);
  auto png = tg::sd::DecodePng(ReadFile(out), out);
  ASSERT_TRUE(png.ok()) << png.status().ToString();
  EXPECT_EQ(png->width, 256);
  EXPECT_EQ(png->height, 256);
}

TEST(SdPipelineCliTest, PngCarriesA1111ParametersAndJsonEchoesThePrompt) {
  TempDir tmp;
  const std::string out = tmp / "p.png";
  auto r = RunTruegreen(DevGenerate("sd15-legacy", out,
                                    {"--json", "--negative", "blurry, low quality", "--seed", "5",
                                     "--scheduler", "euler_a", "--guidance", "6.5"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["prompt"], "a photo of a cat");
  EXPECT_EQ(j["negative_prompt"], "blurry, low quality");
  const std::string hash = j["model_hash"].get<std::string>();
  EXPECT_EQ(hash.size(), 10u);
  // The chunk as libpng reads it.
  auto chunks = tg::sd::ReadPngText(ReadFile(out), out);
  ASSERT_TRUE(chunks.ok()) << chunks.status().ToString();
  ASSERT_EQ(chunks->size(), 1u);
  EXPECT_EQ((*chunks)[0].keyword, "parameters");
  const std::string& text = (*chunks)[0].text;
  EXPECT_EQ(text, j["images"][0]["parameters"].get<std::string>());
  EXPECT_EQ(text.substr(0, text.find('\n')), "a photo of a cat") << text;
  auto p = tg::sd::ParseInfotext(text);
  ASSERT_TRUE(p.ok()) << p.status().ToString() << "\n" << text;
  EXPECT_EQ(p->prompt, "a photo of a cat");
  EXPECT_EQ(p->negative_prompt, "blurry, low quality");
  EXPECT_EQ(p->steps, 2);
  EXPECT_EQ(p->sampler, "Euler a");
  EXPECT_EQ(p->cfg_scale, 6.5);
  EXPECT_EQ(p->seed, 5u);
  EXPECT_EQ(p->width, 256);
  EXPECT_EQ(p->height, 256);
  EXPECT_EQ(p->model_hash, hash);
  EXPECT_EQ(p->version.rfind("truegreen ", 0), 0u) << p->version;
  // The same pipeline files give the same hash; the image is still the same pixels.
  auto png = tg::sd::DecodePng(ReadFile(out), out);
  ASSERT_TRUE(png.ok()) << png.status().ToString();
  EXPECT_EQ(png->width, 256);
}

TEST(SdPipelineCliTest, LongPromptIsTruncatedWithAWarning) {
  TempDir tmp;
  std::string prompt;
  for (int i = 0; i < 90; ++i) prompt += "cat ";  // 90 tokens, 75 fit
  auto args = DevGenerate("sd15-legacy", tmp / "long.png", {"--json"});
  args[std::find(args.begin(), args.end(), "a photo of a cat") - args.begin()] = prompt;
  auto r = RunTruegreen(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("prompt is longer than the text encoder's 77 tokens: the last 15 tokens "
                       "were dropped"),
            std::string::npos)
      << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["warnings"].size(), 1u);
  EXPECT_NE(j["warnings"][0].get<std::string>().find("15 tokens"), std::string::npos);
  // A prompt that fits says nothing.
  auto ok = RunTruegreen(DevGenerate("sd15-legacy", tmp / "short.png", {"--json"}));
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(nlohmann::json::parse(ok.out)["warnings"].size(), 0u);
  EXPECT_EQ(ok.err.find("dropped"), std::string::npos) << ok.err;
}

TEST(SdPipelineCliTest, SdxlBucketSizeIsAccepted) {
  TempDir tmp;
  auto r = RunTruegreen(DevGenerate("sd15-legacy", tmp / "wide.png",
                                    {"--size", "1216x832", "--steps", "1", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto png = tg::sd::DecodePng(ReadFile(tmp / "wide.png"), "wide.png");
  ASSERT_TRUE(png.ok()) << png.status().ToString();
  EXPECT_EQ(png->width, 1216);
  EXPECT_EQ(png->height, 832);
}

TEST(SdPipelineCliTest, TextOutputHasTimingSummaryAndDegradedLabel) {
  TempDir tmp;
  auto r = RunTruegreen(DevGenerate("sdxl-optimum", tmp / "xl.png", {"--size", "256x320"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("generated 1 image 256x320: sdxl pipeline"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("timings ms: tokenize"), std::string::npos) << r.out;
  // The startup chain is printed once: one line per step.
  const auto first = r.out.find("startup:    factory");
  ASSERT_NE(first, std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("startup:    factory", first + 1), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("DEGRADED"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("DEGRADED"), std::string::npos) << r.err;
  // Not a terminal: no progress bar.
  EXPECT_EQ(r.err.find("generate ["), std::string::npos) << r.err;
}

TEST(SdPipelineCliTest, ProductionPolicyRefusesWithoutGpuPath) {
  TempDir tmp;
  auto r = RunTruegreen({"generate", "--model", Tiny("sd15-legacy"), "--prompt", "a cat", "--steps",
                         "2", "--size", "256x256", "-o", tmp / "p.png"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("truegreen generate: "), std::string::npos) << r.err;
  EXPECT_GT(r.err.size(), std::string("truegreen generate: \n").size() + 10) << r.err;
  EXPECT_FALSE(fs::exists(tmp / "p.png"));
}

// The one startup chain: generate reports the same steps as run, in order.
TEST(SdPipelineCliTest, StartupStepsInOrderAndProductionStopsAtFactory) {
  TempDir tmp;
  auto r = RunTruegreen(DevGenerate("sd15-legacy", tmp / "s.png", {"--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  const auto& steps = j["startup"]["steps"];
  ASSERT_EQ(steps.size(), 6u) << j["startup"].dump(2);
  const char* order[] = {"snapshot", "admit", "factory", "open", "canary", "warmup"};
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(steps[i]["step"], order[i]) << i;
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(steps[i]["outcome"], "ok") << steps[i].dump();
  EXPECT_EQ(steps[3]["detail"], Tiny("sd15-legacy"));
  EXPECT_EQ(steps[4]["outcome"], "skipped");
  EXPECT_EQ(steps[4]["detail"], "skipped: no GPU provider attached");

  auto p = RunTruegreen({"--json", "generate", "--model", Tiny("sd15-legacy"), "--prompt", "a cat",
                         "--steps", "2", "--size", "256x256", "-o", tmp / "p.png"});
  ASSERT_EQ(p.exit_code, 3) << p.out << p.err;
  auto pj = nlohmann::json::parse(p.out);
  ASSERT_FALSE(pj["startup"]["steps"].empty()) << pj.dump(2);
  EXPECT_EQ(pj["startup"]["steps"].back()["step"], "factory") << pj["startup"].dump(2);
  EXPECT_EQ(pj["startup"]["steps"].back()["outcome"], "refused");
}

TEST(SdPipelineCliTest, SameSeedBitIdenticalDifferentSeedDiffers) {
  TempDir tmp;
  auto a = RunTruegreen(DevGenerate("sd15-optimum-fp16", tmp / "a.png", {"--seed", "7"}));
  auto b = RunTruegreen(DevGenerate("sd15-optimum-fp16", tmp / "b.png", {"--seed", "7"}));
  auto c = RunTruegreen(DevGenerate("sd15-optimum-fp16", tmp / "c.png", {"--seed", "8"}));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(ReadFile(tmp / "a.png"), ReadFile(tmp / "b.png"));
  EXPECT_NE(ReadFile(tmp / "a.png"), ReadFile(tmp / "c.png"));
}

TEST(SdPipelineCliTest, BatchWritesOneFilePerImage) {
  TempDir tmp;
  auto r =
      RunTruegreen(DevGenerate("sd21-optimum", tmp / "img.png",
                               {"--batch", "2", "--seed", "3", "--scheduler", "euler", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["images"].size(), 2u);
  EXPECT_EQ(j["images"][1]["seed"], 4);
  EXPECT_EQ(j["prediction_type"], "v_prediction");
  EXPECT_TRUE(fs::exists(tmp / "img-0.png"));
  EXPECT_TRUE(fs::exists(tmp / "img-1.png"));
}

struct BadCase {
  std::string name;
  std::vector<std::string> extra;
  std::string needle;
};

TEST(SdPipelineCliTest, BadInputExitsTwoNamingTheProblem) {
  TempDir tmp;
  tg::testing::WriteFile(tmp / "huge.txt", std::string(10u << 20, 'a'));
  const std::vector<BadCase> cases = {
      {"width", {"--size", "500x512"}, "width 500 is not a multiple of 8"},
      {"too wide",
       {"--size", "2056x512"},
       "--size '2056x512': width 2056 is out of range: a "
       "multiple of 8 in 256..2048 is required"},
      {"too short", {"--size", "512x248"}, "height 248 is out of range"},
      {"huge", {"--size", "99999999999x512"}, "is out of range"},
      {"size format", {"--size", "big"}, "--size 'big' is not WIDTHxHEIGHT"},
      {"size format 2", {"--size", "512x"}, "is not WIDTHxHEIGHT"},
      {"steps 0", {"--steps", "0"}, "--steps: '0' is outside the range of this option"},
      {"steps 10000", {"--steps", "10000"}, "--steps: '10000' is outside"},
      {"scheduler", {"--scheduler", "warp_drive"}, "warp_drive"},
      {"rng", {"--rng", "dice"}, "--rng"},
  };
  for (const auto& c : cases) {
    auto r = RunTruegreen(DevGenerate("sd15-legacy", tmp / "x.png", c.extra));
    EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << c.name << ": " << r.err;
  }
  auto huge = RunTruegreen({"--policy", "dev", "generate", "--model", Tiny("sd15-legacy"),
                            "--prompt-file", tmp / "huge.txt", "-o", tmp / "x.png"});
  EXPECT_EQ(huge.exit_code, 2) << huge.err;
  EXPECT_NE(huge.err.find("huge.txt"), std::string::npos) << huge.err;
  EXPECT_FALSE(fs::exists(tmp / "x.png"));
}

TEST(SdPipelineCliTest, BadModelFoldersExitTwo) {
  TempDir tmp;
  auto missing = RunTruegreen(DevGenerate("no-such-variant", tmp / "x.png"));
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_NE(missing.err.find("no-such-variant"), std::string::npos) << missing.err;

  auto mismatch = RunTruegreen(DevGenerate("bad-shape-mismatch", tmp / "x.png"));
  EXPECT_EQ(mismatch.exit_code, 2) << mismatch.err;
  EXPECT_NE(mismatch.err.find("mismatched shapes"), std::string::npos) << mismatch.err;

  const std::string dir = tmp / "corrupt";
  fs::copy(Tiny("sd15-legacy"), dir, fs::copy_options::recursive);
  tg::testing::WriteFile(dir + "/unet/model.onnx", "this is not an onnx protobuf");
  auto corrupt = RunTruegreen({"--policy", "dev", "generate", "--model", dir, "--prompt", "x",
                               "--steps", "2", "--size", "256x256", "-o", tmp / "x.png"});
  EXPECT_EQ(corrupt.exit_code, 2) << corrupt.err;
  EXPECT_NE(corrupt.err.find("unet/model.onnx"), std::string::npos) << corrupt.err;
  EXPECT_FALSE(fs::exists(tmp / "x.png"));
}

}  // namespace
