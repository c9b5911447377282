// The op canary's built-in op set: one tiny ONNX model per op (or op variant) that Stable
// Diffusion 1.x/2.x/SDXL UNets, CLIP text encoders and VAEs use, generated in memory
// (runtime/onnx_builder), with deterministic float inputs. Each model has exactly one output,
// `y` (float32), so results compare element by element with the CPU provider's.
//
// Why these: a GPU provider paired with a core that lacks some of its host entries crashes on some
// ops and runs others (Slice, Einsum, Tile and Resize with sizes crashed on an H200 while Concat,
// Split and Pad ran), so only running each op proves the pair; a model's own op list can be added
// with OpTypesOf (runtime/onnx_graph) by the caller.
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "runtime/tensor.h"

namespace tg::runtime {

struct CanaryCase {
  std::string name;     // unique: "Resize(sizes)", "Cast(fp16)", "Slice"
  std::string op_type;  // the op under test
  std::string model;    // serialized ModelProto
  std::vector<NamedTensor> inputs;
};

// The built-in set, in a fixed order.
std::vector<CanaryCase> BuiltinCanaryCases();
// Lowercase hex SHA-256 over every case's name and model bytes: part of the canary cache key, so
// a changed op set never reuses an old verdict.
std::string CanaryOpSetHash(const std::vector<CanaryCase>& cases);

}  // namespace tg::runtime
