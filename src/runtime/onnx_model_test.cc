#include "runtime/onnx_model.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "runtime/onnx_builder.h"
#include "runtime/onnx_model_internal.h"
#include "tests/support/test_util.h"

namespace tg::runtime {
namespace {

namespace ob = ::tg::runtime::onnx;

// x [B, T, 8] -> MatMul W [8, 4] -> Reshape to [0, -1, 2, 2] (the heads split of an attention).
ob::Graph MatMulReshape() {
  ob::Graph g;
  g.name = "mm";
  std::vector<float> w(32, 0.5f);
  g.initializers.push_back(ob::FloatTensor("w", {8, 4}, w));
  g.initializers.push_back(ob::Int64Tensor("split", {4}, {0, -1, 2, 2}));
  g.nodes.push_back({"MatMul", {"x", "w"}, {"y"}, {}});
  g.nodes.push_back({"Reshape", {"y", "split"}, {"z"}, {}});
  g.inputs.push_back({"x", ob::ElemType::kFloat, {1, 3, 8}});
  g.outputs.push_back({"z", ob::ElemType::kFloat, {1, 3, 2, 2}});
  return g;
}

// The builder writes static dims; make the first two of input x symbolic ("batch", "tokens").
std::string WithDynamicInput(const std::string& bytes) {
  ::onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(bytes));
  auto* shape =
      m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->mutable_dim(0)->set_dim_param("batch");
  shape->mutable_dim(1)->set_dim_param("tokens");
  m.mutable_graph()->clear_output();
  auto* out = m.mutable_graph()->add_output();
  out->set_name("z");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(1);
  for (const char* d : {"b", "t", "h", "e"}) {
    out->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param(d);
  }
  return m.SerializeAsString();
}

const InferredValue* Find(const std::vector<InferredValue>& vs, const std::string& name) {
  for (const auto& v : vs) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

TEST(OnnxModel, InfersShapesAtGivenInputDims) {
  testing::TempDir dir;
  testing::WriteFile(dir / "m.onnx", WithDynamicInput(ob::SerializeModel(MatMulReshape())));
  auto m = OnnxModel::Load(dir / "m.onnx");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->OpCounts().at("MatMul"), 1);
  EXPECT_EQ(m->InputNames(), std::vector<std::string>{"x"});
  EXPECT_FALSE(m->has_external_data());
  EXPECT_TRUE(m->Check().ok()) << m->Check().ToString();
  auto shapes = m->InferShapes({{"x", {4, 10, -1}}});
  ASSERT_TRUE(shapes.ok()) << shapes.status().ToString();
  const InferredValue* y = Find(*shapes, "y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->dims, (std::vector<std::int64_t>{4, 10, 4}));
  EXPECT_EQ(y->bytes, 4 * 10 * 4 * 4);
  EXPECT_EQ(y->producer, "MatMul");
  const InferredValue* z = Find(*shapes, "z");
  ASSERT_NE(z, nullptr);
  EXPECT_EQ(z->dims, (std::vector<std::int64_t>{4, 10, 2, 2}));  // through Reshape's constant
  EXPECT_EQ(z->kind, InferredValue::Kind::kOutput);
  // Left symbolic, the same values have unknown dims and no byte size.
  auto open = m->InferShapes({});
  ASSERT_TRUE(open.ok());
  EXPECT_EQ(Find(*open, "y")->bytes, -1);
  EXPECT_EQ(Find(*open, "y")->dims.back(), 4);
  // Bad requests name the input.
  auto unknown = m->InferShapes({{"nope", {1}}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("'nope'"), std::string::npos);
  auto rank = m->InferShapes({{"x", {1, 2}}});
  ASSERT_FALSE(rank.ok());
  EXPECT_NE(rank.status().message().find("rank 3"), std::string::npos);
}

TEST(OnnxModel, MultiHeadAttentionInfersThrough) {
  ob::Graph g;
  g.name = "mha";
  g.nodes.push_back({"MultiHeadAttention", {"q", "k", "v"}, {"o"}, {ob::IntAttr("num_heads", 2)}});
  g.nodes.push_back({"Relu", {"o"}, {"r"}, {}});
  g.inputs = {{"q", ob::ElemType::kFloat, {2, 16, 8}},
              {"k", ob::ElemType::kFloat, {2, 5, 8}},
              {"v", ob::ElemType::kFloat, {2, 5, 6}}};
  g.outputs.push_back({"r", ob::ElemType::kFloat, {2, 16, 6}});
  ::onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(ob::SerializeModel(g)));
  proto.mutable_graph()->mutable_node(0)->set_domain("com.microsoft");
  auto* opset = proto.add_opset_import();
  opset->set_domain("com.microsoft");
  opset->set_version(1);
  auto m = OnnxModel::Parse(proto.SerializeAsString(), "mha.onnx", ".");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->OpCounts().at("com.microsoft.MultiHeadAttention"), 1);
  auto shapes = m->InferShapes({});
  ASSERT_TRUE(shapes.ok()) << shapes.status().ToString();
  ASSERT_NE(Find(*shapes, "o"), nullptr);
  EXPECT_EQ(Find(*shapes, "o")->dims, (std::vector<std::int64_t>{2, 16, 6}));
}

TEST(OnnxModel, ExternalDataStaysInPlace) {
  testing::TempDir dir;
  ::onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(ob::SerializeModel(MatMulReshape())));
  auto* w = proto.mutable_graph()->mutable_initializer(0);
  const std::string raw = w->raw_data();
  testing::WriteFile(dir / "weights.bin", raw);
  w->clear_raw_data();
  w->set_data_location(::onnx::TensorProto::EXTERNAL);
  auto* e = w->add_external_data();
  e->set_key("location");
  e->set_value("weights.bin");
  testing::WriteFile(dir / "m.onnx", proto.SerializeAsString());
  auto m = OnnxModel::Load(dir / "m.onnx");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(m->has_external_data());
  EXPECT_EQ(m->folder(), dir.path());
  auto shapes = m->InferShapes({});
  ASSERT_TRUE(shapes.ok()) << shapes.status().ToString();
  EXPECT_EQ(Find(*shapes, "w")->bytes, 8 * 4 * 4);
  // The serialized model still refers to the file by its relative location, without the data.
  auto bytes = m->Serialize();
  ASSERT_TRUE(bytes.ok());
  EXPECT_NE(bytes->find("weights.bin"), std::string::npos);
  EXPECT_EQ(bytes->find(raw), std::string::npos);
  // Without the file: refused, naming the initializer and the file.
  ASSERT_EQ(::remove((dir / "weights.bin").c_str()), 0);
  auto missing = OnnxModel::Load(dir / "m.onnx");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("initializer 'w'"), std::string::npos);
  EXPECT_NE(missing.status().message().find("weights.bin"), std::string::npos);
}

TEST(OnnxModel, HostileInputIsAnErrorNamingFileAndField) {
  testing::TempDir dir;
  const std::string good = ob::SerializeModel(MatMulReshape());
  // Truncated inside the graph: the hand-written reader names the field and byte offset.
  testing::WriteFile(dir / "cut.onnx", good.substr(0, good.size() - 7));
  auto cut = OnnxModel::Load(dir / "cut.onnx");
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), common::StatusCode::kInvalidArg);
  EXPECT_NE(cut.status().message().find(dir / "cut.onnx"), std::string::npos);
  EXPECT_NE(cut.status().message().find("at byte"), std::string::npos);
  // Empty, over the cap, a directory, a FIFO with no writer, a missing file.
  testing::WriteFile(dir / "empty.onnx", "");
  EXPECT_NE(OnnxModel::Load(dir / "empty.onnx").status().message().find("empty"),
            std::string::npos);
  OnnxLoadOptions small;
  small.max_bytes = 16;
  testing::WriteFile(dir / "big.onnx", good);
  auto big = OnnxModel::Load(dir / "big.onnx", small);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("16"), std::string::npos);
  EXPECT_FALSE(OnnxModel::Load(dir.path()).ok());
  ASSERT_EQ(::mkfifo((dir / "fifo.onnx").c_str(), 0600), 0);
  EXPECT_FALSE(OnnxModel::Load(dir / "fifo.onnx").ok());
  EXPECT_EQ(OnnxModel::Load(dir / "none.onnx").status().code(), common::StatusCode::kNotFound);
  // Random bytes: an error, never a crash.
  std::string noise(4096, '\0');
  std::uint32_t x = 12345;
  for (auto& c : noise) c = static_cast<char>((x = x * 1103515245u + 12345u) >> 24);
  EXPECT_FALSE(OnnxModel::Parse(noise, "noise.onnx", ".").ok());
}

TEST(OnnxModel, NodeFailingItsSchemaIsNamedBeforeInference) {
  ob::Graph g = MatMulReshape();
  g.nodes[0].inputs = {"x"};  // MatMul with one input
  g.nodes[0].attributes.push_back(ob::IntAttr("bogus", 1));
  ::onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(ob::SerializeModel(g)));
  proto.mutable_graph()->mutable_node(0)->set_name("mm0");
  auto m = OnnxModel::Parse(proto.SerializeAsString(), "bad.onnx", ".");
  ASSERT_TRUE(m.ok());
  auto shapes = m->InferShapes({});
  ASSERT_FALSE(shapes.ok());
  EXPECT_NE(shapes.status().message().find("bad.onnx: node 'mm0' (MatMul)"), std::string::npos)
      << shapes.status().ToString();
  EXPECT_FALSE(m->Check().ok());
}

// A bundled pipeline's UNet (external data, as real exports are) at a request's size.
TEST(OnnxModel, BundledUnetAtARequestSize) {
  const std::string path = testing::BinaryDir() + "/models/sd-tiny/sd15-optimum/unet/model.onnx";
  auto m = OnnxModel::Load(path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(m->has_external_data());
  auto shapes = m->InferShapes({{"sample", {2, 4, 96, 64}}});
  ASSERT_TRUE(shapes.ok()) << shapes.status().ToString();
  const InferredValue* out = nullptr;
  std::int64_t biggest = 0;
  for (const auto& v : *shapes) {
    if (v.kind == InferredValue::Kind::kOutput) out = &v;
    if (v.producer == "Softmax") biggest = std::max(biggest, v.bytes);
  }
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->dims, (std::vector<std::int64_t>{2, 4, 96, 64}));
  // The top-level self-attention's scores: batch 2 x heads x (96*64)^2 floats.
  EXPECT_GE(biggest, std::int64_t{2} * 96 * 64 * 96 * 64 * 4);
}

}  // namespace
}  // namespace tg::runtime
