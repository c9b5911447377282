#include "runtime/onnx_builder.h"

#include <cstring>

namespace tg::runtime::onnx {
namespace {

// Protobuf wire format: a field key is (number << 3 | wire type); 0 varint, 2 length-delimited,
// 5 fixed32.
class Writer {
 public:
  void Varint(std::uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void Key(int field, int wire) { Varint(static_cast<std::uint64_t>(field) << 3 | wire); }
  void Int(int field, std::int64_t v) {
    Key(field, 0);
    Varint(static_cast<std::uint64_t>(v));  // negative int64: ten bytes, as protobuf does
  }
  void Bytes(int field, const std::string& b) {
    Key(field, 2);
    Varint(b.size());
    out_ += b;
  }
  void Float(int field, float f) {
    Key(field, 5);
    char b[4];
    std::memcpy(b, &f, 4);
    out_.append(b, 4);
  }
  const std::string& str() const { return out_; }

 private:
  std::string out_;
};

std::string TensorBytes(const TensorData& t) {
  Writer w;
  for (std::int64_t d : t.dims) w.Int(1, d);
  w.Int(2, static_cast<int>(t.type));
  w.Bytes(8, t.name);
  w.Bytes(9, t.raw);
  return w.str();
}

std::string AttributeBytes(const Attribute& a) {
  // AttributeProto: name 1, f 2, i 3, s 4, floats 7, ints 8, type 20.
  Writer w;
  w.Bytes(1, a.name);
  switch (a.kind) {
    case Attribute::Kind::kFloat:
      w.Float(2, a.f);
      w.Int(20, 1);
      break;
    case Attribute::Kind::kInt:
      w.Int(3, a.i);
      w.Int(20, 2);
      break;
    case Attribute::Kind::kString:
      w.Bytes(4, a.s);
      w.Int(20, 3);
      break;
    case Attribute::Kind::kFloats:
      for (float f : a.floats) w.Float(7, f);
      w.Int(20, 6);
      break;
    case Attribute::Kind::kInts:
      for (std::int64_t i : a.ints) w.Int(8, i);
      w.Int(20, 7);
      break;
  }
  return w.str();
}

std::string NodeBytes(const Node& n, int index) {
  Writer w;
  for (const auto& i : n.inputs) w.Bytes(1, i);
  for (const auto& o : n.outputs) w.Bytes(2, o);
  w.Bytes(3, n.op_type + "_" + std::to_string(index));
  w.Bytes(4, n.op_type);
  for (const auto& a : n.attributes) w.Bytes(5, AttributeBytes(a));
  return w.str();
}

std::string ValueInfoBytes(const ValueInfo& v) {
  Writer shape;
  for (std::size_t i = 0; i < v.dims.size(); ++i) {
    Writer dim;
    if (v.dims[i] == kSymbolicDim) {
      dim.Bytes(2, v.name + "_d" + std::to_string(i));  // dim_param: a symbolic dim
    } else {
      dim.Int(1, v.dims[i]);  // any other negative value as given: hostile-model tests need it
    }
    shape.Bytes(1, dim.str());
  }
  Writer tensor;
  tensor.Int(1, static_cast<int>(v.type));
  tensor.Bytes(2, shape.str());
  Writer type;
  type.Bytes(1, tensor.str());
  Writer w;
  w.Bytes(1, v.name);
  w.Bytes(2, type.str());
  return w.str();
}

template <typename T>
std::string Raw(const std::vector<T>& v) {
  std::string s(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
  return s;
}

}  // namespace

TensorData FloatTensor(const std::string& name, const std::vector<std::int64_t>& dims,
                       const std::vector<float>& values) {
  return {name, ElemType::kFloat, dims, Raw(values)};
}

TensorData Int64Tensor(const std::string& name, const std::vector<std::int64_t>& dims,
                       const std::vector<std::int64_t>& values) {
  return {name, ElemType::kInt64, dims, Raw(values)};
}

TensorData BoolTensor(const std::string& name, const std::vector<std::int64_t>& dims,
                      const std::vector<bool>& values) {
  std::string raw;
  for (bool b : values) raw.push_back(b ? 1 : 0);
  return {name, ElemType::kBool, dims, raw};
}

Attribute IntAttr(const std::string& name, std::int64_t v) {
  Attribute a;
  a.name = name;
  a.kind = Attribute::Kind::kInt;
  a.i = v;
  return a;
}

Attribute FloatAttr(const std::string& name, float v) {
  Attribute a;
  a.name = name;
  a.kind = Attribute::Kind::kFloat;
  a.f = v;
  return a;
}

Attribute StringAttr(const std::string& name, const std::string& v) {
  Attribute a;
  a.name = name;
  a.kind = Attribute::Kind::kString;
  a.s = v;
  return a;
}

Attribute IntsAttr(const std::string& name, const std::vector<std::int64_t>& v) {
  Attribute a;
  a.name = name;
  a.kind = Attribute::Kind::kInts;
  a.ints = v;
  return a;
}

std::string SerializeModel(const Graph& graph, std::int64_t opset) {
  // GraphProto: node 1, name 2, initializer 5, input 11, output 12.
  Writer g;
  for (std::size_t i = 0; i < graph.nodes.size(); ++i) {
    g.Bytes(1, NodeBytes(graph.nodes[i], static_cast<int>(i)));
  }
  g.Bytes(2, graph.name);
  for (const auto& t : graph.initializers) g.Bytes(5, TensorBytes(t));
  for (const auto& v : graph.inputs) g.Bytes(11, ValueInfoBytes(v));
  for (const auto& v : graph.outputs) g.Bytes(12, ValueInfoBytes(v));
  // OperatorSetIdProto: domain 1, version 2.
  Writer op;
  op.Bytes(1, "");
  op.Int(2, opset);
  // ModelProto: ir_version 1, producer_name 2, graph 7, opset_import 8.
  Writer m;
  m.Int(1, 8);
  m.Bytes(2, "truegreen-canary");
  m.Bytes(7, g.str());
  m.Bytes(8, op.str());
  return m.str();
}

}  // namespace tg::runtime::onnx
