// The op canary's built-in op set: one tiny ONNX model per op (or op variant) that Stable
// Diffusion 1.x/2.x/SDXL UNets, CLIP text encoders and VAEs use (every op type of the pipelines
// tools/gen_sd.py writes, checked by tests/sd_generator_test), generated in memory
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

// Op types the canary does not run, each with the reason that running it proves nothing.
struct CanaryExclusion {
  std::string op_type;
  std::string reason;
};
const std::vector<CanaryExclusion>& CanaryExcludedOps();

// The op types of `op_types` that are neither in the built-in set nor excluded (sorted, unique):
// what a model uses that the canary cannot vouch for.
std::vector<std::string> UncoveredOpTypes(const std::vector<std::string>& op_types);
// Lowercase hex SHA-256 over every case's name and model bytes: part of the canary cache key, so
// a changed op set never reuses an old verdict.
std::string CanaryOpSetHash(const std::vector<CanaryCase>& cases);

}  // namespace tg::runtime
