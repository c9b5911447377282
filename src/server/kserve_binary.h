// The KServe v2 / Triton binary tensor data extension: framing of an infer request body whose
// JSON header is followed by raw tensor bytes, and the strict checks on that framing.
//
// Request: header `Inference-Header-Content-Length: N` says the first N body bytes are the JSON
// header; the rest is the binary section. Each input with `parameters.binary_data_size: S` takes
// the next S bytes of that section, in the order the inputs are listed; the sizes must add up to
// exactly the section's length. Fixed-size types are little-endian, row major, no padding
// (BOOL: one byte, 0 or 1); a BYTES element is a 4-byte little-endian length and then that many
// bytes.
//
// Every function here is pure (no state, thread-safe), reads only inside the views it is given,
// and answers bad framing with INVALID_ARG naming the input, what was found and what was required
// (the server turns it into 400).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.h"
#include "common/status.h"

namespace tg::server {

struct InferBodyParts {
  std::string_view json;    // the JSON header (the whole body without the extension)
  std::string_view binary;  // bytes after it ("" without the extension)
};

// Splits `body` by the Inference-Header-Content-Length value (`header_length`, "" when the header
// is absent). The value must be a decimal integer no larger than the body.
[[nodiscard]] common::Result<InferBodyParts> SplitInferBody(std::string_view body,
                                                            std::string_view header_length);

// Bytes per element of a KServe datatype name ("FP32" -> 4); 0 for BYTES (variable length);
// nullopt for an unknown name.
std::optional<std::size_t> KserveElementSize(std::string_view datatype);

// Assigns the binary section to the request's `inputs` array: one entry per input, the input's
// bytes when it declares binary_data_size, else nullopt. INVALID_ARG when a binary_data_size is
// not a non-negative integer, when an input has both binary_data_size and `data`, when the sizes
// run past the section or do not use all of it, or when there is a binary section but no input
// declares binary data. The views point into `binary`.
[[nodiscard]] common::Result<std::vector<std::optional<std::string_view>>> AssignBinaryInputs(
    const common::Json& inputs, std::string_view binary);

// Checks one input's binary bytes against its datatype and element count: exactly
// count x element size for fixed-size types (and BOOL bytes 0/1), or exactly `count` well-formed
// length-prefixed BYTES elements.
[[nodiscard]] common::Status CheckBinaryTensor(std::string_view input, std::string_view datatype,
                                               std::int64_t element_count, std::string_view bytes);

}  // namespace tg::server
