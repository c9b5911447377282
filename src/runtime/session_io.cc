#include "runtime/session_io.h"

#include <cstring>
#include <set>

namespace tg::runtime {

using common::Status;

DataType FromOrtType(ONNXTensorElementDataType t) {
  switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
      return DataType::kFloat32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
      return DataType::kFloat16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
      return DataType::kFloat64;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
      return DataType::kBFloat16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
      return DataType::kInt8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
      return DataType::kUint8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
      return DataType::kInt16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16:
      return DataType::kUint16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
      return DataType::kInt32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
      return DataType::kInt64;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
      return DataType::kBool;
    default:
      return DataType::kUnknown;
  }
}

ONNXTensorElementDataType ToOrtType(DataType d) {
  switch (d) {
    case DataType::kFloat32:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
    case DataType::kFloat16:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
    case DataType::kFloat64:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE;
    case DataType::kBFloat16:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16;
    case DataType::kInt8:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8;
    case DataType::kUint8:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
    case DataType::kInt16:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16;
    case DataType::kUint16:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16;
    case DataType::kInt32:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
    case DataType::kInt64:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
    case DataType::kBool:
      return ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL;
    case DataType::kUnknown:
      break;
  }
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
}

namespace {

TensorInfo InfoOf(const std::string& name, const Ort::TypeInfo& ti) {
  TensorInfo info;
  info.name = name;
  if (ti.GetONNXType() != ONNX_TYPE_TENSOR) return info;  // dtype stays kUnknown
  auto t = ti.GetTensorTypeAndShapeInfo();
  info.dtype = FromOrtType(t.GetElementType());
  info.shape = t.GetShape();
  std::vector<const char*> sym(info.shape.size(), nullptr);
  if (!sym.empty()) t.GetSymbolicDimensions(sym.data(), sym.size());
  for (const char* s : sym) info.dim_names.emplace_back(s ? s : "");
  return info;
}

// Host Tensor copy of a CPU-accessible Ort::Value.
common::Result<Tensor> ToTensor(const Ort::Value& v, const std::string& name) {
  if (!v.IsTensor()) {
    return Status::Unsupported("output '" + name +
                               "' is not a tensor (sequences/maps unsupported)");
  }
  auto info = v.GetTensorTypeAndShapeInfo();
  const DataType dt = FromOrtType(info.GetElementType());
  if (dt == DataType::kUnknown) {
    return Status::Unsupported("output '" + name + "' has an unsupported element type " +
                               std::to_string(static_cast<int>(info.GetElementType())));
  }
  auto t = Tensor::Create(dt, info.GetShape());
  if (!t.ok()) return t.status().WithPrefix("output '" + name + "'");
  if (t->byte_size() > 0) std::memcpy(t->raw_data(), v.GetTensorRawData(), t->byte_size());
  return t;
}

// Non-owning Ort::Value over a host Tensor's buffer (ORT does not write to inputs).
Ort::Value Wrap(const Ort::MemoryInfo& mem, const Tensor& t) {
  return Ort::Value::CreateTensor(mem, const_cast<void*>(t.raw_data()), t.byte_size(),
                                  t.shape().data(), t.shape().size(), ToOrtType(t.dtype()));
}

OrtAllocator* SharedAllocator(Ort::Env& env, const OrtMemoryInfo* mem) {
  if (mem == nullptr) return nullptr;
  OrtAllocator* a = nullptr;
  const OrtApi& api = Ort::GetApi();
  // No shared allocator for this memory: the caller binds host memory instead.
  if (!FromOrtStatus(&api, api.GetSharedAllocator(env, mem, &a), "GetSharedAllocator").ok()) {
    return nullptr;
  }
  return a;
}

Status CopyOne(Ort::Env& env, const Ort::Value& src, Ort::Value& dst, const std::string& what) {
  const OrtValue* s = src;
  OrtValue* d = dst;
  return FromOrtStatus(&Ort::GetApi(), Ort::GetApi().CopyTensors(env, &s, &d, nullptr, 1), what);
}

}  // namespace

Status ReadModelIo(const Ort::Session& session, std::vector<TensorInfo>* inputs,
                   std::vector<TensorInfo>* outputs) {
  try {
    Ort::AllocatorWithDefaultOptions alloc;
    for (size_t i = 0; i < session.GetInputCount(); ++i) {
      auto name = session.GetInputNameAllocated(i, alloc);
      inputs->push_back(InfoOf(name.get(), session.GetInputTypeInfo(i)));
    }
    for (size_t i = 0; i < session.GetOutputCount(); ++i) {
      auto name = session.GetOutputNameAllocated(i, alloc);
      outputs->push_back(InfoOf(name.get(), session.GetOutputTypeInfo(i)));
    }
  } catch (const Ort::Exception& ex) {
    return FromOrtException(ex, "reading model inputs/outputs");
  }
  return Status::Ok();
}

Status Session::Impl::Init() {
  try {
    cpu_memory = std::make_unique<Ort::MemoryInfo>(
        Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault));
    run_options = std::make_unique<Ort::RunOptions>();
    if (shrink_arena) {
      const std::string spec = use_device ? "gpu:" + std::to_string(device_id) : "cpu:0";
      run_options->AddConfigEntry("memory.enable_memory_arena_shrinkage", spec.c_str());
    }
  } catch (const Ort::Exception& ex) {
    return FromOrtException(ex, "session run setup");
  }
  return Status::Ok();
}

Status Session::Impl::Validate(const std::vector<NamedTensor>& inputs,
                               const std::vector<std::string>& output_names,
                               std::vector<std::string>* outputs) const {
  std::set<std::string> given;
  for (const auto& in : inputs) {
    const TensorInfo* decl = nullptr;
    for (const auto& i : report.inputs) {
      if (i.name == in.name) decl = &i;
    }
    if (decl == nullptr) {
      std::string names;
      for (const auto& i : report.inputs) {
        if (!names.empty()) names += ", ";
        names += i.name;
      }
      return Status::InvalidArg("model " + report.model_path + " has no input '" + in.name +
                                "' (inputs: " + names + ")");
    }
    if (!given.insert(in.name).second) {
      return Status::InvalidArg("input '" + in.name + "' given twice");
    }
    if (in.tensor.dtype() != decl->dtype) {
      return Status::InvalidArg("input '" + in.name + "' is " +
                                std::string(DataTypeName(in.tensor.dtype())) +
                                ", the model requires " + std::string(DataTypeName(decl->dtype)));
    }
    bool shape_ok = in.tensor.shape().size() == decl->shape.size();
    for (std::size_t d = 0; shape_ok && d < decl->shape.size(); ++d) {
      shape_ok = decl->shape[d] < 0 || decl->shape[d] == in.tensor.shape()[d];
    }
    if (!shape_ok) {
      return Status::InvalidArg("input '" + in.name + "' has shape " +
                                ShapeToString(in.tensor.shape()) + ", the model requires " +
                                ShapeToString(decl->shape));
    }
  }
  for (const auto& i : report.inputs) {
    if (!given.count(i.name)) return Status::InvalidArg("input '" + i.name + "' is missing");
  }
  outputs->clear();
  if (output_names.empty()) {
    for (const auto& o : report.outputs) outputs->push_back(o.name);
    return Status::Ok();
  }
  for (const auto& n : output_names) {
    bool found = false;
    for (const auto& o : report.outputs) found = found || o.name == n;
    if (!found) {
      return Status::InvalidArg("model " + report.model_path + " has no output '" + n + "'");
    }
    outputs->push_back(n);
  }
  return Status::Ok();
}

Status Session::Impl::Run(const std::vector<NamedTensor>& inputs,
                          const std::vector<std::string>& output_names, std::vector<Tensor>* out,
                          RunMode mode) {
  std::vector<std::string> outputs;
  TG_RETURN_IF_ERROR(Validate(inputs, output_names, &outputs));
  const bool bound = mode == RunMode::kIoBinding || (mode == RunMode::kDefault && io_binding);
  Status st;
  try {
    st = bound ? RunBound(inputs, outputs, out) : RunPlain(inputs, outputs, out);
  } catch (const Ort::Exception& ex) {
    return FromOrtException(ex, "running " + report.model_path);
  }
  if (st.ok()) runs.fetch_add(1, std::memory_order_relaxed);
  return st;
}

Status Session::Impl::RunPlain(const std::vector<NamedTensor>& inputs,
                               const std::vector<std::string>& outputs, std::vector<Tensor>* out) {
  std::vector<Ort::Value> values;
  std::vector<const char*> in_names, out_names;
  values.reserve(inputs.size());
  for (const auto& in : inputs) {
    values.push_back(Wrap(*cpu_memory, in.tensor));
    in_names.push_back(in.name.c_str());
    if (use_device) h2d.fetch_add(in.tensor.byte_size(), std::memory_order_relaxed);
  }
  for (const auto& o : outputs) out_names.push_back(o.c_str());
  auto results = session->Run(*run_options, in_names.data(), values.data(), values.size(),
                              out_names.data(), out_names.size());
  out->clear();
  for (std::size_t i = 0; i < results.size(); ++i) {
    auto t = ToTensor(results[i], outputs[i]);
    if (!t.ok()) return t.status();
    if (use_device) d2h.fetch_add(t->byte_size(), std::memory_order_relaxed);
    out->push_back(std::move(t).value());
  }
  return Status::Ok();
}

Status Session::Impl::RunBound(const std::vector<NamedTensor>& inputs,
                               const std::vector<std::string>& outputs, std::vector<Tensor>* out) {
  Ort::IoBinding binding(*session);
  Ort::Env& ortenv = env->env();
  // Device path with explicit copies: plugin EPs expose their device and pinned allocators
  // through the environment. Otherwise (CPU, or a classic GPU provider) bind host memory; with a
  // GPU provider ORT then performs the single host<->device copy itself.
  OrtAllocator* dev_alloc = use_device ? SharedAllocator(ortenv, device_memory) : nullptr;
  OrtAllocator* pin_alloc = use_device ? SharedAllocator(ortenv, pinned_memory) : nullptr;
  const bool explicit_copies = dev_alloc != nullptr && pin_alloc != nullptr;

  std::vector<Ort::Value> keep;  // values must outlive the run
  keep.reserve(inputs.size() * 2);
  for (const auto& in : inputs) {
    const Tensor& t = in.tensor;
    if (explicit_copies) {
      Ort::Value staging = Ort::Value::CreateTensor(pin_alloc, t.shape().data(), t.shape().size(),
                                                    ToOrtType(t.dtype()));
      if (t.byte_size())
        std::memcpy(staging.GetTensorMutableRawData(), t.raw_data(), t.byte_size());
      Ort::Value device = Ort::Value::CreateTensor(dev_alloc, t.shape().data(), t.shape().size(),
                                                   ToOrtType(t.dtype()));
      TG_RETURN_IF_ERROR(CopyOne(ortenv, staging, device, "copying input '" + in.name + "'"));
      h2d.fetch_add(t.byte_size(), std::memory_order_relaxed);
      binding.BindInput(in.name.c_str(), device);
      keep.push_back(std::move(staging));
      keep.push_back(std::move(device));
    } else {
      keep.push_back(Wrap(*cpu_memory, t));
      binding.BindInput(in.name.c_str(), keep.back());
      if (use_device) h2d.fetch_add(t.byte_size(), std::memory_order_relaxed);
    }
  }
  for (const auto& o : outputs) {
    if (explicit_copies) {
      binding.BindOutput(o.c_str(), Ort::ConstMemoryInfo(device_memory));
    } else {
      binding.BindOutput(o.c_str(), *cpu_memory);
    }
  }
  binding.SynchronizeInputs();
  session->Run(*run_options, binding);
  binding.SynchronizeOutputs();
  std::vector<Ort::Value> results = binding.GetOutputValues();
  out->clear();
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (explicit_copies) {
      auto info = results[i].GetTensorTypeAndShapeInfo();
      const auto shape = info.GetShape();
      Ort::Value staging =
          Ort::Value::CreateTensor(pin_alloc, shape.data(), shape.size(), info.GetElementType());
      TG_RETURN_IF_ERROR(
          CopyOne(ortenv, results[i], staging, "copying output '" + outputs[i] + "'"));
      auto t = ToTensor(staging, outputs[i]);
      if (!t.ok()) return t.status();
      d2h.fetch_add(t->byte_size(), std::memory_order_relaxed);
      out->push_back(std::move(t).value());
    } else {
      auto t = ToTensor(results[i], outputs[i]);
      if (!t.ok()) return t.status();
      if (use_device) d2h.fetch_add(t->byte_size(), std::memory_order_relaxed);
      out->push_back(std::move(t).value());
    }
  }
  return Status::Ok();
}

}  // namespace tg::runtime
