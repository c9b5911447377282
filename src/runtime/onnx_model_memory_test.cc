// EstimateRunMemory: the hand-computed bytes of a small graph at a request's shapes, the liveness
// peak below the loose sum, saturation for overflow-sized dims, an unknown size marked incomplete,
// and the shape-only copy.
#include "runtime/onnx_model_memory.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/onnx_builder.h"

namespace tg::runtime {
namespace {

namespace ob = ::tg::runtime::onnx;

// x [N, 8] -> Relu -> a -> Relu -> b -> Relu -> c -> Relu -> y [N, 8], N symbolic.
OnnxModel ReluChain() {
  ob::Graph g;
  g.name = "chain";
  g.nodes.push_back({"Relu", {"x"}, {"a"}, {}});
  g.nodes.push_back({"Relu", {"a"}, {"b"}, {}});
  g.nodes.push_back({"Relu", {"b"}, {"c"}, {}});
  g.nodes.push_back({"Relu", {"c"}, {"y"}, {}});
  g.inputs.push_back({"x", ob::ElemType::kFloat, {-1, 8}});
  g.outputs.push_back({"y", ob::ElemType::kFloat, {-1, 8}});
  auto m = OnnxModel::Parse(ob::SerializeModel(g), "chain.onnx", ".");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(m).value();
}

TEST(OnnxModelMemory, EstimateIsTheHandComputedLivenessPeak) {
  const OnnxModel m = ReluChain();
  auto e = EstimateRunMemory(m, {{"x", {4, 8}}});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  // Every value is 4 x 8 floats = 128 bytes.
  EXPECT_EQ(e->input_bytes, 128);
  EXPECT_EQ(e->output_bytes, 128);
  EXPECT_EQ(e->intermediate_bytes, 3 * 128);  // a, b, c
  EXPECT_EQ(e->sum_bytes, 5 * 128);
  // x stays alive; each Relu's input dies once its output exists: x + two values at once.
  EXPECT_EQ(e->peak_bytes, 3 * 128);
  EXPECT_LT(e->peak_bytes, e->sum_bytes);
  EXPECT_TRUE(e->complete) << e->incomplete_reason;
  EXPECT_EQ(e->unknown_values, 0);
  // The symbolic dim follows the request: ten times the rows, ten times the bytes.
  auto e10 = EstimateRunMemory(m, {{"x", {40, 8}}});
  ASSERT_TRUE(e10.ok());
  EXPECT_EQ(e10->peak_bytes, 10 * e->peak_bytes);
}

TEST(OnnxModelMemory, AValueReadLaterStaysAlive) {
  // x -> Relu -> a -> Relu -> b; Add(a, b) -> y: a lives until the Add.
  ob::Graph g;
  g.nodes.push_back({"Relu", {"x"}, {"a"}, {}});
  g.nodes.push_back({"Relu", {"a"}, {"b"}, {}});
  g.nodes.push_back({"Add", {"a", "b"}, {"y"}, {}});
  g.inputs.push_back({"x", ob::ElemType::kFloat, {2, 8}});
  g.outputs.push_back({"y", ob::ElemType::kFloat, {2, 8}});
  auto m = OnnxModel::Parse(ob::SerializeModel(g), "add.onnx", ".");
  ASSERT_TRUE(m.ok());
  auto e = EstimateRunMemory(*m, {});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->sum_bytes, 4 * 64);
  EXPECT_EQ(e->peak_bytes, 4 * 64);  // x, a, b and y all alive at the Add
}

TEST(OnnxModelMemory, OverflowSizedDimsSaturate) {
  EXPECT_EQ(SaturatingMul(std::int64_t{1} << 40, std::int64_t{1} << 40), kSaturatedBytes);
  EXPECT_EQ(SaturatingAdd(kSaturatedBytes, kSaturatedBytes), kSaturatedBytes);
  EXPECT_EQ(TensorBytes({std::int64_t{1} << 40, std::int64_t{1} << 40, 4}, 4), kSaturatedBytes);
  EXPECT_EQ(TensorBytes({3, 0, std::int64_t{1} << 62}, 4), 0);
  EXPECT_EQ(TensorBytes({2, -1}, 4), -1);
  EXPECT_EQ(TensorBytes({2, 3}, 0), -1);
  const OnnxModel m = ReluChain();
  auto e = EstimateRunMemory(m, {{"x", {std::int64_t{1} << 60, 8}}});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->input_bytes, kSaturatedBytes);
  EXPECT_EQ(e->peak_bytes, kSaturatedBytes);
  EXPECT_EQ(e->sum_bytes, kSaturatedBytes);
}

TEST(OnnxModelMemory, AnUnknownSizeMakesTheEstimateALowerBound) {
  // Reshape to a shape that is itself an input: shape inference cannot size y.
  ob::Graph g;
  g.nodes.push_back({"Reshape", {"x", "s"}, {"y"}, {}});
  g.inputs.push_back({"x", ob::ElemType::kFloat, {4, 8}});
  g.inputs.push_back({"s", ob::ElemType::kInt64, {2}});
  g.outputs.push_back({"y", ob::ElemType::kFloat, {-1, -1}});
  auto m = OnnxModel::Parse(ob::SerializeModel(g), "reshape.onnx", ".");
  ASSERT_TRUE(m.ok());
  auto e = EstimateRunMemory(*m, {});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_FALSE(e->complete);
  EXPECT_EQ(e->unknown_values, 1);
  EXPECT_NE(e->incomplete_reason.find("'y'"), std::string::npos) << e->incomplete_reason;
  EXPECT_EQ(e->input_bytes, 128 + 16);
  EXPECT_EQ(e->peak_bytes, 128 + 16);  // what is known, nothing invented for y
}

TEST(OnnxModelMemory, ShapeOnlyModelDropsTheWeightsAndEstimatesAlike) {
  ob::Graph g;
  g.initializers.push_back(ob::FloatTensor("w", {128, 128}, std::vector<float>(128 * 128, 1.f)));
  g.nodes.push_back({"MatMul", {"x", "w"}, {"h"}, {}});
  g.nodes.push_back({"Relu", {"h"}, {"y"}, {}});
  g.inputs.push_back({"x", ob::ElemType::kFloat, {-1, 128}});
  g.outputs.push_back({"y", ob::ElemType::kFloat, {-1, 128}});
  auto m = OnnxModel::Parse(ob::SerializeModel(g), "mm.onnx", ".");
  ASSERT_TRUE(m.ok());
  const OnnxModel shapes = ShapeOnlyModel(*m);
  EXPECT_GT(ModelByteSize(*m), 128 * 128 * 4);
  EXPECT_LT(ModelByteSize(shapes), 4096);
  auto full = EstimateRunMemory(*m, {{"x", {3, 128}}});
  auto kept = EstimateRunMemory(shapes, {{"x", {3, 128}}});
  ASSERT_TRUE(full.ok() && kept.ok());
  EXPECT_EQ(kept->peak_bytes, full->peak_bytes);
  EXPECT_EQ(kept->peak_bytes, 3 * 3 * 128 * 4);  // x, h, y (initializers are the model's)
}

}  // namespace
}  // namespace tg::runtime
