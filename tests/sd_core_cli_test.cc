// `truegreen tokenize` and `truegreen schedule` end to end: real binary, real files, exit codes
// and messages for bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/support/test_util.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using tg::testing::RunProcess;
using tg::testing::RunTruegreen;
using tg::testing::TempDir;
using tg::testing::WriteFile;

std::string TokenizerDir() {
  std::string dir = tg::testing::BinaryDir() + "/sd_core_testdata/clip_pad_eot";
  if (fs::exists(dir + "/tokenizer_config.json")) return dir;
  fs::create_directories(tg::testing::BinaryDir() + "/sd_core_testdata");
  std::string tmp = dir + ".tmp" + std::to_string(getpid());
  auto r = RunProcess({tg::testing::SystemPython(),
                       tg::testing::SourceDir() + "/tests/reference/make_clip_tokenizer.py",
                       tg::testing::ClipMergesFile(), tmp});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::error_code ec;
  fs::rename(tmp, dir, ec);
  if (ec) fs::remove_all(tmp);
  return dir;
}

const char* kSd15Config = R"({
  "_class_name": "PNDMScheduler", "_diffusers_version": "0.6.0",
  "beta_end": 0.012, "beta_schedule": "scaled_linear", "beta_start": 0.00085,
  "num_train_timesteps": 1000, "set_alpha_to_one": false, "skip_prk_steps": true,
  "steps_offset": 1, "trained_betas": null, "clip_sample": false
})";

TEST(SdCoreCli, TokenizePrintsIds) {
  auto r = RunTruegreen({"tokenize", "--tokenizer", TokenizerDir(), "--unpadded",
                         "a photo of a cat", "It's 2 dogs!"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "49406 320 1125 539 320 2368 49407");
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2);
}

TEST(SdCoreCli, TokenizeJson) {
  auto r = RunTruegreen(
      {"--json", "tokenize", "--tokenizer", TokenizerDir(), "--tokens", "a photo of a cat"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["pad_id"], 49407);
  EXPECT_EQ(j["max_length"], 77);
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["ids"].size(), 77u);
  EXPECT_EQ(j["results"][0]["ids"][5], 2368);
  EXPECT_EQ(j["results"][0]["tokens"][5], "cat</w>");
  // Invalid UTF-8 in the prompt must not break the JSON document.
  auto bad = RunTruegreen({"tokenize", "--tokenizer", TokenizerDir(), "--json", "caf\xff"});
  ASSERT_EQ(bad.exit_code, 0) << bad.err;
  EXPECT_NO_THROW(json::parse(bad.out));
}

TEST(SdCoreCli, TokenizeWarnsHowManyTokensWereDropped) {
  std::string long_text;
  for (int i = 0; i < 100; ++i) long_text += "cat ";  // 100 tokens; 75 fit between BOS and EOS
  auto r = RunTruegreen(
      {"--json", "tokenize", "--tokenizer", TokenizerDir(), "a photo of a cat", long_text});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("text 2 is longer than 77 tokens: the last 25 tokens were dropped"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("text 1"), std::string::npos) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["results"][0]["dropped_tokens"], 0);
  EXPECT_EQ(j["results"][1]["dropped_tokens"], 25);
  EXPECT_EQ(j["results"][1]["ids"][76], 49407);  // still ends with EOS
  auto shorter = RunTruegreen(
      {"tokenize", "--tokenizer", TokenizerDir(), "--max-length", "10", "--unpadded", long_text});
  ASSERT_EQ(shorter.exit_code, 0) << shorter.err;
  EXPECT_NE(shorter.err.find("the last 92 tokens were dropped"), std::string::npos) << shorter.err;
}

TEST(SdCoreCli, TokenizeMissingFolder) {
  TempDir dir;
  auto r = RunTruegreen({"tokenize", "--tokenizer", dir.path(), "hello"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir.path() + "/vocab.json"), std::string::npos) << r.err;
}

TEST(SdCoreCli, ScheduleTextAndJson) {
  TempDir dir;
  WriteFile(dir / "scheduler_config.json", kSd15Config);
  auto t = RunTruegreen({"schedule", "--config", dir / "scheduler_config.json", "--steps", "20"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("pndm"), std::string::npos);
  EXPECT_NE(t.out.find("21 UNet calls"), std::string::npos) << t.out;
  auto j = RunTruegreen({"schedule", "--config", dir / "scheduler_config.json", "--scheduler",
                         "euler", "--steps", "10", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  json out = json::parse(j.out);
  EXPECT_EQ(out["scheduler"], "euler");
  EXPECT_EQ(out["timestep_spacing"], "linspace");
  EXPECT_EQ(out["timesteps"].size(), 10u);
  EXPECT_EQ(out["sigmas"].size(), 11u);
  EXPECT_EQ(out["timesteps"][0], 999.0);
  EXPECT_NEAR(out["init_noise_sigma"].get<double>(), 14.6146, 1e-3);
}

TEST(SdCoreCli, ScheduleBadInput) {
  TempDir dir;
  WriteFile(dir / "scheduler_config.json", kSd15Config);
  const std::string cfg = dir / "scheduler_config.json";
  auto unknown = RunTruegreen({"schedule", "--config", cfg, "--scheduler", "heun"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown scheduler 'heun'"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("euler_a"), std::string::npos);
  for (const char* steps : {"0", "10000"}) {
    auto r = RunTruegreen({"schedule", "--config", cfg, "--steps", steps});
    EXPECT_EQ(r.exit_code, 2) << steps;
    EXPECT_NE(r.err.find("--steps: '" + std::string(steps) + "' is outside the range"),
              std::string::npos)
        << r.err;
  }
  WriteFile(dir / "bad.json", R"({"beta_schedule": "cubic", "num_train_timesteps": 1000})");
  auto bad = RunTruegreen({"schedule", "--config", dir / "bad.json"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find(dir / "bad.json"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("beta_schedule"), std::string::npos);
  WriteFile(dir / "broken.json", "{\"beta_start\": ");
  auto broken = RunTruegreen({"schedule", "--config", dir / "broken.json"});
  EXPECT_EQ(broken.exit_code, 2);
  EXPECT_NE(broken.err.find("broken.json"), std::string::npos) << broken.err;
  auto missing = RunTruegreen({"schedule", "--config", dir / "nope.json"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("nope.json"), std::string::npos);
}

}  // namespace
