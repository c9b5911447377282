// The Stable Diffusion generator (tools/gen_sd.py) and the pipelines the build writes with it:
//  - at full size (--dry-run, nothing written) its models have the published parameter counts;
//  - the small pipelines have the real op mix (GroupNorm as InstanceNormalization, LayerNorm,
//    attention, GEGLU, skip concatenation, nearest upsampling ...), opset >= 17, UNet weights in
//    external data and, for the fp16 variants, weights stored in half precision;
//  - every op type of every bundled pipeline is run by the op canary or excluded with a reason
//    (canary coverage), and the attention check finds each model's attention subgraphs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "common/config.h"
#include "runtime/canary_ops.h"
#include "runtime/onnx_graph.h"
#include "tests/support/test_util.h"

namespace tg {
namespace {

namespace fs = std::filesystem;

const char* const kVariants[] = {"sd15-legacy",  "sd15-optimum", "sd15-optimum-fp16",
                                 "sd21-optimum", "sdxl-optimum", "sdxl-optimum-fp16",
                                 "sd15-toy"};

std::string PipelineDir(const std::string& variant) {
  return testing::BinaryDir() + "/models/sd-tiny/" + variant;
}

std::vector<std::string> Models(const std::string& variant) {
  std::vector<std::string> out;
  for (const char* m : {"text_encoder", "text_encoder_2", "unet", "vae_decoder"}) {
    const std::string p = PipelineDir(variant) + "/" + m + "/model.onnx";
    if (fs::exists(p)) out.push_back(p);
  }
  return out;
}

common::Json DryRun(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/python3", testing::SourceDir() + "/tools/gen_sd.py",
                                   "--dry-run", "--json"};
  argv.insert(argv.end(), args.begin(), args.end());
  testing::ProcessResult r = testing::RunProcess(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto j = common::ParseJson(r.out, "gen_sd.py --dry-run --json");
  EXPECT_TRUE(j.ok()) << j.status().message();
  return j.ok() ? *j : common::Json::object();
}

void ExpectWithin1Percent(const common::Json& model, double published, const std::string& what) {
  const double n = model["params"].get<double>();
  EXPECT_NEAR(n, published, published * 0.01) << what << ": " << n << " parameters";
}

TEST(SdGenerator, FullSizeModelsHaveThePublishedParameterCounts) {
  const common::Json j = DryRun({"--width", "1", "--depth", "1", "--variant", "sd15-optimum",
                                 "--variant", "sdxl-optimum", "--size", "512", "--batch", "2"});
  const common::Json& sd15 = j["pipelines"]["sd15-optimum"];
  const common::Json& xl = j["pipelines"]["sdxl-optimum"];
  ExpectWithin1Percent(sd15["unet"], 859.5e6, "SD 1.5 UNet");
  ExpectWithin1Percent(sd15["text_encoder"], 123.1e6, "CLIP ViT-L/14 text encoder");
  ExpectWithin1Percent(sd15["vae_decoder"], 49.5e6, "SD VAE decoder");
  ExpectWithin1Percent(xl["unet"], 2.567e9, "SDXL UNet");
  ExpectWithin1Percent(xl["text_encoder_2"], 694.7e6, "SDXL text encoder 2");
  // One guided SD 1.5 step at 512x512 (UNet batch 2) is about 0.8 TMAC; its weights pass 2 GB in
  // fp32, so the UNet is written with external data, the VAE is not.
  const double macs = sd15["unet"]["macs"].get<double>();
  EXPECT_GT(macs, 0.7e12);
  EXPECT_LT(macs, 1.0e12);
  EXPECT_TRUE(sd15["unet"]["external_data"].get<bool>());
  EXPECT_FALSE(sd15["vae_decoder"]["external_data"].get<bool>());
  EXPECT_TRUE(xl["text_encoder_2"]["external_data"].get<bool>()) << "694.7 M fp32 weights > 2 GB";
}

TEST(SdGenerator, DryRunScalesAndRefusesBadFactors) {
  const common::Json small = DryRun({"--variant", "sd15-optimum", "--size", "256"});
  const common::Json big = DryRun({"--variant", "sd15-optimum", "--size", "512"});
  const double a = small["pipelines"]["sd15-optimum"]["unet"]["macs"].get<double>();
  const double b = big["pipelines"]["sd15-optimum"]["unet"]["macs"].get<double>();
  EXPECT_GT(b, 4.0 * a) << "4x the pixels, and attention grows with their square";
  EXPECT_EQ(small["pipelines"]["sd15-optimum"]["unet"]["params"],
            big["pipelines"]["sd15-optimum"]["unet"]["params"]);
  testing::ProcessResult r = testing::RunProcess(
      {"/usr/bin/python3", testing::SourceDir() + "/tools/gen_sd.py", "--dry-run", "--width", "2"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, ::testing::HasSubstr("--width and --depth must be in (0, 1]"));
}

std::set<std::string> OpTypes(const std::string& model) {
  auto g = runtime::ReadOnnxGraph(model);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  std::set<std::string> ops;
  if (!g.ok()) return ops;
  for (const auto& n : g->nodes) ops.insert(n.op_type);
  bool opset17 = false;
  for (const auto& [domain, version] : g->opsets) {
    if ((domain.empty() || domain == "ai.onnx") && version >= 17) opset17 = true;
  }
  EXPECT_TRUE(opset17) << model;
  return ops;
}

TEST(SdGenerator, SmallPipelinesHaveTheRealOpMix) {
  const std::string sd15 = PipelineDir("sd15-optimum");
  const std::set<std::string> unet = OpTypes(sd15 + "/unet/model.onnx");
  for (const char* op : {"Conv", "InstanceNormalization", "LayerNormalization", "Softmax", "MatMul",
                         "Split", "Erf", "Sigmoid", "Sin", "Cos", "Concat", "Resize"}) {
    EXPECT_EQ(unet.count(op), 1u) << "UNet lacks " << op;
  }
  const std::set<std::string> text = OpTypes(sd15 + "/text_encoder/model.onnx");
  for (const char* op : {"Gather", "LayerNormalization", "Softmax", "ArgMax", "GatherND"}) {
    EXPECT_EQ(text.count(op), 1u) << "text encoder lacks " << op;
  }
  const std::set<std::string> vae = OpTypes(sd15 + "/vae_decoder/model.onnx");
  for (const char* op : {"Conv", "InstanceNormalization", "Softmax", "Resize"}) {
    EXPECT_EQ(vae.count(op), 1u) << "VAE decoder lacks " << op;
  }
}

TEST(SdGenerator, UnetWeightsAreExternalAndFp16IsHalfTheBytes) {
  const auto size = [](const std::string& p) {
    std::error_code ec;
    const auto n = fs::file_size(p, ec);
    EXPECT_FALSE(ec) << p << ": " << ec.message();
    return ec ? 0.0 : static_cast<double>(n);
  };
  const double legacy = size(PipelineDir("sd15-legacy") + "/unet/weights.pb");
  const double fp32 = size(PipelineDir("sd15-optimum") + "/unet/model.onnx_data");
  const double fp16 = size(PipelineDir("sd15-optimum-fp16") + "/unet/model.onnx_data");
  EXPECT_GT(fp32, 1e6);
  EXPECT_NEAR(legacy, fp32, fp32 * 0.01) << "same architecture, same dtype";
  EXPECT_NEAR(fp16, fp32 / 2, fp32 * 0.01) << "fp16 weights take two bytes";
  // The graph itself stays small beside its weights.
  EXPECT_LT(size(PipelineDir("sd15-optimum") + "/unet/model.onnx"), fp32 / 10);
}

// The canary-coverage rule: an op of a bundled pipeline that the canary neither runs nor excludes
// with a reason would be an op whose GPU kernel nothing proves before serving.
TEST(SdGenerator, EveryOpOfTheBundledPipelinesIsCanariedOrExcluded) {
  std::set<std::string> all;
  for (const char* v : kVariants) {
    for (const auto& m : Models(v)) {
      for (const auto& op : OpTypes(m)) all.insert(op);
    }
  }
  ASSERT_GT(all.size(), 20u);
  const std::vector<std::string> uncovered = runtime::UncoveredOpTypes({all.begin(), all.end()});
  EXPECT_TRUE(uncovered.empty())
      << "not in the canary set (src/runtime/canary_ops.cc) nor excluded: "
      << ::testing::PrintToString(uncovered);
  for (const auto& e : runtime::CanaryExcludedOps()) {
    EXPECT_FALSE(e.reason.empty()) << e.op_type;
  }
  // The rule can fail: an op nobody covers is reported.
  EXPECT_EQ(runtime::UncoveredOpTypes({"Conv", "NoSuchOp"}), std::vector<std::string>{"NoSuchOp"});
}

TEST(SdGenerator, TheAttentionCheckFindsEveryUnfusedAttention) {
  // sd15 small: 3 down + 1 mid + 6 up Transformer2D blocks of depth 1, each with self- and
  // cross-attention; the text encoder's 3 layers; the VAE's mid-block attention.
  const std::string sd15 = PipelineDir("sd15-optimum");
  struct Want {
    std::string model;
    int chains;
  };
  for (const Want& w : {Want{"unet", 20}, Want{"text_encoder", 3}, Want{"vae_decoder", 1}}) {
    auto g = runtime::ReadOnnxGraph(sd15 + "/" + w.model + "/model.onnx");
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    const runtime::AttentionReport r = runtime::AnalyzeAttention(*g);
    EXPECT_EQ(r.unfused_chains, w.chains) << w.model;
    EXPECT_EQ(r.fused_ops, 0) << w.model;
    EXPECT_EQ(r.verdict, "unfused") << w.model;
  }
}

}  // namespace
}  // namespace tg
