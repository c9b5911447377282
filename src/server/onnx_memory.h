// The memory estimate of KServe runs on one generic ONNX model (server/ only): MemoryAdmission
// (memory_admission.h) holds one OnnxMemoryModel per generic model whose graph was kept, and
// admits each /v2/models/{name}/infer request by its estimate.
//
// The estimate is runtime::EstimateRunMemory (runtime/onnx_model_memory.h) on a shape-only copy
// of the model (the graph and the initializers' dims, without their data): the request's input
// tensors, its output tensors and the liveness peak of the activations that ONNX shape inference
// predicts at the request's own input shapes (symbolic dims resolved by them). When shape
// inference fails at those shapes (the run itself will likely fail), the estimate is the inputs'
// bytes alone, marked incomplete with the failure as its reason; an incomplete estimate is a lower
// bound, admitted by what it knows (nothing is invented for the rest).
//
// Estimates are cached per input shapes (at most kMaxCachedShapes, the least recently used
// dropped), so a repeated shape does not run shape inference again. The model also keeps the
// last and the largest estimate it admitted (/v1/capabilities, /metrics).
//
// Thread safety: every method may be called from any thread (one mutex; shape inference runs
// outside it, so two threads may compute the same new shape once each).
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/config.h"
#include "runtime/onnx_model.h"
#include "runtime/onnx_model_memory.h"

namespace tg::server {

inline constexpr std::size_t kMaxCachedShapes = 256;

// Input name -> the request's dims.
using InputShapes = std::map<std::string, std::vector<std::int64_t>>;

// "x[4,8] y[2]": the shapes as messages and the cache name them.
std::string ShapesText(const InputShapes& shapes);
// "128 B", "1.5 KiB", "96.0 MiB", "1.25 GiB"; "over 2 EiB (a size that overflows)" for
// runtime::kSaturatedBytes and above.
std::string BytesText(std::int64_t bytes);

class OnnxMemoryModel {
 public:
  // `shape_model`: runtime::ShapeOnlyModel of the served model.
  explicit OnnxMemoryModel(runtime::OnnxModel shape_model) : model_(std::move(shape_model)) {}

  // The estimate at `shapes` (see the file comment); `input_bytes` is what the request's inputs
  // hold, the estimate when shape inference fails.
  runtime::RunMemoryEstimate Estimate(const InputShapes& shapes, std::int64_t input_bytes);
  // Records the estimate of a run that was admitted (last and largest).
  void NoteAdmitted(const runtime::RunMemoryEstimate& e);
  std::int64_t last_bytes() const;
  std::int64_t max_bytes() const;
  // {"estimate": "onnx shape inference", "last_estimate_bytes", "max_estimate_bytes",
  //  "last_estimate_complete", "last_incomplete_reason", "cached_shapes"}.
  common::Json ToJson() const;

 private:
  const runtime::OnnxModel model_;
  mutable std::mutex mu_;
  // Most recently used first; the map points into the list.
  std::list<std::pair<std::string, runtime::RunMemoryEstimate>> lru_;
  std::unordered_map<std::string, decltype(lru_)::iterator> cache_;
  std::int64_t last_ = 0, max_ = 0;
  bool last_complete_ = true;
  std::string last_reason_;
};

}  // namespace tg::server
