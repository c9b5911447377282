// runtime/'s own access to an OnnxModel's ModelProto (the attention rewrite edits it). Only
// runtime/ includes this header; other modules see onnx_model.h, without libonnx types.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "runtime/onnx_model.h"

namespace tg::runtime {

struct OnnxModel::Impl {
  ::onnx::ModelProto proto;
  std::string source;
  std::string folder;
};

struct OnnxModelAccess {
  static ::onnx::ModelProto& Proto(OnnxModel& m) { return m.impl_->proto; }
  static const ::onnx::ModelProto& Proto(const OnnxModel& m) { return m.impl_->proto; }
  static OnnxModel::Impl& ImplOf(OnnxModel& m) { return *m.impl_; }
};

// Registers com.microsoft.MultiHeadAttention (opset 1, with its shape function) with libonnx's
// schema registry, once per process; thread-safe.
void RegisterContribSchemas();

// A copy of `src` for shape inference: everything but the data of large initializers (their
// type and dims are what inference reads; small ones, up to 4096 elements, keep their values for
// data propagation, such as Reshape's target shape).
::onnx::ModelProto ShapeOnlyCopy(const ::onnx::ModelProto& src);

}  // namespace tg::runtime
