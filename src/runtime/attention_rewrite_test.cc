#include "runtime/attention_rewrite.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "runtime/attention_fusion.h"
#include "runtime/onnx_builder.h"
#include "runtime/onnx_model_internal.h"
#include "runtime/session.h"
#include "tests/support/test_util.h"

namespace tg::runtime {
namespace {

namespace ob = ::tg::runtime::onnx;

// The export forms of one attention (B 2, S 5, L 3, D 8, 2 heads of 4).
enum class Form {
  kTorchMul,    // Reshape+Transpose heads, K as [0,2,3,1], Mul(scores, 1/sqrt(H))
  kSdpaSqrt,    // Optimum/SDPA: K [0,2,1,3] then [0,1,3,2], Mul(sqrt scale) on Q and K^T, mask
  kDiv3d,       // one head, 3-D: MatMul(q, Transpose(k)), Div by sqrt(D)
  kBnshInputs,  // 4-D inputs from anywhere, no scale, 4-D output read as is
  kRank3Mask,   // a [B, S, L] mask: not handled
};

std::vector<float> Values(std::size_t n, float scale, int seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * std::sin(0.7f * (i + 1) * (seed + 1));
  return v;
}

// Q from x [2,5,8], K and V from ctx [2,3,8] (self-attention shapes differ only in L).
ob::Graph Build(Form form) {
  ob::Graph g;
  g.name = "attn";
  const bool bnsh = form == Form::kBnshInputs;
  std::string q = "x", k = "ctx", v = "ctx";
  if (bnsh) {
    g.inputs = {{"q4", ob::ElemType::kFloat, {2, 2, 5, 4}},
                {"k4", ob::ElemType::kFloat, {2, 2, 3, 4}},
                {"v4", ob::ElemType::kFloat, {2, 2, 3, 4}}};
  } else {
    g.inputs = {{"x", ob::ElemType::kFloat, {2, 5, 8}}, {"ctx", ob::ElemType::kFloat, {2, 3, 8}}};
    for (auto [name, seed] : {std::pair{"wq", 1}, {"wk", 2}, {"wv", 3}}) {
      g.initializers.push_back(ob::FloatTensor(name, {8, 8}, Values(64, 0.4f, seed)));
    }
    g.nodes.push_back({"MatMul", {"x", "wq"}, {"q"}, {}});
    g.nodes.push_back({"MatMul", {"ctx", "wk"}, {"k"}, {}});
    g.nodes.push_back({"MatMul", {"ctx", "wv"}, {"v"}, {}});
    q = "q", k = "k", v = "v";
  }
  g.initializers.push_back(ob::Int64Tensor("split", {4}, {0, -1, 2, 4}));
  g.initializers.push_back(ob::Int64Tensor("merge", {3}, {0, -1, 8}));
  g.initializers.push_back(ob::FloatTensor("scale", {}, {0.5f}));
  g.initializers.push_back(ob::FloatTensor("sqrt_scale", {}, {std::sqrt(0.5f)}));
  g.initializers.push_back(ob::FloatTensor("sqrt_d", {}, {std::sqrt(8.0f)}));
  auto T = [](const std::vector<std::int64_t>& p) { return ob::IntsAttr("perm", p); };
  std::string qh, kt, vh, scores;
  switch (form) {
    case Form::kTorchMul:
    case Form::kRank3Mask:
    case Form::kSdpaSqrt:
      g.nodes.push_back({"Reshape", {q, "split"}, {"q_s"}, {}});
      g.nodes.push_back({"Reshape", {k, "split"}, {"k_s"}, {}});
      g.nodes.push_back({"Reshape", {v, "split"}, {"v_s"}, {}});
      g.nodes.push_back({"Transpose", {"q_s"}, {"qh"}, {T({0, 2, 1, 3})}});
      g.nodes.push_back({"Transpose", {"v_s"}, {"vh"}, {T({0, 2, 1, 3})}});
      qh = "qh", vh = "vh";
      if (form == Form::kSdpaSqrt) {
        g.nodes.push_back({"Transpose", {"k_s"}, {"kh"}, {T({0, 2, 1, 3})}});
        g.nodes.push_back({"Transpose", {"kh"}, {"kt0"}, {T({0, 1, 3, 2})}});
        g.nodes.push_back({"Mul", {"qh", "sqrt_scale"}, {"qh_s"}, {}});
        g.nodes.push_back({"Mul", {"kt0", "sqrt_scale"}, {"kt"}, {}});
        g.nodes.push_back({"MatMul", {"qh_s", "kt"}, {"s0"}, {}});
        g.initializers.push_back(ob::FloatTensor("mask", {5, 3}, Values(15, -3.0f, 7)));
        g.nodes.push_back({"Add", {"s0", "mask"}, {"scores"}, {}});
      } else {
        g.nodes.push_back({"Transpose", {"k_s"}, {"kt"}, {T({0, 2, 3, 1})}});
        g.nodes.push_back({"MatMul", {"qh", "kt"}, {"s0"}, {}});
        g.nodes.push_back({"Mul", {"s0", "scale"}, {"scores"}, {}});
        if (form == Form::kRank3Mask) {
          g.initializers.push_back(ob::FloatTensor("mask3", {2, 5, 3}, Values(30, -2.0f, 9)));
          g.nodes.back().outputs = {"s1"};
          g.nodes.push_back({"Add", {"s1", "mask3"}, {"scores"}, {}});
        }
      }
      g.nodes.push_back({"Softmax", {"scores"}, {"p"}, {ob::IntAttr("axis", -1)}});
      g.nodes.push_back({"MatMul", {"p", "vh"}, {"o"}, {}});
      g.nodes.push_back({"Transpose", {"o"}, {"o_t"}, {T({0, 2, 1, 3})}});
      g.nodes.push_back({"Reshape", {"o_t", "merge"}, {"y"}, {}});
      g.outputs.push_back({"y", ob::ElemType::kFloat, {2, 5, 8}});
      break;
    case Form::kDiv3d:
      g.nodes.push_back({"Transpose", {k}, {"kt"}, {T({0, 2, 1})}});
      g.nodes.push_back({"MatMul", {q, "kt"}, {"s0"}, {}});
      g.nodes.push_back({"Div", {"s0", "sqrt_d"}, {"scores"}, {}});
      g.nodes.push_back({"Softmax", {"scores"}, {"p"}, {ob::IntAttr("axis", 2)}});
      g.nodes.push_back({"MatMul", {"p", v}, {"y"}, {}});
      g.outputs.push_back({"y", ob::ElemType::kFloat, {2, 5, 8}});
      break;
    case Form::kBnshInputs:
      g.nodes.push_back({"Transpose", {"k4"}, {"kt"}, {T({0, 1, 3, 2})}});
      g.nodes.push_back({"MatMul", {"q4", "kt"}, {"scores"}, {}});
      g.nodes.push_back({"Softmax", {"scores"}, {"p"}, {}});
      g.nodes.push_back({"MatMul", {"p", "v4"}, {"o"}, {}});
      g.nodes.push_back({"Relu", {"o"}, {"y"}, {}});
      g.outputs.push_back({"y", ob::ElemType::kFloat, {2, 2, 5, 4}});
      break;
  }
  return g;
}

SessionFactory CpuFactory(bool fuse = true) {
  auto ort = OrtRuntime::Open(common::LibraryLoader::WithDefaults({}));
  if (!ort.ok()) {
    ADD_FAILURE() << ort.status().ToString();
    std::abort();
  }
  RuntimePolicy p = DevPolicy();
  p.session.fuse_attention = fuse;
  auto f = SessionFactory::Create(p, **ort);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return std::move(f).value();
}

std::vector<NamedTensor> Inputs(const Session& s) {
  std::vector<NamedTensor> in;
  std::uint64_t seed = 3;
  for (const auto& i : s.inputs()) {
    auto t = RandomTensor(i.dtype, i.shape, seed++);
    EXPECT_TRUE(t.ok());
    in.push_back({i.name, std::move(t).value()});
  }
  return in;
}

// Runs both models (the rewrite off in both sessions) and compares with the check's rule.
void ExpectSameOutputs(const std::string& original, const std::string& rewritten) {
  SessionFactory f = CpuFactory(false);
  auto a = f.Open(original);
  auto b = f.Open(rewritten);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->report().attention.verdict, "fused");
  const auto in = Inputs(*a);
  std::vector<Tensor> ya, yb;
  ASSERT_TRUE(a->Run(in, {}, &ya).ok());
  ASSERT_TRUE(b->Run(in, {}, &yb).ok());
  double err = 0;
  const common::Status st = CompareFusedOutputs({"y"}, ya, yb, &err);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_LT(err, 1e-4);
}

struct Want {
  Form form;
  const char* name;
  int transposes_after;  // absorbed or inserted around the heads
};

TEST(AttentionRewrite, EveryExportFormBecomesOneMultiHeadAttention) {
  testing::TempDir dir;
  for (const Want& w : {Want{Form::kTorchMul, "torch_mul", 0}, Want{Form::kSdpaSqrt, "sdpa", 0},
                        Want{Form::kDiv3d, "div3d", 0}, Want{Form::kBnshInputs, "bnsh", 4}}) {
    SCOPED_TRACE(w.name);
    const std::string path = dir / (std::string(w.name) + ".onnx");
    testing::WriteFile(path, ob::SerializeModel(Build(w.form)));
    auto m = OnnxModel::Load(path);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    auto rep = RewriteAttention(&*m);
    ASSERT_TRUE(rep.ok()) << rep.status().ToString();
    EXPECT_EQ(rep->chains, 1);
    EXPECT_EQ(rep->rewritten, 1) << ::testing::PrintToString(rep->skipped);
    EXPECT_EQ(rep->ops_before.at("Softmax"), 1);
    EXPECT_EQ(rep->ops_after.count("Softmax"), 0u);
    EXPECT_EQ(rep->ops_after.at("com.microsoft.MultiHeadAttention"), 1);
    EXPECT_EQ(rep->ops_after.count("Transpose") ? rep->ops_after.at("Transpose") : 0,
              w.transposes_after);
    // The node carries the heads and the whole scale (1 when the graph had none).
    const auto& proto = OnnxModelAccess::Proto(*m);
    for (const auto& n : proto.graph().node()) {
      if (n.op_type() != "MultiHeadAttention") continue;
      for (const auto& a : n.attribute()) {
        if (a.name() == "num_heads") EXPECT_EQ(a.i(), w.form == Form::kDiv3d ? 1 : 2);
        if (a.name() == "scale") {
          const float want = w.form == Form::kDiv3d        ? 1.0f / std::sqrt(8.0f)
                             : w.form == Form::kBnshInputs ? 1.0f
                                                           : 0.5f;
          EXPECT_NEAR(a.f(), want, 1e-6);
        }
      }
      EXPECT_EQ(n.input_size(), w.form == Form::kSdpaSqrt ? 6 : 3);  // the mask as attention_bias
    }
    EXPECT_TRUE(m->Check().ok()) << m->Check().ToString();
    auto bytes = m->Serialize();
    ASSERT_TRUE(bytes.ok());
    testing::WriteFile(dir / (std::string(w.name) + "_mha.onnx"), *bytes);
    ExpectSameOutputs(path, dir / (std::string(w.name) + "_mha.onnx"));
  }
}

TEST(AttentionRewrite, AnUnhandledFormIsLeftWithItsReason) {
  testing::TempDir dir;
  testing::WriteFile(dir / "m.onnx", ob::SerializeModel(Build(Form::kRank3Mask)));
  auto m = OnnxModel::Load(dir / "m.onnx");
  ASSERT_TRUE(m.ok());
  auto rep = RewriteAttention(&*m);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->chains, 1);
  EXPECT_EQ(rep->rewritten, 0);
  ASSERT_EQ(rep->skipped.size(), 1u);
  EXPECT_NE(rep->skipped[0].find("mask of rank 3"), std::string::npos) << rep->skipped[0];
  EXPECT_EQ(rep->ops_after, rep->ops_before);
}

TEST(AttentionRewrite, CompareFusedOutputsNamesTheFirstDifference) {
  auto a = Tensor::FromVector<float>({1, 3}, {1.0f, 2.0f, 3.0f});
  auto b = Tensor::FromVector<float>({1, 3}, {1.0f, 2.0005f, 3.1f});
  ASSERT_TRUE(a.ok() && b.ok());
  double err = 0;
  const common::Status st = CompareFusedOutputs({"y"}, {*a}, {*b}, &err);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("output 'y' element 2"), std::string::npos) << st.ToString();
  EXPECT_TRUE(CompareFusedOutputs({"y"}, {*a}, {*a}, &err).ok());
  EXPECT_EQ(FusionTolerance(DataType::kFloat32), 1e-3);
  EXPECT_EQ(FusionTolerance(DataType::kFloat16), 2e-2);
}

// The whole path at open: rewrite, check, cache; the external data found from memory.
TEST(AttentionFusion, OpenRewritesChecksAndCaches) {
  testing::TempDir dir;
  testing::ScopedEnv cache("TRUEGREEN_CACHE_DIR", (dir / "cache").c_str());
  // Weights as external data beside the model, as the exports over 2 GB have them.
  ::onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(ob::SerializeModel(Build(Form::kSdpaSqrt))));
  std::string blob;
  for (auto& t : *proto.mutable_graph()->mutable_initializer()) {
    if (t.name().rfind("w", 0) != 0) continue;
    auto add = [&](const char* k, const std::string& v) {
      auto* e = t.add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    add("location", "weights.bin");
    add("offset", std::to_string(blob.size()));
    add("length", std::to_string(t.raw_data().size()));
    blob += t.raw_data();
    t.clear_raw_data();
    t.set_data_location(::onnx::TensorProto::EXTERNAL);
  }
  ASSERT_EQ(::mkdir((dir / "model").c_str(), 0700), 0);
  testing::WriteFile(dir / "model/weights.bin", blob);
  testing::WriteFile(dir / "model/model.onnx", proto.SerializeAsString());
  const std::string path = dir / "model/model.onnx";

  SessionFactory f = CpuFactory();
  auto s = f.Open(path);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const AttentionReport& a = s->report().attention;
  EXPECT_EQ(a.verdict, "fused") << a.fusion;
  EXPECT_EQ(a.fused_by_truegreen, 1);
  EXPECT_EQ(a.fusion.rfind("fused by truegreen: 1 of 1 chains; checked on", 0), 0u) << a.fusion;
  EXPECT_NE(FormatSessionReport(s->report()).find("fused by truegreen 1"), std::string::npos);
  auto key = FusionCacheKey(path, f.ort_version());
  ASSERT_TRUE(key.ok());
  EXPECT_TRUE(common::IsRegularFile(dir / ("cache/fused-attention-" + *key + ".onnx")));
  EXPECT_TRUE(common::IsRegularFile(dir / ("cache/fused-attention-" + *key + ".json")));
  // The fused session computes what the original does.
  auto plain_opts = OpenOptions();
  plain_opts.fuse_attention = false;
  auto plain = f.Open(path, plain_opts);
  ASSERT_TRUE(plain.ok());
  const auto in = Inputs(*plain);
  std::vector<Tensor> ya, yb;
  ASSERT_TRUE(plain->Run(in, {}, &ya).ok());
  ASSERT_TRUE(s->Run(in, {}, &yb).ok());
  double err = 0;
  EXPECT_TRUE(CompareFusedOutputs({"y"}, ya, yb, &err).ok());
  // A second open uses the cached, checked model.
  auto again = f.Open(path);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->report().attention.fusion.find("checked before"), std::string::npos)
      << again->report().attention.fusion;
  // Another weights file (its size is in the key) is a new key.
  testing::WriteFile(dir / "model/weights.bin", blob + std::string(4, '\0'));
  auto other = FusionCacheKey(path, f.ort_version());
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, *key);
  EXPECT_NE(*FusionCacheKey(path, "9.99.0"), *other);
}

TEST(AttentionFusion, ABadRewriteFailsItsCheckAndTheOriginalIsKept) {
  testing::TempDir dir;
  testing::ScopedEnv cache("TRUEGREEN_CACHE_DIR", (dir / "cache").c_str());
  testing::WriteFile(dir / "m.onnx", ob::SerializeModel(Build(Form::kTorchMul)));
  OpenOptions o;
  o.after_rewrite = [](OnnxModel& m) {  // the wrong scale: 4x the scores
    for (auto& n : *OnnxModelAccess::Proto(m).mutable_graph()->mutable_node()) {
      for (auto& a : *n.mutable_attribute()) {
        if (a.name() == "scale") a.set_f(a.f() * 4);
      }
    }
  };
  SessionFactory f = CpuFactory();
  auto s = f.Open(dir / "m.onnx", o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const AttentionReport& a = s->report().attention;
  EXPECT_EQ(a.verdict, "unfused");
  EXPECT_EQ(a.fused_by_truegreen, 0);
  EXPECT_EQ(a.fusion.rfind("kept the original: the rewrite failed its check: output 'y'", 0), 0u)
      << a.fusion;
  EXPECT_FALSE(common::IsRegularFile(dir / "cache"));  // a broken rewrite is never cached
  // The policy turns the rewrite off.
  auto off = CpuFactory(false).Open(dir / "m.onnx");
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->report().attention.fusion, "off");
  EXPECT_EQ(off->report().attention.verdict, "unfused");
}

}  // namespace
}  // namespace tg::runtime
