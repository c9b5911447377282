// A whole ONNX model in memory through Debian's libonnx (1.12, the official ONNX C++ library):
// the protobuf ModelProto, the checker, and shape inference at given input dimensions. The
// attention rewrite edits models through it, and the memory model asks it the shape of every
// value at a request's size. No libonnx type appears here (onnx_model_internal.h hands the
// ModelProto to runtime/'s own code).
//
// What it offers:
//   - OnnxModel::Load(path): the file read with ReadFileLimited's refusals (FIFO, device,
//     directory) and a size cap (2 GiB - 1, protobuf's own limit); the bytes walked first by the
//     hand-written reader (onnx_graph.h), so a malformed file is INVALID_ARG naming the file, the
//     field and the byte offset; then parsed into a ModelProto. Never a crash; memory about the
//     file's size. External data stays where it is: initializers keep their location entries,
//     which are checked (CheckExternalData) but not read. folder() is where they are resolved.
//   - Check(): onnx::checker over the model; the first failure as INVALID_ARG naming the file.
//   - InferShapes(dims): ONNX shape inference (with data propagation through Shape, Gather,
//     Concat ...) with the named graph inputs fixed to the given dims; every graph input,
//     initializer, intermediate value and output with its element type, dims (-1 unknown) and
//     byte size when all dims are known. com.microsoft.MultiHeadAttention (what the attention
//     rewrite writes) is registered with its shape function, so rewritten models infer through.
//     Each node is verified against its schema before inference (counts, attributes), so a
//     hostile node is an INVALID_ARG naming it, not a read past its inputs.
//   - OpCounts(), Serialize().
// Thread safety: an OnnxModel is not shared between threads while it is edited; const methods
// may run concurrently. Move-only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace tg::runtime {

struct OnnxLoadOptions {
  std::uint64_t max_bytes = (std::uint64_t{1} << 31) - 1;  // protobuf refuses 2 GiB and above
  bool check_external_data = true;  // CheckExternalData (files exist, ranges inside them)
};

// One value of the graph after shape inference.
struct InferredValue {
  enum class Kind { kInput, kInitializer, kIntermediate, kOutput };
  std::string name;
  Kind kind = Kind::kIntermediate;
  int elem_type = 0;               // onnx TensorProto::DataType (1 float, 10 float16, 7 int64)
  std::vector<std::int64_t> dims;  // -1 where unknown; empty for a scalar
  bool rank_known = false;         // false: nothing is known about its shape
  std::int64_t bytes = -1;         // element count x element size, -1 unless every dim is known
  std::string producer;            // op type of the producing node ("" for inputs/initializers)
};

// Size in bytes of one element of an onnx TensorProto::DataType; 0 when unknown (strings).
int OnnxElementSize(int elem_type);

class OnnxModel {
 public:
  OnnxModel();
  ~OnnxModel();
  OnnxModel(OnnxModel&&) noexcept;
  OnnxModel& operator=(OnnxModel&&) noexcept;
  OnnxModel(const OnnxModel&) = delete;
  OnnxModel& operator=(const OnnxModel&) = delete;

  // Errors: NOT_FOUND (missing), INVALID_ARG (not a regular file, over max_bytes, malformed:
  // file, field and byte offset; external data out of place), UNAVAILABLE (read failure).
  static common::Result<OnnxModel> Load(const std::string& path,
                                        const OnnxLoadOptions& options = {});
  // From bytes: `source` names it in messages, `folder` is where external data is resolved.
  static common::Result<OnnxModel> Parse(const std::string& bytes, const std::string& source,
                                         const std::string& folder);
  // A deep copy (the rewrite edits a copy and keeps the original).
  OnnxModel Clone() const;

  const std::string& source() const;
  const std::string& folder() const;
  std::int64_t ir_version() const;
  std::int64_t OpsetVersion(const std::string& domain) const;  // 0 when not imported
  bool has_external_data() const;               // some initializer's data lives in another file
  std::map<std::string, int> OpCounts() const;  // "Softmax" / "com.microsoft.MultiHeadAttention"
  std::vector<std::string> InputNames() const;  // graph inputs that are not initializers

  common::Status Check() const;
  // `input_dims`: graph input name -> dims (-1 keeps that dim as the model declares it). An input
  // not named keeps its declared shape. INVALID_ARG for an unknown name or a rank mismatch, or a
  // node that fails its schema or its shape function (naming the node).
  common::Result<std::vector<InferredValue>> InferShapes(
      const std::map<std::string, std::vector<std::int64_t>>& input_dims) const;
  // The serialized ModelProto (external data references as they are). INVALID_ARG over 2 GiB.
  common::Result<std::string> Serialize() const;

  struct Impl;

 private:
  friend struct OnnxModelAccess;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tg::runtime
