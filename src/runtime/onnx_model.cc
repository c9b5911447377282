#include "runtime/onnx_model.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <filesystem>
#include <mutex>
#include <set>
#include <unordered_map>

#include "common/file_util.h"
#include "runtime/onnx_graph.h"
#include "runtime/onnx_model_internal.h"

namespace tg::runtime {

using common::Result;
using common::Status;

int OnnxElementSize(int elem_type) {
  switch (elem_type) {
    case ::onnx::TensorProto::FLOAT:
    case ::onnx::TensorProto::INT32:
    case ::onnx::TensorProto::UINT32:
      return 4;
    case ::onnx::TensorProto::FLOAT16:
    case ::onnx::TensorProto::BFLOAT16:
    case ::onnx::TensorProto::INT16:
    case ::onnx::TensorProto::UINT16:
      return 2;
    case ::onnx::TensorProto::DOUBLE:
    case ::onnx::TensorProto::INT64:
    case ::onnx::TensorProto::UINT64:
    case ::onnx::TensorProto::COMPLEX64:
      return 8;
    case ::onnx::TensorProto::INT8:
    case ::onnx::TensorProto::UINT8:
    case ::onnx::TensorProto::BOOL:
      return 1;
    case ::onnx::TensorProto::COMPLEX128:
      return 16;
    default:
      return 0;
  }
}

namespace {

// com.microsoft.MultiHeadAttention's output: [B, S, hidden of V] from Q [B, S, Dq] and V
// [B, L, Dv] (ORT's contrib schema, for the 3-D forms the rewrite writes).
void MultiHeadAttentionShape(::onnx::InferenceContext& ctx) {
  ::onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  if (!::onnx::hasInputShape(ctx, 0)) return;
  const auto& q = ctx.getInputType(0)->tensor_type().shape();
  if (q.dim_size() != 3) return;
  ::onnx::TensorShapeProto out;
  *out.add_dim() = q.dim(0);
  *out.add_dim() = q.dim(1);
  *out.add_dim() = q.dim(2);
  if (::onnx::hasInputShape(ctx, 2)) {
    const auto& v = ctx.getInputType(2)->tensor_type().shape();
    if (v.dim_size() == 3) *out.mutable_dim(2) = v.dim(2);
  }
  ::onnx::updateOutputShape(ctx, 0, out);
}

}  // namespace

void RegisterContribSchemas() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto& domains = ::onnx::OpSchemaRegistry::DomainToVersionRange::Instance();
    if (domains.Map().count("com.microsoft") == 0)
      domains.AddDomainToVersion("com.microsoft", 1, 1);
    ::onnx::OpSchema s;
    s.SetName("MultiHeadAttention").SetDomain("com.microsoft").SinceVersion(1);
    s.Attr("num_heads", "heads", ::onnx::AttributeProto::INT);
    s.Attr("scale", "score scale", ::onnx::AttributeProto::FLOAT, ::onnx::OPTIONAL_VALUE);
    s.Attr("mask_filter_value", "masked score", ::onnx::AttributeProto::FLOAT,
           ::onnx::OPTIONAL_VALUE);
    s.Attr("unidirectional", "causal", ::onnx::AttributeProto::INT, ::onnx::OPTIONAL_VALUE);
    const char* names[] = {"query",          "key",      "value",     "bias", "key_padding_mask",
                           "attention_bias", "past_key", "past_value"};
    for (int i = 0; i < 8; ++i) {
      s.Input(i, names[i], "", i == 4 ? "M" : "T",
              i == 0 ? ::onnx::OpSchema::Single : ::onnx::OpSchema::Optional);
    }
    s.Output(0, "output", "", "T");
    s.Output(1, "present_key", "", "T", ::onnx::OpSchema::Optional);
    s.Output(2, "present_value", "", "T", ::onnx::OpSchema::Optional);
    s.TypeConstraint("T", {"tensor(float)", "tensor(float16)", "tensor(bfloat16)"}, "");
    s.TypeConstraint("M", {"tensor(int32)"}, "");
    s.TypeAndShapeInferenceFunction(MultiHeadAttentionShape);
    ::onnx::RegisterSchema(s);
  });
}

OnnxModel::OnnxModel() : impl_(std::make_unique<Impl>()) {}
OnnxModel::~OnnxModel() = default;
OnnxModel::OnnxModel(OnnxModel&&) noexcept = default;
OnnxModel& OnnxModel::operator=(OnnxModel&&) noexcept = default;

Result<OnnxModel> OnnxModel::Load(const std::string& path, const OnnxLoadOptions& options) {
  auto bytes = common::ReadFileLimited(path, options.max_bytes);
  if (!bytes.ok()) return bytes.status();
  if (bytes->empty()) return Status::InvalidArg(path + ": not a valid ONNX model: empty file");
  if (options.check_external_data) {
    auto summary =
        ParseOnnxGraph(reinterpret_cast<const std::uint8_t*>(bytes->data()), bytes->size(), path);
    if (!summary.ok()) return summary.status();
    TG_RETURN_IF_ERROR(CheckExternalData(*summary, path));
  }
  const std::string folder = std::filesystem::path(path).parent_path().string();
  return Parse(*bytes, path, folder.empty() ? "." : folder);
}

Result<OnnxModel> OnnxModel::Parse(const std::string& bytes, const std::string& source,
                                   const std::string& folder) {
  // The hand-written reader first: it names the malformed field and its byte offset, which
  // protobuf's parser does not.
  auto summary =
      ParseOnnxGraph(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), source);
  if (!summary.ok()) return summary.status();
  OnnxModel m;
  m.impl_->source = source;
  m.impl_->folder = folder;
  bool parsed = false;
  try {
    parsed = m.impl_->proto.ParseFromString(bytes);
  } catch (const std::exception& e) {  // std::bad_alloc for a field the file claims to hold
    return Status::InvalidArg(source + ": not a valid ONNX model: " + e.what());
  }
  if (!parsed) {
    return Status::InvalidArg(source +
                              ": not a valid ONNX model: protobuf cannot parse it as a ModelProto "
                              "(a field of the wrong type or nesting deeper than 100)");
  }
  return m;
}

OnnxModel OnnxModel::Clone() const {
  OnnxModel m;
  m.impl_->proto = impl_->proto;
  m.impl_->source = impl_->source;
  m.impl_->folder = impl_->folder;
  return m;
}

const std::string& OnnxModel::source() const { return impl_->source; }
const std::string& OnnxModel::folder() const { return impl_->folder; }
std::int64_t OnnxModel::ir_version() const { return impl_->proto.ir_version(); }

std::int64_t OnnxModel::OpsetVersion(const std::string& domain) const {
  const std::string want = domain == "ai.onnx" ? "" : domain;
  for (const auto& o : impl_->proto.opset_import()) {
    if ((o.domain() == "ai.onnx" ? "" : o.domain()) == want) return o.version();
  }
  return 0;
}

bool OnnxModel::has_external_data() const {
  for (const auto& t : impl_->proto.graph().initializer()) {
    if (t.data_location() == ::onnx::TensorProto::EXTERNAL) return true;
  }
  return false;
}

std::map<std::string, int> OnnxModel::OpCounts() const {
  std::map<std::string, int> counts;
  for (const auto& n : impl_->proto.graph().node()) {
    const bool onnx_domain = n.domain().empty() || n.domain() == "ai.onnx";
    ++counts[onnx_domain ? n.op_type() : n.domain() + "." + n.op_type()];
  }
  return counts;
}

std::vector<std::string> OnnxModel::InputNames() const {
  std::set<std::string> inits;
  for (const auto& t : impl_->proto.graph().initializer()) inits.insert(t.name());
  std::vector<std::string> names;
  for (const auto& v : impl_->proto.graph().input()) {
    if (inits.count(v.name()) == 0) names.push_back(v.name());
  }
  return names;
}

Status OnnxModel::Check() const {
  try {
    ::onnx::checker::CheckerContext ctx;
    ctx.set_ir_version(static_cast<int>(impl_->proto.ir_version()));
    std::unordered_map<std::string, int> opsets;
    for (const auto& o : impl_->proto.opset_import()) {
      opsets[o.domain()] = static_cast<int>(o.version());
    }
    ctx.set_opset_imports(opsets);
    ctx.set_model_dir(impl_->folder);
    ::onnx::checker::LexicalScopeContext lex;
    ::onnx::checker::check_graph(impl_->proto.graph(), ctx, lex);
  } catch (const std::exception& e) {
    return Status::InvalidArg(impl_->source + ": the ONNX checker refuses this model: " + e.what());
  }
  return Status::Ok();
}

Result<std::string> OnnxModel::Serialize() const {
  const std::size_t size = impl_->proto.ByteSizeLong();
  if (size >= (std::size_t{1} << 31)) {
    return Status::InvalidArg(impl_->source + ": the model is " + std::to_string(size) +
                              " bytes; a serialized ONNX model must stay under 2 GiB");
  }
  std::string out;
  if (!impl_->proto.SerializeToString(&out)) {
    return Status::InvalidArg(impl_->source + ": the model cannot be serialized");
  }
  return out;
}

::onnx::ModelProto ShapeOnlyCopy(const ::onnx::ModelProto& src) {
  ::onnx::ModelProto m;
  m.set_ir_version(src.ir_version());
  *m.mutable_opset_import() = src.opset_import();
  *m.mutable_functions() = src.functions();
  const ::onnx::GraphProto& g = src.graph();
  ::onnx::GraphProto* out = m.mutable_graph();
  out->set_name(g.name());
  *out->mutable_node() = g.node();
  *out->mutable_input() = g.input();
  *out->mutable_output() = g.output();
  *out->mutable_sparse_initializer() = g.sparse_initializer();
  for (const auto& t : g.initializer()) {
    std::int64_t n = 1;
    for (auto d : t.dims()) n = d > 0 && n <= (std::int64_t{1} << 40) / d ? n * d : n;
    ::onnx::TensorProto* c = out->add_initializer();
    if (n <= 4096 && t.data_location() != ::onnx::TensorProto::EXTERNAL) {
      *c = t;
      continue;
    }
    c->set_name(t.name());
    c->set_data_type(t.data_type());
    *c->mutable_dims() = t.dims();
  }
  return m;
}

namespace {

// Every node (main graph and subgraphs, at most 64 levels) against its schema: input and output
// counts, attribute types. Shape functions index their inputs as the schema says, so this comes
// first.
Status VerifyNodes(const ::onnx::GraphProto& g, const std::unordered_map<std::string, int>& opsets,
                   const std::string& source, int depth) {
  if (depth > 64) return Status::InvalidArg(source + ": subgraphs nested deeper than 64");
  for (const auto& n : g.node()) {
    const std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
    auto it = opsets.find(domain);
    if (it == opsets.end() && domain.empty()) it = opsets.find("ai.onnx");
    const int version = it == opsets.end() ? 0 : it->second;
    const ::onnx::OpSchema* schema = ::onnx::OpSchemaRegistry::Schema(n.op_type(), version, domain);
    if (schema != nullptr) {
      try {
        schema->Verify(n);
      } catch (const std::exception& e) {
        return Status::InvalidArg(source + ": node '" + n.name() + "' (" + n.op_type() +
                                  "): " + e.what());
      }
    }
    for (const auto& a : n.attribute()) {
      if (a.has_g()) TG_RETURN_IF_ERROR(VerifyNodes(a.g(), opsets, source, depth + 1));
      for (const auto& sub : a.graphs())
        TG_RETURN_IF_ERROR(VerifyNodes(sub, opsets, source, depth + 1));
    }
  }
  return Status::Ok();
}

Status FixInputDims(const std::map<std::string, std::vector<std::int64_t>>& input_dims,
                    const std::string& source, ::onnx::GraphProto* g) {
  for (const auto& [name, dims] : input_dims) {
    ::onnx::ValueInfoProto* v = nullptr;
    for (auto& in : *g->mutable_input()) {
      if (in.name() == name) v = &in;
    }
    if (v == nullptr || !v->type().has_tensor_type()) {
      return Status::InvalidArg(source + ": no tensor input named '" + name + "'");
    }
    auto* shape = v->mutable_type()->mutable_tensor_type()->mutable_shape();
    if (shape->dim_size() != 0 && shape->dim_size() != static_cast<int>(dims.size())) {
      return Status::InvalidArg(source + ": input '" + name + "' has rank " +
                                std::to_string(shape->dim_size()) + ", " +
                                std::to_string(dims.size()) + " dims were given");
    }
    while (shape->dim_size() < static_cast<int>(dims.size())) shape->add_dim();
    for (std::size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] >= 0) shape->mutable_dim(static_cast<int>(i))->set_dim_value(dims[i]);
    }
  }
  return Status::Ok();
}

InferredValue ToInferred(const std::string& name, const ::onnx::TypeProto& type,
                         InferredValue::Kind kind) {
  InferredValue v;
  v.name = name;
  v.kind = kind;
  if (!type.has_tensor_type()) return v;
  v.elem_type = type.tensor_type().elem_type();
  if (!type.tensor_type().has_shape()) return v;
  v.rank_known = true;
  std::int64_t count = 1;
  bool known = true;
  for (const auto& d : type.tensor_type().shape().dim()) {
    const std::int64_t x = d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : -1;
    v.dims.push_back(x);
    if (x < 0)
      known = false;
    else if (x > 0 && count > (std::int64_t{1} << 62) / x)
      known = false;
    else
      count *= x;
  }
  const int size = OnnxElementSize(v.elem_type);
  if (known && size > 0 && count <= (std::int64_t{1} << 62) / size) v.bytes = count * size;
  return v;
}

}  // namespace

Result<std::vector<InferredValue>> OnnxModel::InferShapes(
    const std::map<std::string, std::vector<std::int64_t>>& input_dims) const {
  RegisterContribSchemas();
  ::onnx::ModelProto m = ShapeOnlyCopy(impl_->proto);
  TG_RETURN_IF_ERROR(FixInputDims(input_dims, impl_->source, m.mutable_graph()));
  std::unordered_map<std::string, int> opsets;
  for (const auto& o : m.opset_import()) opsets[o.domain()] = static_cast<int>(o.version());
  TG_RETURN_IF_ERROR(VerifyNodes(m.graph(), opsets, impl_->source, 0));
  try {
    ::onnx::ShapeInferenceOptions opts(/*check_type=*/false, /*error_mode=*/0,
                                       /*data_prop=*/true);
    ::onnx::shape_inference::InferShapes(m, ::onnx::OpSchemaRegistry::Instance(), opts);
  } catch (const std::exception& e) {
    return Status::InvalidArg(impl_->source + ": shape inference failed: " + e.what());
  }
  const ::onnx::GraphProto& g = m.graph();
  std::map<std::string, std::string> producer;
  for (const auto& n : g.node()) {
    for (const auto& o : n.output()) producer[o] = n.op_type();
  }
  std::vector<InferredValue> out;
  std::set<std::string> seen;
  for (const auto& t : g.initializer()) {
    ::onnx::TypeProto type;
    type.mutable_tensor_type()->set_elem_type(t.data_type());
    auto* shape = type.mutable_tensor_type()->mutable_shape();
    for (auto d : t.dims()) shape->add_dim()->set_dim_value(d);
    out.push_back(ToInferred(t.name(), type, InferredValue::Kind::kInitializer));
    seen.insert(t.name());
  }
  auto add = [&](const ::onnx::ValueInfoProto& v, InferredValue::Kind kind) {
    if (!seen.insert(v.name()).second) return;
    out.push_back(ToInferred(v.name(), v.type(), kind));
    out.back().producer = producer.count(v.name()) ? producer[v.name()] : "";
  };
  for (const auto& v : g.input()) add(v, InferredValue::Kind::kInput);
  for (const auto& v : g.output()) add(v, InferredValue::Kind::kOutput);
  for (const auto& v : g.value_info()) add(v, InferredValue::Kind::kIntermediate);
  return out;
}

}  // namespace tg::runtime
