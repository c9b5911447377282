// KServe v2 / Open Inference Protocol REST for generic ONNX models (JSON tensors and the binary
// tensor data extension, framed by server/kserve_binary.h), dynamic batching of compatible
// requests, and the generic models' warm-up and canary runs.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "server/api_adapters.h"
#include "server/kserve_binary.h"

#ifndef TG_VERSION
#define TG_VERSION "0.0.0"
#endif

namespace tg::server {

using common::Json;
using common::Result;
using common::Status;
using runtime::DataType;
using runtime::NamedTensor;
using runtime::Tensor;

namespace {

// The longest request `id` taken (and returned as sent); a longer one is refused (400).
constexpr std::size_t kMaxInferIdBytes = 1024;

// The extension's tensor bytes are little-endian; tensors are sent and received as host bytes.
static_assert(std::endian::native == std::endian::little, "binary tensors assume little-endian");

// The one version every model has (metadata `versions`, /versions/1 paths, `model_version`).
constexpr const char* kModelVersion = "1";

struct InferJob : ServerJob {
  std::optional<std::string> request_id;  // as sent, "" included
  std::vector<NamedTensor> inputs;
  std::vector<std::string> outputs;  // empty = all
  std::int64_t rows = 1;             // dim 0 of the inputs (batching)
  // Binary extension: outputs answered as raw bytes (binary_data_output, or binary_data per
  // output, which wins over it).
  bool binary_all = false;
  std::set<std::string> binary_on, binary_off;
  // The estimate of this request's run alone (memory_admission.h); absent without a budget or an
  // estimator for the model.
  std::optional<runtime::RunMemoryEstimate> memory;
  bool Binary(const std::string& output) const {
    return binary_on.count(output) > 0 || (binary_all && binary_off.count(output) == 0);
  }
};

struct KType {
  const char* name;
  DataType dtype;
};
constexpr KType kTypes[] = {
    {"BOOL", DataType::kBool},    {"UINT8", DataType::kUint8},   {"INT8", DataType::kInt8},
    {"INT16", DataType::kInt16},  {"UINT16", DataType::kUint16}, {"INT32", DataType::kInt32},
    {"INT64", DataType::kInt64},  {"FP16", DataType::kFloat16},  {"FP32", DataType::kFloat32},
    {"FP64", DataType::kFloat64},
};

std::string KName(DataType d) {
  for (const auto& t : kTypes) {
    if (t.dtype == d) return t.name;
  }
  return "UNSUPPORTED";
}

// Flattens (possibly nested) JSON arrays of scalars into `out`; false when something else is
// found or more than `limit` values are present.
bool Flatten(const Json& v, std::size_t limit, std::vector<const Json*>* out, int depth = 0) {
  if (depth > 16) return false;
  if (!v.is_array()) {
    if (out->size() >= limit) return false;
    out->push_back(&v);
    return true;
  }
  for (const Json& e : v) {
    if (!Flatten(e, limit, out, depth + 1)) return false;
  }
  return true;
}

template <typename T>
bool PutInt(const Json& v, void* dst) {
  if (!v.is_number_integer()) return false;
  if (v.is_number_unsigned()) {
    auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return false;
    T t = static_cast<T>(u);
    std::memcpy(dst, &t, sizeof(T));
    return true;
  }
  auto i = v.get<std::int64_t>();
  if (i < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
      (i > 0 && static_cast<std::uint64_t>(i) > std::numeric_limits<T>::max())) {
    return false;
  }
  T t = static_cast<T>(i);
  std::memcpy(dst, &t, sizeof(T));
  return true;
}

bool PutValue(DataType d, const Json& v, char* dst) {
  switch (d) {
    case DataType::kBool:
      if (!v.is_boolean()) return false;
      *dst = v.get<bool>() ? 1 : 0;
      return true;
    case DataType::kUint8:
      return PutInt<std::uint8_t>(v, dst);
    case DataType::kInt8:
      return PutInt<std::int8_t>(v, dst);
    case DataType::kInt16:
      return PutInt<std::int16_t>(v, dst);
    case DataType::kUint16:
      return PutInt<std::uint16_t>(v, dst);
    case DataType::kInt32:
      return PutInt<std::int32_t>(v, dst);
    case DataType::kInt64:
      return PutInt<std::int64_t>(v, dst);
    case DataType::kFloat16: {
      if (!v.is_number()) return false;
      std::uint16_t h = runtime::FloatToHalf(v.get<float>());
      std::memcpy(dst, &h, 2);
      return true;
    }
    case DataType::kFloat32: {
      if (!v.is_number()) return false;
      float f = v.get<float>();
      std::memcpy(dst, &f, 4);
      return true;
    }
    case DataType::kFloat64: {
      if (!v.is_number()) return false;
      double f = v.get<double>();
      std::memcpy(dst, &f, 8);
      return true;
    }
    default:
      return false;
  }
}

Json TensorData(const Tensor& t) {
  Json a = Json::array();
  const char* p = static_cast<const char*>(t.raw_data());
  const std::int64_t n = t.element_count();
  for (std::int64_t i = 0; i < n; ++i) {
    switch (t.dtype()) {
      case DataType::kBool:
        a.push_back(p[i] != 0);
        break;
      case DataType::kUint8:
        a.push_back(reinterpret_cast<const std::uint8_t*>(p)[i]);
        break;
      case DataType::kInt8:
        a.push_back(reinterpret_cast<const std::int8_t*>(p)[i]);
        break;
      case DataType::kInt16:
        a.push_back(reinterpret_cast<const std::int16_t*>(p)[i]);
        break;
      case DataType::kUint16:
        a.push_back(reinterpret_cast<const std::uint16_t*>(p)[i]);
        break;
      case DataType::kInt32:
        a.push_back(reinterpret_cast<const std::int32_t*>(p)[i]);
        break;
      case DataType::kInt64:
        a.push_back(reinterpret_cast<const std::int64_t*>(p)[i]);
        break;
      case DataType::kFloat16:
        a.push_back(runtime::HalfToFloat(reinterpret_cast<const std::uint16_t*>(p)[i]));
        break;
      case DataType::kFloat32:
        a.push_back(reinterpret_cast<const float*>(p)[i]);
        break;
      case DataType::kFloat64:
        a.push_back(reinterpret_cast<const double*>(p)[i]);
        break;
      default:
        a.push_back(nullptr);
    }
  }
  return a;
}

Result<NamedTensor> ParseInput(const Json& in, const runtime::TensorInfo& info, std::size_t limit,
                               std::optional<std::string_view> binary) {
  const std::string& name = info.name;
  if (!in.contains("datatype") || !in["datatype"].is_string()) {
    return Status::InvalidArg("input '" + name + "': 'datatype' must be a string");
  }
  const std::string dt = in["datatype"].get<std::string>();
  if (binary && !KserveElementSize(dt)) {
    return Status::InvalidArg("input '" + name + "': unknown datatype '" + dt.substr(0, 16) + "'");
  }
  if (dt != KName(info.dtype) && !binary) {
    return Status::InvalidArg("input '" + name + "': datatype " + dt.substr(0, 16) +
                              " given, the model takes " + KName(info.dtype));
  }
  if (!in.contains("shape") || !in["shape"].is_array() || in["shape"].size() > 8) {
    return Status::InvalidArg("input '" + name + "': 'shape' must be an array of dimensions");
  }
  std::vector<std::int64_t> shape;
  for (const Json& d : in["shape"]) {
    if (!d.is_number_integer() || d.get<std::int64_t>() < 0 || d.get<std::int64_t>() > (1 << 24)) {
      return Status::InvalidArg("input '" + name + "': shape dimensions must be integers >= 0");
    }
    shape.push_back(d.get<std::int64_t>());
  }
  if (binary) {
    // The framing is checked against the request's own datatype and shape first, so malformed
    // bytes (e.g. a BYTES length prefix past the end) are named as such.
    const std::int64_t n = runtime::ElementCount(shape);
    if (n < 0 || static_cast<std::size_t>(n) > limit) {
      return Status::InvalidArg("input '" + name + "': shape has too many elements");
    }
    TG_RETURN_IF_ERROR(CheckBinaryTensor(name, dt, n, *binary));
    if (dt != KName(info.dtype)) {
      return Status::InvalidArg("input '" + name + "': datatype " + dt.substr(0, 16) +
                                " given, the model takes " + KName(info.dtype));
    }
  }
  if (shape.size() != info.shape.size()) {
    return Status::InvalidArg("input '" + name + "': shape " + runtime::ShapeToString(shape) +
                              " has the wrong rank, the model takes " +
                              runtime::ShapeToString(info.shape));
  }
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (info.shape[i] >= 0 && info.shape[i] != shape[i]) {
      return Status::InvalidArg("input '" + name + "': shape " + runtime::ShapeToString(shape) +
                                " does not fit the model's " + runtime::ShapeToString(info.shape));
    }
  }
  const std::int64_t count = runtime::ElementCount(shape);
  if (count < 0 || static_cast<std::size_t>(count) > limit) {
    return Status::InvalidArg("input '" + name + "': shape has too many elements");
  }
  if (binary) {
    auto t = Tensor::FromBytes(info.dtype, shape, std::string(*binary));
    if (!t.ok()) return t.status().WithPrefix("input '" + name + "'");
    return NamedTensor{name, std::move(t).value()};
  }
  if (!in.contains("data")) return Status::InvalidArg("input '" + name + "': 'data' is missing");
  std::vector<const Json*> values;
  if (!Flatten(in["data"], limit, &values) || static_cast<std::int64_t>(values.size()) != count) {
    return Status::InvalidArg("input '" + name + "': 'data' must hold " + std::to_string(count) +
                              " scalar values for shape " + runtime::ShapeToString(shape));
  }
  auto t = Tensor::Create(info.dtype, shape);
  if (!t.ok()) return t.status().WithPrefix("input '" + name + "'");
  const std::size_t es = runtime::DataTypeSize(info.dtype);
  char* dst = static_cast<char*>(t->raw_data());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!PutValue(info.dtype, *values[i], dst + i * es)) {
      return Status::InvalidArg("input '" + name + "': data[" + std::to_string(i) +
                                "] is not a valid " + dt + " value");
    }
  }
  return NamedTensor{name, std::move(t).value()};
}

// Reads the binary extension's output choices: parameters.binary_data_output of the request and
// parameters.binary_data of each requested output.
Status ParseBinaryOutputs(const Json& body, InferJob* job) {
  if (body.contains("parameters")) {
    const Json& p = body["parameters"];
    if (!p.is_object()) return Status::InvalidArg("'parameters' must be an object");
    if (p.contains("binary_data_output")) {
      if (!p["binary_data_output"].is_boolean()) {
        return Status::InvalidArg("parameters.binary_data_output must be true or false");
      }
      job->binary_all = p["binary_data_output"].get<bool>();
    }
  }
  if (!body.contains("outputs") || !body["outputs"].is_array()) return Status::Ok();
  for (const Json& o : body["outputs"]) {
    if (!o.is_object() || !o.contains("parameters")) continue;
    const Json& p = o["parameters"];
    const std::string n = o.contains("name") && o["name"].is_string() ? o["name"] : "";
    if (!p.is_object()) {
      return Status::InvalidArg("output '" + n.substr(0, 64) + "': 'parameters' must be an object");
    }
    if (!p.contains("binary_data")) continue;
    if (!p["binary_data"].is_boolean()) {
      return Status::InvalidArg("output '" + n.substr(0, 64) +
                                "': parameters.binary_data must be true or false");
    }
    (p["binary_data"].get<bool>() ? job->binary_on : job->binary_off).insert(n);
  }
  return Status::Ok();
}

// Validates a KServe v2 infer request (JSON, or JSON header + binary section) against the model's
// inputs and outputs into *job. `limit` bounds element counts (each value takes at least one body
// byte).
Status ParseInferBody(const InferBodyParts& parts, const runtime::Session& session,
                      std::size_t limit, InferJob* job) {
  Json body = Json::parse(parts.json, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return Status::InvalidArg("request body is not valid JSON (UTF-8)");
  if (!body.is_object() || !body.contains("inputs") || !body["inputs"].is_array()) {
    return Status::InvalidArg("request must be an object with an 'inputs' array");
  }
  if (body.contains("id")) {
    if (!body["id"].is_string()) return Status::InvalidArg("field 'id' must be a string");
    const std::string& id = body["id"].get_ref<const std::string&>();
    if (id.size() > kMaxInferIdBytes) {
      return Status::InvalidArg("field 'id' is " + std::to_string(id.size()) + " bytes; at most " +
                                std::to_string(kMaxInferIdBytes) +
                                " bytes are accepted (it is returned as sent)");
    }
    job->request_id = id;
  }
  TG_ASSIGN_OR_RETURN(auto binary, AssignBinaryInputs(body["inputs"], parts.binary));
  for (const runtime::TensorInfo& info : session.inputs()) {
    const Json* found = nullptr;
    std::optional<std::string_view> bytes;
    for (std::size_t i = 0; i < body["inputs"].size(); ++i) {
      const Json& in = body["inputs"][i];
      if (in.is_object() && in.contains("name") && in["name"] == info.name) {
        found = &in;
        bytes = binary[i];
      }
    }
    if (!found) return Status::InvalidArg("input '" + info.name + "' is missing");
    auto t = ParseInput(*found, info, limit, bytes);
    if (!t.ok()) return t.status();
    job->inputs.push_back(std::move(t).value());
  }
  if (body["inputs"].size() != session.inputs().size()) {
    return Status::InvalidArg("request has " + std::to_string(body["inputs"].size()) +
                              " inputs, the model takes " +
                              std::to_string(session.inputs().size()));
  }
  TG_RETURN_IF_ERROR(ParseBinaryOutputs(body, job));
  if (!body.contains("outputs")) return Status::Ok();
  if (!body["outputs"].is_array()) return Status::InvalidArg("'outputs' must be an array");
  for (const Json& o : body["outputs"]) {
    if (!o.is_object() || !o.contains("name") || !o["name"].is_string()) {
      return Status::InvalidArg("each entry of 'outputs' needs a string 'name'");
    }
    const std::string n = o["name"].get<std::string>();
    bool known = false;
    for (const auto& oi : session.outputs()) known = known || oi.name == n;
    if (!known) return Status::InvalidArg("the model has no output '" + n.substr(0, 64) + "'");
    job->outputs.push_back(n);
  }
  return Status::Ok();
}

// Triton's raw binary form (Inference-Header-Content-Length: 0): the body is the bytes of the
// model's single input, shaped by the model (a dynamic dim 0 is taken from the byte count), and
// every output is answered as JSON.
Status ParseRawBody(std::string_view bytes, const runtime::Session& session, InferJob* job) {
  const auto& inputs = session.inputs();
  if (inputs.size() != 1) {
    return Status::InvalidArg(
        "the raw binary request form (Inference-Header-Content-Length: 0) needs a model with one "
        "input; this model takes " +
        std::to_string(inputs.size()) +
        ": send a JSON header with parameters.binary_data_size instead");
  }
  const runtime::TensorInfo& info = inputs.front();
  std::vector<std::int64_t> shape = info.shape;
  std::int64_t row = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) row *= shape[i];
  const std::size_t es = runtime::DataTypeSize(info.dtype);
  const bool dims_fixed = std::all_of(shape.begin() + (shape.empty() ? 0 : 1), shape.end(),
                                      [](std::int64_t d) { return d >= 0; });
  if (shape.empty() || !dims_fixed || es == 0 || row <= 0) {
    return Status::InvalidArg(
        "the raw binary request form (Inference-Header-Content-Length: 0) "
        "needs input '" +
        info.name +
        "' to have a fixed shape after dim "
        "0, it has " +
        runtime::ShapeToString(info.shape) +
        ": send a JSON header with parameters.binary_data_size instead");
  }
  const std::size_t row_bytes = static_cast<std::size_t>(row) * es;
  if (bytes.empty() || bytes.size() % row_bytes != 0 ||
      (shape[0] >= 0 && bytes.size() != row_bytes * static_cast<std::size_t>(shape[0]))) {
    return Status::InvalidArg("raw binary input '" + info.name + "' is " +
                              std::to_string(bytes.size()) + " bytes; the model's " +
                              runtime::ShapeToString(info.shape) + " " + KName(info.dtype) +
                              " takes a multiple of " + std::to_string(row_bytes) + " bytes");
  }
  shape[0] = static_cast<std::int64_t>(bytes.size() / row_bytes);
  auto t = Tensor::FromBytes(info.dtype, shape, std::string(bytes));
  if (!t.ok()) return t.status().WithPrefix("raw binary input '" + info.name + "'");
  job->inputs.push_back({info.name, std::move(t).value()});
  return Status::Ok();
}

// Requests are batched along dim 0 only when every input and output is dynamic there and the
// other dimensions and requested outputs agree (dtypes are fixed by the model).
void SetBatchKey(const ModelSpec& spec, const runtime::Session& session, const std::string& id,
                 InferJob* job) {
  bool batchable = spec.max_batch > 1;
  for (const auto& i : session.inputs()) {
    batchable = batchable && !i.shape.empty() && i.shape[0] < 0;
  }
  for (const auto& o : session.outputs()) {
    batchable = batchable && !o.shape.empty() && o.shape[0] < 0;
  }
  if (batchable) {
    job->rows = job->inputs.front().tensor.shape()[0];
    for (const auto& t : job->inputs) {
      const auto& s = t.tensor.shape();
      batchable = batchable && s[0] == job->rows && job->rows > 0;
      job->batch_key += t.name + runtime::ShapeToString({s.begin() + 1, s.end()}) + ";";
    }
    for (const auto& o : job->outputs) job->batch_key += "out:" + o + ";";
  }
  if (!batchable) {
    job->rows = 1;
    job->batch_key = "solo:" + id;
  }
}

// The request's input shapes and the bytes its input tensors hold.
InputShapes ShapesOf(const std::vector<NamedTensor>& inputs) {
  InputShapes shapes;
  for (const auto& t : inputs) shapes[t.name] = t.tensor.shape();
  return shapes;
}

std::int64_t BytesOf(const std::vector<NamedTensor>& inputs) {
  std::int64_t bytes = 0;
  for (const auto& t : inputs) {
    bytes = runtime::SaturatingAdd(bytes, static_cast<std::int64_t>(t.tensor.byte_size()));
  }
  return bytes;
}

// Estimates one run of `job` alone (memory_admission.h, onnx_memory.h); INVALID_ARG (KServe's 400,
// before the request queues) when it cannot fit in the budget less what the models hold.
Status AdmitByMemory(const ServerParts& p, const std::string& model, InferJob* job) {
  const InputShapes shapes = ShapesOf(job->inputs);
  job->memory = p.memory.EstimateOnnx(model, shapes, BytesOf(job->inputs));
  if (!job->memory) return Status::Ok();
  Status s = p.memory.CheckOnnx(model, shapes, *job->memory);
  if (!s.ok()) p.metrics.Add("truegreen_memory_refused_total", {{"model", model}});
  return s;
}

// The estimate of the merged run of `jobs` (their rows stacked along dim 0); the one job's own
// estimate when it runs alone; absent when the model has none.
std::optional<runtime::RunMemoryEstimate> MergedEstimate(
    const ServerParts& p, const std::vector<std::shared_ptr<Job>>& jobs) {
  const auto* first = static_cast<const InferJob*>(jobs.front().get());
  if (jobs.size() == 1 || !first->memory) return first->memory;
  InputShapes shapes = ShapesOf(first->inputs);
  std::int64_t rows = 0, bytes = 0;
  for (const auto& j : jobs) {
    const auto* job = static_cast<const InferJob*>(j.get());
    rows += job->rows;
    bytes = runtime::SaturatingAdd(bytes, BytesOf(job->inputs));
  }
  for (auto& [name, dims] : shapes) {
    if (!dims.empty()) dims[0] = rows;  // batched jobs are dynamic in dim 0 (SetBatchKey)
  }
  return p.memory.EstimateOnnx(first->ctx->model, shapes, bytes);
}

}  // namespace

namespace {

Json MetadataJson(const ModelRuntime& mr) {
  auto list = [](const std::vector<runtime::TensorInfo>& v) {
    Json a = Json::array();
    for (const auto& t : v)
      a.push_back({{"name", t.name}, {"datatype", KName(t.dtype)}, {"shape", t.shape}});
    return a;
  };
  const LoadedModel& m = *mr.model;
  // One version per model, "1", reachable as /versions/1 (docs/SERVER.md); the platform is the
  // protocol's name for ONNX models.
  Json j = {{"name", m.spec.name},
            {"versions", Json::array({kModelVersion})},
            {"platform", "onnx_onnxv1"}};
  if (m.session) {
    j["inputs"] = list(m.session->inputs());
    j["outputs"] = list(m.session->outputs());
    j["max_batch_size"] = m.spec.max_batch;
  } else {
    j["inputs"] = Json::array();
    j["outputs"] = Json::array();
    j["properties"] = {{"kind", "stable_diffusion"}, {"endpoint", "POST /v1/images/generations"}};
  }
  return j;
}

}  // namespace

void KserveApi::AddRoutes(RouteTable* table) {
  using Access = RouteTable::Access;
  auto bind = [this](ApiResult<Reply> (KserveApi::*f)(Call&)) {
    return [this, f](Call& c) { return (this->*f)(c); };
  };
  table->Add("GET", "/v2", Access::kWork, bind(&KserveApi::ServerMetadata));
  // Every model has the one version "1": the unversioned and the versioned paths answer alike.
  for (const std::string base : {"/v2/models/{model}", "/v2/models/{model}/versions/{version}"}) {
    table->Add("GET", base, Access::kWork, bind(&KserveApi::ModelMetadata));
    table->Add("GET", base + "/ready", Access::kWork, bind(&KserveApi::ModelReady));
    table->Add("POST", base + "/infer", Access::kWork, bind(&KserveApi::Infer));
  }
}

ApiResult<Reply> KserveApi::ServerMetadata(Call&) {
  return Reply(JsonResponse(200, {{"name", "truegreen"},
                                  {"version", TG_VERSION},
                                  {"extensions", Json::array({"binary_tensor_data"})}}));
}

ApiResult<ModelRuntime*> KserveApi::PathModel(Call& c) const {
  TG_RETURN_IF_ERROR(p_.CheckStarted());
  const std::string& name = c.Param("model");
  ModelRuntime* mr = p_.models.Find(name);
  if (!mr) return Status::NotFound("no model named '" + name.substr(0, 64) + "'");
  c.ctx->model = mr->model->spec.name;
  const std::string& version = c.Param("version");
  if (!version.empty() && version != kModelVersion) {
    return Status::NotFound("model '" + c.ctx->model + "' has no version '" +
                            version.substr(0, 64) + "': its only version is \"" + kModelVersion +
                            "\"");
  }
  return mr;
}

ApiResult<Reply> KserveApi::ModelMetadata(Call& c) {
  auto mr = PathModel(c);
  if (!mr.ok()) return mr.error();
  return Reply(JsonResponse(200, MetadataJson(*mr.value())));
}

ApiResult<Reply> KserveApi::ModelReady(Call& c) {
  auto mr = PathModel(c);
  if (!mr.ok()) return mr.error();
  // A health answer, not an error: 503 with the body the protocol defines.
  const bool ready = p_.readiness.State().ready();
  return Reply(JsonResponse(ready ? 200 : 503, {{"name", c.ctx->model}, {"ready", ready}}));
}

ApiResult<Reply> KserveApi::Infer(Call& c) {
  auto found = PathModel(c);
  if (!found.ok()) return found.error();
  ModelRuntime* mr = found.value();
  if (!mr->model->session) {
    return Status::InvalidArg("model '" + c.ctx->model +
                              "' is an image model: use POST /v1/images/generations");
  }
  auto job = std::make_shared<InferJob>();
  const std::string header_length = c.req.Header("inference-header-content-length");
  if (header_length == "0") {
    TG_RETURN_IF_ERROR(RequestFault(ParseRawBody(c.req.body, *mr->model->session, job.get())));
  } else {
    auto parts = SplitInferBody(c.req.body, header_length);
    if (!parts.ok()) return RequestFault(parts.status());
    TG_RETURN_IF_ERROR(RequestFault(
        ParseInferBody(*parts, *mr->model->session, p_.config.limits.max_body_bytes, job.get())));
  }
  SetBatchKey(mr->model->spec, *mr->model->session, c.ctx->id, job.get());
  TG_RETURN_IF_ERROR(AdmitByMemory(p_, c.ctx->model, job.get()));
  job->ctx = c.ctx;
  job->respond = c.respond;
  job->enqueued = Clock::now();
  job->deadline = job->enqueued + std::chrono::milliseconds(p_.config.limits.deadline_ms);
  Lane* lane = mr->lanes.front().get();
  if (!lane->Submit(job)) {
    return ApiError::Of(ErrorKind::kQueueFull,
                        "queue of model " + c.ctx->model + " is full: retry later");
  }
  return Reply::Queued();
}

void KserveApi::RunJobs(ModelRuntime* mr, std::vector<std::shared_ptr<Job>>& jobs) {
  auto* first = static_cast<InferJob*>(jobs.front().get());
  const std::string model = first->ctx->model;
  const auto e = MergedEstimate(p_, jobs);
  if (e && jobs.size() > 1 && e->peak_bytes > p_.memory.available_bytes()) {
    // Each request fits alone (AdmitByMemory), their merged run does not: halves, in turn.
    p_.metrics.Add("truegreen_memory_split_total", {{"model", model}});
    const auto mid = jobs.begin() + static_cast<std::ptrdiff_t>(jobs.size() / 2);
    std::vector<std::shared_ptr<Job>> a(jobs.begin(), mid), b(mid, jobs.end());
    RunJobs(mr, a);
    RunJobs(mr, b);
    return;
  }
  MemoryAdmission::Reservation reservation;  // held until the run's answers are sent
  if (e) {
    Clock::time_point deadline = first->deadline;
    for (const auto& j : jobs) deadline = std::max(deadline, j->deadline);
    std::atomic<bool> never{false};
    auto r = p_.memory.Reserve(e->peak_bytes, deadline, jobs.size() == 1 ? &first->cancel : &never);
    if (!r) {
      for (auto& j : jobs) {
        auto* job = static_cast<InferJob*>(j.get());
        const ApiError err = ApiError::Of(
            ErrorKind::kDeadline, "deadline of " + std::to_string(p_.config.limits.deadline_ms) +
                                      " ms passed while the request waited for memory");
        p_.finish(job->ctx, job->respond, ErrorFor(*job->ctx, err));
      }
      return;
    }
    reservation = std::move(*r);
    p_.memory.NoteOnnxAdmitted(p_.metrics, model, *e);
  }
  RunMerged(mr, jobs);
}

void KserveApi::RunMerged(ModelRuntime* mr, std::vector<std::shared_ptr<Job>>& jobs) {
  const runtime::Session& session = *mr->model->session;
  auto* first = static_cast<InferJob*>(jobs.front().get());
  const Labels lb = {{"model", first->ctx->model}};
  // Merge the batch along dim 0 (row-major: concatenating the buffers concatenates the rows).
  std::vector<NamedTensor> merged;
  std::int64_t total = 0;
  for (auto& j : jobs) total += static_cast<InferJob*>(j.get())->rows;
  for (std::size_t i = 0; i < first->inputs.size(); ++i) {
    if (jobs.size() == 1) {
      merged.push_back(first->inputs[i]);
      continue;
    }
    std::vector<std::int64_t> shape = first->inputs[i].tensor.shape();
    shape[0] = total;
    std::string bytes;
    for (auto& j : jobs) bytes += static_cast<InferJob*>(j.get())->inputs[i].tensor.bytes();
    auto t = Tensor::FromBytes(first->inputs[i].tensor.dtype(), shape, std::move(bytes));
    merged.push_back({first->inputs[i].name, t.ok() ? std::move(t).value() : Tensor()});
  }
  const auto t0 = Clock::now();
  std::vector<Tensor> outs;
  Status s = session.Run(merged, first->outputs, &outs);
  if (!s.ok() && IsMemoryFailure(s)) p_.memory.CountFailure(p_.metrics, first->ctx->model);
  const double compute_ms = MsSince(t0);
  p_.metrics.Add("nv_inference_exec_count", lb);
  p_.metrics.Observe("truegreen_batch_size", lb, static_cast<double>(jobs.size()));
  std::vector<std::string> names = first->outputs;
  if (names.empty()) {
    for (const auto& o : session.outputs()) names.push_back(o.name);
  }
  std::int64_t row = 0;
  for (auto& j : jobs) {
    auto* job = static_cast<InferJob*>(j.get());
    job->ctx->queue_ms = std::chrono::duration<double, std::milli>(t0 - job->enqueued).count();
    job->ctx->compute_ms = compute_ms;
    if (!s.ok()) {
      p_.finish(job->ctx, job->respond, ErrorFor(*job->ctx, ApiError::From(s)));
      continue;
    }
    Json outputs = Json::array();
    std::string binary;  // the binary extension's section, outputs in order
    for (std::size_t k = 0; k < outs.size() && k < names.size(); ++k) {
      Tensor part = outs[k];
      if (jobs.size() > 1) {
        const std::size_t row_bytes = outs[k].byte_size() / static_cast<std::size_t>(total);
        std::vector<std::int64_t> shape = outs[k].shape();
        shape[0] = job->rows;
        auto p = Tensor::FromBytes(outs[k].dtype(), shape,
                                   outs[k].bytes().substr(row * row_bytes, job->rows * row_bytes));
        if (p.ok()) part = std::move(p).value();
      }
      Json o = {{"name", names[k]}, {"datatype", KName(part.dtype())}, {"shape", part.shape()}};
      if (job->Binary(names[k])) {
        // Tensor bytes are host order; every supported build target is little-endian.
        o["parameters"] = {{"binary_data_size", part.byte_size()}};
        binary += part.bytes();
      } else {
        o["data"] = TensorData(part);
      }
      outputs.push_back(std::move(o));
    }
    row += job->rows;
    job->ctx->items = static_cast<int>(job->rows);
    p_.metrics.Add("nv_inference_count", lb, static_cast<double>(job->rows));
    Json body = {
        {"model_name", job->ctx->model}, {"model_version", kModelVersion}, {"outputs", outputs}};
    if (job->request_id) body["id"] = *job->request_id;
    HttpResponse resp = JsonResponse(200, body);
    if (!binary.empty() || job->binary_all || !job->binary_on.empty()) {
      resp.headers.emplace_back("Inference-Header-Content-Length",
                                std::to_string(resp.body.size()));
      resp.content_type = "application/octet-stream";
      resp.body += binary;
    }
    p_.finish(job->ctx, job->respond, std::move(resp));
  }
}

namespace {

// Inputs of one warm-up/canary run: the given shapes, other dynamic dims set to 1, zeros.
Result<std::vector<NamedTensor>> WarmupInputs(
    const runtime::Session& s, const std::map<std::string, std::vector<std::int64_t>>& shapes) {
  std::vector<NamedTensor> in;
  std::int64_t bytes = 0;
  for (const auto& info : s.inputs()) {
    std::vector<std::int64_t> shape = info.shape;
    if (auto it = shapes.find(info.name); it != shapes.end()) shape = it->second;
    for (auto& d : shape) d = d < 0 ? 1 : d;
    // Sized before anything is allocated: the model's fixed dimensions count too.
    const std::int64_t n = runtime::ElementCount(shape);
    const auto size = static_cast<std::int64_t>(runtime::DataTypeSize(info.dtype));
    if (n < 0 || (size > 0 && n > (kMaxWarmupBytes - bytes) / size)) {
      return Status::InvalidArg("warm-up input '" + info.name + "' of shape " +
                                runtime::ShapeToString(shape) + ": the run's inputs would need " +
                                "more than " + std::to_string(kMaxWarmupBytes) +
                                " bytes (the limit per warm-up run)");
    }
    bytes += n * size;
    auto t = Tensor::Create(info.dtype, shape);
    if (!t.ok()) return t.status().WithPrefix("warm-up input '" + info.name + "'");
    in.push_back({info.name, std::move(t).value()});
  }
  for (const auto& [name, shape] : shapes) {
    bool known = false;
    for (const auto& info : s.inputs()) known = known || info.name == name;
    if (!known) return Status::InvalidArg("warm-up names input '" + name + "', not in the model");
  }
  return in;
}

}  // namespace

Status KserveApi::Warmup(ModelRuntime* mr) {
  const runtime::Session& s = *mr->model->session;
  std::vector<std::map<std::string, std::vector<std::int64_t>>> runs = mr->model->spec.warmup;
  if (runs.empty()) runs.emplace_back();
  for (const auto& shapes : runs) {
    auto in = WarmupInputs(s, shapes);
    if (!in.ok()) return in.status();
    std::vector<Tensor> out;
    TG_RETURN_IF_ERROR(s.Run(*in, {}, &out));
  }
  return Status::Ok();
}

Result<double> KserveApi::TimeCanaryRun(ModelRuntime* mr) {
  const runtime::Session& s = *mr->model->session;
  const std::map<std::string, std::vector<std::int64_t>> none;
  const auto& warm = mr->model->spec.warmup;
  auto in = WarmupInputs(s, warm.empty() ? none : warm.front());
  if (!in.ok()) return in.status();
  std::vector<Tensor> out;
  const auto t0 = Clock::now();
  TG_RETURN_IF_ERROR(s.Run(*in, {}, &out));
  const double ms = MsSince(t0);
  for (const Tensor& t : out) {
    if (t.dtype() != DataType::kFloat32) continue;
    const float* p = t.data<float>();
    for (std::int64_t i = 0; i < t.element_count(); ++i) {
      if (!std::isfinite(p[i]))
        return Status::Unavailable("the canary output is not finite: the GPU miscomputed");
    }
  }
  return ms;
}

}  // namespace tg::server
