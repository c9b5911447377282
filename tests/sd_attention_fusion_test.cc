// The attention rewrite on every bundled pipeline (tools/gen_sd.py's small SD 1.5 / 2.1 / SDXL
// exports, fp32 and fp16): op counts before and after, the check at open, and `generate` images
// within 1 LSB of the unfused ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/attention_rewrite.h"
#include "runtime/onnx_graph.h"
#include "runtime/onnx_model.h"
#include "runtime/session.h"
#include "sd/png.h"
#include "tests/support/test_util.h"

namespace tg {
namespace {

std::string Tiny(const std::string& variant) {
  return testing::BinaryDir() + "/models/sd-tiny/" + variant;
}

const std::vector<std::string> kPipelines = {"sd15-legacy",  "sd15-optimum", "sd15-optimum-fp16",
                                             "sd21-optimum", "sdxl-optimum", "sdxl-optimum-fp16"};

std::vector<std::string> ModelsOf(const std::string& variant) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(Tiny(variant))) {
    const auto m = e.path() / "model.onnx";
    if (std::filesystem::is_regular_file(m)) out.push_back(m.string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

int Count(const std::map<std::string, int>& ops, const std::string& op) {
  auto it = ops.find(op);
  return it == ops.end() ? 0 : it->second;
}

TEST(SdAttentionFusion, EveryChainOfEveryBundledPipelineIsRewritten) {
  int models = 0;
  for (const auto& variant : kPipelines) {
    for (const auto& path : ModelsOf(variant)) {
      SCOPED_TRACE(path);
      auto graph = runtime::ReadOnnxGraph(path);
      ASSERT_TRUE(graph.ok());
      const int chains = runtime::AnalyzeAttention(*graph).unfused_chains;
      if (chains == 0) continue;  // no attention (none of these models)
      ++models;
      auto m = runtime::OnnxModel::Load(path);
      ASSERT_TRUE(m.ok()) << m.status().ToString();
      auto rep = runtime::RewriteAttention(&*m);
      ASSERT_TRUE(rep.ok()) << rep.status().ToString();
      EXPECT_EQ(rep->chains, chains);
      EXPECT_EQ(rep->rewritten, chains) << ::testing::PrintToString(rep->skipped);
      EXPECT_EQ(Count(rep->ops_after, "com.microsoft.MultiHeadAttention"), chains);
      EXPECT_EQ(Count(rep->ops_after, "Softmax"), Count(rep->ops_before, "Softmax") - chains);
      // Two MatMuls (QK, PV) per chain are gone; the projections stay.
      EXPECT_EQ(Count(rep->ops_after, "MatMul"), Count(rep->ops_before, "MatMul") - 2 * chains);
      // The attention check over the rewritten graph: all fused.
      auto bytes = m->Serialize();
      ASSERT_TRUE(bytes.ok());
      auto after = runtime::ParseOnnxGraph(reinterpret_cast<const std::uint8_t*>(bytes->data()),
                                           bytes->size(), path);
      ASSERT_TRUE(after.ok());
      const runtime::AttentionReport a = runtime::AnalyzeAttention(*after);
      EXPECT_EQ(a.verdict, "fused");
      EXPECT_EQ(a.fused_ops, chains);
      // Shape inference still runs through the rewritten graph (the memory model's input).
      EXPECT_TRUE(m->InferShapes({}).ok());
    }
  }
  EXPECT_EQ(models, 3 * 6 + 2);  // UNet, text encoder(s), VAE decoder per pipeline
}

// Opening each model checks the rewrite against the original (outputs within the stated
// tolerance) before the session uses it.
TEST(SdAttentionFusion, OpenChecksEveryRewrittenModel) {
  testing::TempDir cache;
  testing::ScopedEnv env("TRUEGREEN_CACHE_DIR", cache.path().c_str());
  auto ort = runtime::OrtRuntime::Open(common::LibraryLoader::WithDefaults({}));
  ASSERT_TRUE(ort.ok()) << ort.status().ToString();
  auto f = runtime::SessionFactory::Create(runtime::DevPolicy(), **ort);
  ASSERT_TRUE(f.ok());
  for (const auto& variant : {"sd15-optimum", "sdxl-optimum-fp16"}) {
    for (const auto& path : ModelsOf(variant)) {
      SCOPED_TRACE(path);
      auto s = f->Open(path);
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      const runtime::AttentionReport& a = s->report().attention;
      EXPECT_EQ(a.verdict, "fused") << a.fusion;
      EXPECT_GT(a.fused_by_truegreen, 0);
      EXPECT_NE(a.fusion.find("checked on"), std::string::npos) << a.fusion;
    }
  }
}

std::vector<std::uint8_t> Generate(const std::string& variant, const std::string& out, bool fused) {
  std::vector<std::string> args = {"--policy", "dev",    "generate", "--model", Tiny(variant),
                                   "--prompt", "a cat",  "--steps",  "2",       "--size",
                                   "256x256",  "--seed", "7",        "-o",      out};
  if (!fused) args.push_back("--no-fuse-attention");
  auto r = testing::RunTruegreen(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto png = sd::DecodePng(testing::ReadFile(out), out);
  EXPECT_TRUE(png.ok()) << png.status().ToString();
  return png.ok() ? png->pixels : std::vector<std::uint8_t>{};
}

TEST(SdAttentionFusion, GenerateImagesWithinOneLsbOfTheUnfusedOnes) {
  testing::TempDir tmp;
  testing::ScopedEnv env("TRUEGREEN_CACHE_DIR", (tmp / "cache").c_str());
  for (const auto& variant : {"sd15-optimum", "sdxl-optimum"}) {
    SCOPED_TRACE(variant);
    const auto fused = Generate(variant, tmp / "fused.png", true);
    const auto plain = Generate(variant, tmp / "plain.png", false);
    ASSERT_EQ(fused.size(), std::size_t{256} * 256 * 3);
    ASSERT_EQ(plain.size(), fused.size());
    int worst = 0;
    for (std::size_t i = 0; i < fused.size(); ++i)
      worst = std::max(worst, std::abs(fused[i] - plain[i]));
    EXPECT_LE(worst, 1);
    // The rewrite did run: its verdict is in the cache.
    int verdicts = 0;
    for (const auto& e : std::filesystem::directory_iterator(tmp / "cache")) {
      verdicts += e.path().extension() == ".json";
    }
    EXPECT_GE(verdicts, 3);
  }
}

}  // namespace
}  // namespace tg
