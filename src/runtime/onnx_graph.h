// Minimal ONNX model reader (runtime's, and `run`'s input check): the node list of the main graph,
// read straight from the protobuf wire format of a memory-mapped file, so multi-GB models with
// embedded weights are scanned without copying their initializers and without depending on
// libprotobuf.
//
// Only what the static checks need is decoded: per node its name, op type, domain, inputs and
// outputs; the main graph's inputs with their declared dimensions; plus the opset imports.
// Malformed input is INVALID_ARG naming the file and the byte offset, never a crash (every length
// is bounds-checked). Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/session.h"

namespace tg::runtime {

struct OnnxNode {
  std::string name;
  std::string op_type;
  std::string domain;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};

// An initializer whose data lives in another file: its external_data entries as written
// (location, offset, length, checksum), unchecked.
struct OnnxExternalData {
  std::string tensor;
  std::vector<std::pair<std::string, std::string>> entries;
};

// A main-graph input as the file declares it: each dimension a value (any int64 the file holds,
// unchecked) or a symbolic name (dim_param, value unset), or neither.
struct OnnxDim {
  std::optional<std::int64_t> value;
  std::string param;
};
struct OnnxInput {
  std::string name;
  std::vector<OnnxDim> dims;  // empty when no shape is declared
};

struct OnnxGraphSummary {
  std::vector<OnnxNode> nodes;
  std::vector<OnnxInput> inputs;                             // main-graph inputs, in order
  std::vector<OnnxExternalData> external_data;               // main-graph initializers only
  std::vector<std::pair<std::string, std::int64_t>> opsets;  // (domain, version)
  std::int64_t ir_version = 0;
};

// Parses `path` (the .onnx file; external data files are not needed).
common::Result<OnnxGraphSummary> ReadOnnxGraph(const std::string& path);
// Parses an in-memory model (`source` names it in messages).
common::Result<OnnxGraphSummary> ParseOnnxGraph(const std::uint8_t* data, std::size_t size,
                                                const std::string& source);

// Each external initializer of `graph` (read from `model_path`) must name a relative file inside
// the model's folder, with a decimal offset and length 0..2^63-1 whose sum lies within that file.
// Else INVALID_ARG naming the model, the initializer, the field and the value found.
common::Status CheckExternalData(const OnnxGraphSummary& graph, const std::string& model_path);

// Every declared dimension of every main-graph input is a size >= 0 or symbolic; else
// INVALID_ARG naming the model, the input, the dimension, what was found and what is required
// (ONNX Runtime takes a negative size as if it were symbolic).
common::Status CheckDeclaredInputDims(const OnnxGraphSummary& graph, const std::string& model_path);

// Static attention check over a parsed graph (see CheckAttention in session.h).
AttentionReport AnalyzeAttention(const OnnxGraphSummary& graph);

}  // namespace tg::runtime
