#include "runtime/onnx_graph.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "tests/support/test_util.h"

namespace tg::runtime {
namespace {

// A minimal protobuf writer, independent of the parser under test, so the expected structure is
// spelled out field by field.
class Proto {
 public:
  Proto& Varint(std::uint32_t field, std::uint64_t v) {
    Key(field, 0);
    PutVarint(v);
    return *this;
  }
  Proto& Bytes(std::uint32_t field, const std::string& s) {
    Key(field, 2);
    PutVarint(s.size());
    out_ += s;
    return *this;
  }
  Proto& Message(std::uint32_t field, const Proto& m) { return Bytes(field, m.out_); }
  Proto& Fixed32(std::uint32_t field, std::uint32_t v) {
    Key(field, 5);
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return *this;
  }
  const std::string& str() const { return out_; }

 private:
  void Key(std::uint32_t field, std::uint32_t wire) { PutVarint((field << 3) | wire); }
  void PutVarint(std::uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  std::string out_;
};

common::Result<OnnxGraphSummary> Parse(const std::string& bytes) {
  return ParseOnnxGraph(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(),
                        "m.onnx");
}

std::string TwoNodeModel() {
  Proto conv;
  conv.Bytes(1, "x").Bytes(1, "w").Bytes(2, "y").Bytes(3, "conv0").Bytes(4, "Conv");
  conv.Fixed32(20, 7);  // an unknown fixed-width field is skipped
  Proto attn;
  attn.Bytes(1, "y").Bytes(2, "z").Bytes(3, "attn0").Bytes(4, "Attention");
  attn.Bytes(7, "com.microsoft");
  Proto graph;
  graph.Bytes(2, "main").Message(1, conv).Message(1, attn);
  Proto opset_ai;
  opset_ai.Bytes(1, "").Varint(2, 17);
  Proto opset_ms;
  opset_ms.Bytes(1, "com.microsoft").Varint(2, 1);
  Proto model;
  model.Varint(1, 8).Bytes(2, "producer").Message(8, opset_ai).Message(8, opset_ms);
  model.Message(7, graph);
  return model.str();
}

TEST(OnnxGraphTest, ReadsNodesOpsetsAndIrVersion) {
  auto r = Parse(TwoNodeModel());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const OnnxGraphSummary& g = r.value();
  EXPECT_EQ(g.ir_version, 8);
  ASSERT_EQ(g.opsets.size(), 2u);
  EXPECT_EQ(g.opsets[0], std::make_pair(std::string(), std::int64_t{17}));
  EXPECT_EQ(g.opsets[1], std::make_pair(std::string("com.microsoft"), std::int64_t{1}));
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].name, "conv0");
  EXPECT_EQ(g.nodes[0].op_type, "Conv");
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<std::string>{"x", "w"}));
  EXPECT_EQ(g.nodes[0].outputs, (std::vector<std::string>{"y"}));
  EXPECT_EQ(g.nodes[1].op_type, "Attention");
  EXPECT_EQ(g.nodes[1].domain, "com.microsoft");
}

// Graph inputs: ValueInfoProto{name 1, type 2 {tensor_type 1 {elem_type 1, shape 2 {dim 1
// {dim_value 1 | dim_param 2}}}}}.
std::string InputsModel(std::int64_t second_dim) {
  auto dim_value = [](std::int64_t v) {
    Proto d;
    d.Varint(1, static_cast<std::uint64_t>(v));  // negative: ten-byte two's complement
    return d;
  };
  Proto batch;
  batch.Bytes(2, "batch");
  Proto shape;
  shape.Message(1, batch).Message(1, dim_value(second_dim)).Message(1, dim_value(77));
  Proto tensor;
  tensor.Varint(1, 1).Message(2, shape);
  Proto type;
  type.Message(1, tensor);
  Proto ids, scalar;
  ids.Bytes(1, "ids").Message(2, type);
  Proto scalar_tensor, scalar_type;
  scalar_tensor.Varint(1, 7);  // no shape declared
  scalar_type.Message(1, scalar_tensor);
  scalar.Bytes(1, "step").Message(2, scalar_type);
  Proto graph;
  graph.Message(11, ids).Message(11, scalar);
  Proto model;
  model.Varint(1, 8).Message(7, graph);
  return model.str();
}

TEST(OnnxGraphTest, ReadsInputDimensionsAndRefusesANegativeOne) {
  auto ok = Parse(InputsModel(4));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ(ok->inputs.size(), 2u);
  EXPECT_EQ(ok->inputs[0].name, "ids");
  ASSERT_EQ(ok->inputs[0].dims.size(), 3u);
  EXPECT_FALSE(ok->inputs[0].dims[0].value.has_value());
  EXPECT_EQ(ok->inputs[0].dims[0].param, "batch");
  EXPECT_EQ(ok->inputs[0].dims[1].value, std::optional<std::int64_t>(4));
  EXPECT_EQ(ok->inputs[0].dims[2].value, std::optional<std::int64_t>(77));
  EXPECT_EQ(ok->inputs[1].name, "step");
  EXPECT_TRUE(ok->inputs[1].dims.empty());
  EXPECT_TRUE(CheckDeclaredInputDims(*ok, "m.onnx").ok());
  auto bad = Parse(InputsModel(-5));
  ASSERT_TRUE(bad.ok()) << bad.status().ToString();
  EXPECT_EQ(bad->inputs[0].dims[1].value, std::optional<std::int64_t>(-5));
  common::Status st = CheckDeclaredInputDims(*bad, "m.onnx");
  EXPECT_EQ(st.code(), common::StatusCode::kInvalidArg);
  EXPECT_EQ(st.message(),
            "m.onnx: input 'ids' dimension 1: found -5; required a size >= 0 or a symbolic name "
            "(dim_param)");
}

TEST(OnnxGraphTest, EveryTruncationIsAnErrorOrAValidPrefixNeverACrash) {
  const std::string full = TwoNodeModel();
  int errors = 0;
  for (std::size_t n = 0; n < full.size(); ++n) {
    auto r = Parse(full.substr(0, n));
    if (!r.ok()) {
      ++errors;
      EXPECT_NE(r.status().message().find("m.onnx: not a valid ONNX model"), std::string::npos)
          << r.status().ToString();
    }
  }
  // The graph is the last field: every cut before its end loses it or splits a field.
  EXPECT_EQ(errors, static_cast<int>(full.size()));
}

TEST(OnnxGraphTest, NamesTheMalformedLevelAndOffset) {
  Proto node;
  node.Bytes(4, "Conv");
  std::string bad_node = node.str();
  bad_node[1] = '\x40';  // declared length 64 runs past the node's end
  Proto graph;
  graph.Bytes(1, bad_node);
  Proto model;
  model.Varint(1, 7).Message(7, graph);
  auto r = Parse(model.str());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), common::StatusCode::kInvalidArg);
  EXPECT_NE(r.status().message().find("malformed node at byte"), std::string::npos)
      << r.status().ToString();

  auto no_graph = Parse(Proto().Varint(1, 7).str());
  ASSERT_FALSE(no_graph.ok());
  EXPECT_NE(no_graph.status().message().find("no graph found"), std::string::npos);

  // Wire type 3 (groups) is not used by ONNX and is rejected at the model level.
  auto group = Parse(std::string("\x0b", 1));
  ASSERT_FALSE(group.ok());
  EXPECT_NE(group.status().message().find("malformed model at byte 0"), std::string::npos);
}

TEST(OnnxGraphTest, ReadsFilesAndNamesMissingOnes) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/two.onnx";
  ASSERT_TRUE(common::WriteFileAtomic(path, TwoNodeModel()).ok());
  auto r = ReadOnnxGraph(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value().nodes.size(), 2u);

  auto missing = ReadOnnxGraph(dir.path() + "/absent.onnx");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), common::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("absent.onnx"), std::string::npos);

  const std::string empty = dir.path() + "/empty.onnx";
  ASSERT_TRUE(common::WriteFileAtomic(empty, "").ok());
  auto e = ReadOnnxGraph(empty);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("empty file"), std::string::npos);
}

}  // namespace
}  // namespace tg::runtime
