// A minimal ONNX model writer: enough of the protobuf wire format (ModelProto, GraphProto,
// NodeProto, AttributeProto, TensorProto, ValueInfoProto) to build the op canary's one-op models
// in memory. Pure C++; no ONNX Runtime or protobuf library involved.
//
// Failure behaviour: building never fails (the caller owns the model's validity; ONNX Runtime
// judges it when the bytes are loaded). Thread safety: value types, no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tg::runtime::onnx {

// ONNX TensorProto.DataType values used here.
enum class ElemType : int { kFloat = 1, kInt32 = 6, kInt64 = 7, kBool = 9, kFloat16 = 10 };

struct TensorData {
  std::string name;
  ElemType type = ElemType::kFloat;
  std::vector<std::int64_t> dims;
  std::string raw;  // little-endian element bytes (raw_data)
};
TensorData FloatTensor(const std::string& name, const std::vector<std::int64_t>& dims,
                       const std::vector<float>& values);
TensorData Int64Tensor(const std::string& name, const std::vector<std::int64_t>& dims,
                       const std::vector<std::int64_t>& values);
TensorData BoolTensor(const std::string& name, const std::vector<std::int64_t>& dims,
                      const std::vector<bool>& values);

struct Attribute {
  enum class Kind { kFloat, kInt, kString, kInts, kFloats };
  std::string name;
  Kind kind = Kind::kInt;
  float f = 0;
  std::int64_t i = 0;
  std::string s;
  std::vector<std::int64_t> ints;
  std::vector<float> floats;
};
Attribute IntAttr(const std::string& name, std::int64_t v);
Attribute FloatAttr(const std::string& name, float v);
Attribute StringAttr(const std::string& name, const std::string& v);
Attribute IntsAttr(const std::string& name, const std::vector<std::int64_t>& v);

struct Node {
  std::string op_type;
  std::vector<std::string> inputs;  // "" = an omitted optional input
  std::vector<std::string> outputs;
  std::vector<Attribute> attributes;
};

inline constexpr std::int64_t kSymbolicDim = -1;

struct ValueInfo {
  std::string name;
  ElemType type = ElemType::kFloat;
  // kSymbolicDim (-1) is symbolic (dim_param "<name>_d<index>"); other values, negative ones
  // included, are written as dim_value.
  std::vector<std::int64_t> dims;
};

struct Graph {
  std::string name = "canary";
  std::vector<Node> nodes;
  std::vector<TensorData> initializers;
  std::vector<ValueInfo> inputs, outputs;
};

// The serialized ModelProto (ir_version 8, default-domain opset `opset`).
std::string SerializeModel(const Graph& graph, std::int64_t opset = 17);

}  // namespace tg::runtime::onnx
