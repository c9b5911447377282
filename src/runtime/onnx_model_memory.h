// The memory one run of a generic ONNX model needs at given input shapes, predicted by ONNX shape
// inference (OnnxModel::InferShapes) before the run: the server's KServe admission
// (server/onnx_memory.h) counts it against the memory budget.
//
// What is counted. Every value of the main graph whose shape inference gives a size: the request's
// input tensors, the output tensors, and the intermediate activations. Initializers are not: the
// loaded model holds them (the budget's "held" bytes). The estimate is the liveness-aware peak:
// the nodes are walked in their (topological) order; a node's outputs are allocated before it
// runs, and an intermediate value is freed after its last consumer (a node with a subgraph
// consumes every outer value the subgraph names); the inputs stay alive the whole run (the request
// holds them) and the outputs once produced (the answer holds them). The largest sum alive at once
// is `peak_bytes`. `sum_bytes` (inputs + outputs + every intermediate at once) is the loose upper
// bound, kept for comparison. The liveness peak was chosen because the runtime's planner reuses
// the memory of dead values too, so the loose bound overstates long graphs many times over.
//
// What is not. Activations inside subgraphs (If, Loop, Scan bodies), values whose shape (or
// element size: strings) inference cannot give, kernels' scratch space, and the allocator's
// rounding. When a value's size is unknown, or the graph has a subgraph, or shape inference fails
// at these shapes, the estimate is a lower bound: `complete` is false and `incomplete_reason`
// says why (naming the first unknown value); no size is invented for what is unknown. When the
// nodes are not in topological order, `peak_bytes` falls back to `sum_bytes` (and says so).
//
// Hostile sizes. Sizes are computed with saturating multiplication and addition: a value whose
// declared or inferred dims overflow counts kSaturatedBytes (2^61), which no budget holds, so the
// request is refused; nothing is allocated by size.
//
// Thread safety: EstimateRunMemory only reads the model (const methods may run concurrently).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/onnx_model.h"

namespace tg::runtime {

// The size a saturated value (or sum) counts: far above any memory, far below int64 overflow.
inline constexpr std::int64_t kSaturatedBytes = std::int64_t{1} << 61;

// a + b and a x b, saturating at kSaturatedBytes (both operands >= 0).
std::int64_t SaturatingAdd(std::int64_t a, std::int64_t b);
std::int64_t SaturatingMul(std::int64_t a, std::int64_t b);
// Bytes of a tensor of `dims` with `elem_size`-byte elements (saturating); -1 when a dim is
// unknown (< 0) or the element size is (0).
std::int64_t TensorBytes(const std::vector<std::int64_t>& dims, int elem_size);

struct RunMemoryEstimate {
  std::int64_t input_bytes = 0;         // the graph inputs at the given shapes
  std::int64_t output_bytes = 0;        // the graph outputs
  std::int64_t intermediate_bytes = 0;  // every intermediate value, summed
  std::int64_t sum_bytes = 0;           // input + output + intermediate: the loose bound
  std::int64_t peak_bytes = 0;          // the liveness peak (file comment): the estimate
  bool complete = true;                 // false: a lower bound (incomplete_reason says why)
  int unknown_values = 0;               // values whose size shape inference cannot give
  std::string incomplete_reason;
};

// The estimate of one run of `model` with its graph inputs at `input_dims` (every dim known).
// Errors: those of OnnxModel::InferShapes (INVALID_ARG: an unknown input name, a rank mismatch,
// a node failing its schema or its shape function at these shapes).
[[nodiscard]] common::Result<RunMemoryEstimate> EstimateRunMemory(
    const OnnxModel& model, const std::map<std::string, std::vector<std::int64_t>>& input_dims);

// A copy of `model` that keeps what shape inference reads: the graph, the value infos and the
// initializers' types and dims, with the data of large initializers dropped (the server keeps one
// per generic model; it is about the size of the graph, not of the weights).
OnnxModel ShapeOnlyModel(const OnnxModel& model);

// The serialized size of `model` in bytes (what keeping it costs, about).
std::int64_t ModelByteSize(const OnnxModel& model);

}  // namespace tg::runtime
