#include "runtime/canary_ops.h"

#include <functional>
#include <set>

#include "common/file_util.h"
#include "runtime/onnx_builder.h"

namespace tg::runtime {
namespace {

using onnx::Attribute;
using onnx::ElemType;
using onnx::FloatTensor;
using onnx::Graph;
using onnx::Int64Tensor;
using onnx::IntAttr;
using onnx::IntsAttr;
using onnx::Node;
using onnx::ValueInfo;

using Dims = std::vector<std::int64_t>;

// Deterministic values in [-1, 1) (the same generator the inputs use).
std::vector<float> Values(const Dims& dims, std::uint64_t seed) {
  auto t = RandomTensor(DataType::kFloat32, dims, seed);
  const float* p = t->data<float>();
  return std::vector<float>(p, p + t->element_count());
}

// A case builder: float inputs x0, x1, ... of the given shapes, one node, output y.
struct Builder {
  std::string name;
  Graph g;
  std::vector<NamedTensor> inputs;

  Builder& Input(const Dims& dims) {
    std::string n = "x";
    n += std::to_string(inputs.size());  // (not "x" + ...: GCC 12 -Wrestrict false positive)
    g.inputs.push_back({n, ElemType::kFloat, dims});
    inputs.push_back({n, *RandomTensor(DataType::kFloat32, dims, 0x5eed + inputs.size())});
    return *this;
  }
  Builder& Init(onnx::TensorData t) {
    g.initializers.push_back(std::move(t));
    return *this;
  }
  Builder& Op(const std::string& op, std::vector<std::string> in, std::vector<Attribute> attrs = {},
              std::vector<std::string> out = {"y"}) {
    g.nodes.push_back({op, std::move(in), std::move(out), std::move(attrs)});
    return *this;
  }
  // `op_type`: the op under test when it is not the last node (a Cast back to float follows ops
  // whose output is not float).
  CanaryCase Done(const Dims& out_dims, const std::string& op_type = "") {
    g.outputs.push_back({"y", ElemType::kFloat, out_dims});
    CanaryCase c;
    c.name = name;
    c.op_type = !op_type.empty() ? op_type : g.nodes.empty() ? "" : g.nodes.back().op_type;
    c.model = onnx::SerializeModel(g);
    c.inputs = std::move(inputs);
    return c;
  }
};

Builder Case(const std::string& name) {
  Builder b;
  b.name = name;
  return b;
}

void AddConvAndMatrixOps(std::vector<CanaryCase>* out) {
  out->push_back(Case("Conv")
                     .Input({1, 4, 8, 8})
                     .Init(FloatTensor("w", {8, 4, 3, 3}, Values({8, 4, 3, 3}, 1)))
                     .Op("Conv", {"x0", "w"}, {IntsAttr("pads", {1, 1, 1, 1})})
                     .Done({1, 8, 8, 8}));
  out->push_back(Case("MatMul")
                     .Input({1, 16, 32})
                     .Init(FloatTensor("w", {32, 16}, Values({32, 16}, 2)))
                     .Op("MatMul", {"x0", "w"})
                     .Done({1, 16, 16}));
  out->push_back(Case("Gemm")
                     .Input({4, 32})
                     .Init(FloatTensor("w", {32, 16}, Values({32, 16}, 3)))
                     .Init(FloatTensor("b", {16}, Values({16}, 4)))
                     .Op("Gemm", {"x0", "w", "b"})
                     .Done({4, 16}));
  out->push_back(Case("Einsum")
                     .Input({2, 4, 8})
                     .Input({2, 8, 4})
                     .Op("Einsum", {"x0", "x1"}, {onnx::StringAttr("equation", "bij,bjk->bik")})
                     .Done({2, 4, 4}));
}

void AddNormalizationOps(std::vector<CanaryCase>* out) {
  out->push_back(Case("Softmax")
                     .Input({2, 8, 16})
                     .Op("Softmax", {"x0"}, {IntAttr("axis", -1)})
                     .Done({2, 8, 16}));
  out->push_back(Case("LayerNormalization")
                     .Input({2, 8, 32})
                     .Init(FloatTensor("s", {32}, Values({32}, 5)))
                     .Init(FloatTensor("b", {32}, Values({32}, 6)))
                     .Op("LayerNormalization", {"x0", "s", "b"}, {IntAttr("axis", -1)})
                     .Done({2, 8, 32}));
  // GroupNorm as SD exports it for opset < 18 is Reshape + InstanceNormalization + Reshape.
  out->push_back(Case("InstanceNormalization")
                     .Input({1, 8, 4, 4})
                     .Init(FloatTensor("s", {8}, Values({8}, 7)))
                     .Init(FloatTensor("b", {8}, Values({8}, 8)))
                     .Op("InstanceNormalization", {"x0", "s", "b"})
                     .Done({1, 8, 4, 4}));
  out->push_back(Case("ReduceMean")
                     .Input({2, 8, 16})
                     .Op("ReduceMean", {"x0"}, {IntsAttr("axes", {-1}), IntAttr("keepdims", 1)})
                     .Done({2, 8, 1}));
}

void AddShapeOps(std::vector<CanaryCase>* out) {
  out->push_back(Case("Concat")
                     .Input({1, 4, 8})
                     .Input({1, 4, 8})
                     .Op("Concat", {"x0", "x1"}, {IntAttr("axis", 1)})
                     .Done({1, 8, 8}));
  out->push_back(Case("Slice")
                     .Input({1, 8, 16})
                     .Init(Int64Tensor("st", {1}, {2}))
                     .Init(Int64Tensor("en", {1}, {10}))
                     .Init(Int64Tensor("ax", {1}, {2}))
                     .Op("Slice", {"x0", "st", "en", "ax"})
                     .Done({1, 8, 8}));
  out->push_back(Case("Split")
                     .Input({1, 8, 16})
                     .Init(Int64Tensor("sp", {2}, {4, 4}))
                     .Op("Split", {"x0", "sp"}, {IntAttr("axis", 1)}, {"y", "unused"})
                     .Done({1, 4, 16}));
  out->push_back(Case("Pad")
                     .Input({1, 4, 8, 8})
                     .Init(Int64Tensor("p", {8}, {0, 0, 1, 1, 0, 0, 1, 1}))
                     .Op("Pad", {"x0", "p"})
                     .Done({1, 4, 10, 10}));
  out->push_back(Case("Resize(scales)")
                     .Input({1, 4, 8, 8})
                     .Init(FloatTensor("sc", {4}, {1, 1, 2, 2}))
                     .Op("Resize", {"x0", "", "sc"}, {onnx::StringAttr("mode", "nearest")})
                     .Done({1, 4, 16, 16}));
  out->push_back(Case("Resize(sizes)")
                     .Input({1, 4, 8, 8})
                     .Init(Int64Tensor("sz", {4}, {1, 4, 16, 16}))
                     .Op("Resize", {"x0", "", "", "sz"}, {onnx::StringAttr("mode", "nearest")})
                     .Done({1, 4, 16, 16}));
  out->push_back(Case("GatherND")
                     .Input({2, 8, 16})
                     .Init(Int64Tensor("i", {2, 1}, {7, 2}))
                     .Op("GatherND", {"x0", "i"}, {IntAttr("batch_dims", 1)})
                     .Done({2, 16}));
  out->push_back(Case("Unsqueeze")
                     .Input({2, 8})
                     .Init(Int64Tensor("ax", {2}, {2, 3}))
                     .Op("Unsqueeze", {"x0", "ax"})
                     .Done({2, 8, 1, 1}));
  out->push_back(Case("Identity").Input({2, 8}).Op("Identity", {"x0"}).Done({2, 8}));
}

// Shape, index and layout ops (after AddShapeOps, in this order: the set's order is its hash's).
void AddIndexAndLayoutOps(std::vector<CanaryCase>* out) {
  // Shape's int64 output and ArgMax over int32 ids (as CLIP exports pick the end-of-text token)
  // are cast to float for the comparison.
  out->push_back(Case("Shape")
                     .Input({2, 8, 4})
                     .Op("Shape", {"x0"}, {}, {"s"})
                     .Op("Cast", {"s"}, {IntAttr("to", static_cast<int>(ElemType::kFloat))})
                     .Done({3}, "Shape"));
  out->push_back(Case("ArgMax(int32)")
                     .Input({2, 16})
                     .Init(FloatTensor("k", {1}, {1000.0f}))
                     .Op("Mul", {"x0", "k"}, {}, {"m"})
                     .Op("Cast", {"m"}, {IntAttr("to", static_cast<int>(ElemType::kInt32))}, {"i"})
                     .Op("ArgMax", {"i"}, {IntAttr("axis", -1), IntAttr("keepdims", 1)}, {"a"})
                     .Op("Cast", {"a"}, {IntAttr("to", static_cast<int>(ElemType::kFloat))})
                     .Done({2, 1}, "ArgMax"));
  // The toy pipeline's ops (tools/sd_toy.py): ids folded with Mod, latents to pixels by
  // DepthToSpace.
  out->push_back(Case("Mod(int64)")
                     .Input({2, 16})
                     .Init(FloatTensor("k", {1}, {1000.0f}))
                     .Init(Int64Tensor("d", {1}, {7}))
                     .Op("Mul", {"x0", "k"}, {}, {"m"})
                     .Op("Cast", {"m"}, {IntAttr("to", static_cast<int>(ElemType::kInt64))}, {"i"})
                     .Op("Mod", {"i", "d"}, {}, {"r"})
                     .Op("Cast", {"r"}, {IntAttr("to", static_cast<int>(ElemType::kFloat))})
                     .Done({2, 16}, "Mod"));
  out->push_back(Case("DepthToSpace")
                     .Input({1, 16, 4, 4})
                     .Op("DepthToSpace", {"x0"}, {IntAttr("blocksize", 2)})
                     .Done({1, 4, 8, 8}));
  out->push_back(Case("Gather")
                     .Input({16, 8})
                     .Init(Int64Tensor("i", {3}, {3, 0, 15}))
                     .Op("Gather", {"x0", "i"}, {IntAttr("axis", 0)})
                     .Done({3, 8}));
  out->push_back(Case("Expand")
                     .Input({1, 8, 1})
                     .Init(Int64Tensor("sh", {3}, {2, 8, 4}))
                     .Op("Expand", {"x0", "sh"})
                     .Done({2, 8, 4}));
  out->push_back(Case("Transpose")
                     .Input({2, 8, 4})
                     .Op("Transpose", {"x0"}, {IntsAttr("perm", {0, 2, 1})})
                     .Done({2, 4, 8}));
  out->push_back(Case("Reshape")
                     .Input({2, 8, 4})
                     .Init(Int64Tensor("sh", {2}, {2, 32}))
                     .Op("Reshape", {"x0", "sh"})
                     .Done({2, 32}));
  out->push_back(Case("Tile")
                     .Input({2, 4})
                     .Init(Int64Tensor("r", {2}, {2, 3}))
                     .Op("Tile", {"x0", "r"})
                     .Done({4, 12}));
}

void AddElementwiseOps(std::vector<CanaryCase>* out) {
  out->push_back(Case("Where")
                     .Input({2, 8})
                     .Input({2, 8})
                     .Init(onnx::BoolTensor("c", {2, 8}, std::vector<bool>(16, true)))
                     .Op("Where", {"c", "x0", "x1"})
                     .Done({2, 8}));
  for (const char* op : {"Erf", "Sigmoid", "Sin", "Cos", "Tanh"}) {
    out->push_back(Case(op).Input({2, 8, 16}).Op(op, {"x0"}).Done({2, 8, 16}));
  }
  for (const char* op : {"Add", "Mul", "Sub", "Div"}) {
    out->push_back(
        Case(op).Input({2, 8, 16}).Input({2, 8, 16}).Op(op, {"x0", "x1"}).Done({2, 8, 16}));
  }
  out->push_back(
      Case("Cast(fp16)")
          .Input({2, 8, 16})
          .Op("Cast", {"x0"}, {IntAttr("to", static_cast<int>(ElemType::kFloat16))}, {"h"})
          .Op("Cast", {"h"}, {IntAttr("to", static_cast<int>(ElemType::kFloat))})
          .Done({2, 8, 16}));
}

}  // namespace

std::vector<CanaryCase> BuiltinCanaryCases() {
  std::vector<CanaryCase> out;
  AddConvAndMatrixOps(&out);
  AddNormalizationOps(&out);
  AddShapeOps(&out);
  AddIndexAndLayoutOps(&out);
  AddElementwiseOps(&out);
  // "Cast(fp16)" ends in a Cast back to float; the op under test is the first one.
  for (auto& c : out) {
    if (c.name == "Cast(fp16)") c.op_type = "Cast";
  }
  return out;
}

const std::vector<CanaryExclusion>& CanaryExcludedOps() {
  static const std::vector<CanaryExclusion> kExcluded = {
      {"Constant",
       "no kernel runs: ONNX Runtime turns Constant nodes into initializers when it loads a model"},
  };
  return kExcluded;
}

std::vector<std::string> UncoveredOpTypes(const std::vector<std::string>& op_types) {
  std::set<std::string, std::less<>> known;
  for (const auto& c : BuiltinCanaryCases()) known.insert(c.op_type);
  for (const auto& e : CanaryExcludedOps()) known.insert(e.op_type);
  std::set<std::string> missing;
  for (const auto& op : op_types) {
    if (known.count(op) == 0) missing.insert(op);
  }
  return {missing.begin(), missing.end()};
}

std::string CanaryOpSetHash(const std::vector<CanaryCase>& cases) {
  std::string all;
  for (const auto& c : cases) {
    all += c.name;
    all.push_back('\0');
    all += c.model;
    all.push_back('\0');
  }
  return common::Sha256Hex(all.data(), all.size());
}

}  // namespace tg::runtime
