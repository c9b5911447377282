// Framing checks of the binary tensor extension. Sizes are compared before anything is sliced,
// and sums are checked against what remains rather than added up, so no declared size, however
// large or negative, can make a view reach outside the body.
#include "server/kserve_binary.h"
#include "common/json_writer.h"

#include <cstring>

namespace tg::server {

using common::Json;
using common::Result;
using common::Status;

namespace {

constexpr std::size_t kMaxHeaderDigits = 19;  // fits int64; anything longer is bogus

std::string Quote(std::string_view s) {
  std::string q;
  q.reserve(66);
  q.push_back('\'');
  q.append(s.substr(0, 64));
  q.push_back('\'');
  return q;
}

std::string InputName(const Json& in, std::size_t index) {
  if (in.is_object() && in.contains("name") && in["name"].is_string()) {
    return Quote(in["name"].get<std::string>());
  }
  std::string r = "#";
  r += std::to_string(index);
  return r;
}

}  // namespace

Result<InferBodyParts> SplitInferBody(std::string_view body, std::string_view header_length) {
  if (header_length.empty()) return InferBodyParts{body, {}};
  if (header_length.size() > kMaxHeaderDigits ||
      header_length.find_first_not_of("0123456789") != std::string_view::npos) {
    return Status::InvalidArg(
        "header Inference-Header-Content-Length must be a decimal byte "
        "count, found " +
        Quote(header_length));
  }
  std::uint64_t n = 0;
  for (char c : header_length) n = n * 10 + static_cast<std::uint64_t>(c - '0');
  if (n > body.size()) {
    return Status::InvalidArg("header Inference-Header-Content-Length is " + std::to_string(n) +
                              " but the body has only " + std::to_string(body.size()) + " bytes");
  }
  return InferBodyParts{body.substr(0, n), body.substr(n)};
}

std::optional<std::size_t> KserveElementSize(std::string_view t) {
  struct Entry {
    const char* name;
    std::size_t size;
  };
  static constexpr Entry kSizes[] = {{"BOOL", 1},   {"UINT8", 1}, {"UINT16", 2}, {"UINT32", 4},
                                     {"UINT64", 8}, {"INT8", 1},  {"INT16", 2},  {"INT32", 4},
                                     {"INT64", 8},  {"FP16", 2},  {"BF16", 2},   {"FP32", 4},
                                     {"FP64", 8},   {"BYTES", 0}};
  for (const auto& e : kSizes) {
    if (t == e.name) return e.size;
  }
  return std::nullopt;
}

Result<std::vector<std::optional<std::string_view>>> AssignBinaryInputs(const Json& inputs,
                                                                        std::string_view binary) {
  std::vector<std::optional<std::string_view>> out;
  if (!inputs.is_array()) return out;
  std::size_t used = 0;
  bool any = false;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Json& in = inputs[i];
    out.emplace_back();
    if (!in.is_object() || !in.contains("parameters")) continue;
    const Json& params = in["parameters"];
    if (!params.is_object()) {
      return Status::InvalidArg("input " + InputName(in, i) + ": 'parameters' must be an object");
    }
    if (!params.contains("binary_data_size")) continue;
    const Json& size = params["binary_data_size"];
    if (!size.is_number_integer() ||
        (size.is_number_integer() && !size.is_number_unsigned() && size.get<std::int64_t>() < 0)) {
      return Status::InvalidArg(
          "input " + InputName(in, i) +
          ": parameters.binary_data_size must be an integer >= 0, found " +
          common::WriteJson(size, -1, common::JsonNotice::kNone).substr(0, 32));
    }
    if (in.contains("data")) {
      return Status::InvalidArg("input " + InputName(in, i) +
                                " has both 'data' and parameters.binary_data_size; send one");
    }
    const std::uint64_t s = size.get<std::uint64_t>();
    if (s > binary.size() - used) {
      return Status::InvalidArg("input " + InputName(in, i) + ": binary_data_size " +
                                std::to_string(s) + " runs past the binary section (" +
                                std::to_string(binary.size() - used) + " bytes left of " +
                                std::to_string(binary.size()) + ")");
    }
    out.back() = binary.substr(used, s);
    used += s;
    any = true;
  }
  if (!any && !binary.empty()) {
    return Status::InvalidArg(std::to_string(binary.size()) +
                              " bytes follow the JSON header (Inference-Header-Content-Length) "
                              "but no input declares parameters.binary_data_size");
  }
  if (used != binary.size()) {
    return Status::InvalidArg("the inputs' binary_data_size add up to " + std::to_string(used) +
                              " bytes but the binary section after the JSON header has " +
                              std::to_string(binary.size()));
  }
  return out;
}

Status CheckBinaryTensor(std::string_view input, std::string_view datatype,
                         std::int64_t element_count, std::string_view bytes) {
  const auto es = KserveElementSize(datatype);
  if (!es)
    return Status::InvalidArg("input " + Quote(input) + ": unknown datatype " + Quote(datatype));
  if (element_count < 0) return Status::InvalidArg("input " + Quote(input) + ": bad shape");
  const auto count = static_cast<std::uint64_t>(element_count);
  if (*es > 0) {
    // count is at most 2^24-bounded dims multiplied out; compare by division to avoid overflow.
    if (bytes.size() % *es != 0 || bytes.size() / *es != count) {
      return Status::InvalidArg("input " + Quote(input) + ": binary_data_size is " +
                                std::to_string(bytes.size()) + " bytes; its shape and datatype " +
                                std::string(datatype) + " require " + std::to_string(count) +
                                " x " + std::to_string(*es) + " bytes");
    }
    if (datatype == "BOOL") {
      for (std::size_t i = 0; i < bytes.size(); ++i) {
        if (bytes[i] != 0 && bytes[i] != 1) {
          return Status::InvalidArg(
              "input " + Quote(input) + ": BOOL element " + std::to_string(i) + " is byte " +
              std::to_string(static_cast<unsigned char>(bytes[i])) + "; 0 or 1 is required");
        }
      }
    }
    return Status::Ok();
  }
  // BYTES: count elements of [uint32 little-endian length][length bytes], nothing left over.
  std::size_t off = 0;
  for (std::uint64_t k = 0; k < count; ++k) {
    if (bytes.size() - off < 4) {
      return Status::InvalidArg("input " + Quote(input) + ": BYTES element " + std::to_string(k) +
                                " of " + std::to_string(count) +
                                " has no 4-byte length prefix (the binary data ends at byte " +
                                std::to_string(bytes.size()) + ")");
    }
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data() + off);
    const std::uint64_t len = static_cast<std::uint64_t>(p[0]) | (std::uint64_t{p[1]} << 8) |
                              (std::uint64_t{p[2]} << 16) | (std::uint64_t{p[3]} << 24);
    off += 4;
    if (len > bytes.size() - off) {
      return Status::InvalidArg("input " + Quote(input) + ": BYTES element " + std::to_string(k) +
                                " declares " + std::to_string(len) + " bytes but only " +
                                std::to_string(bytes.size() - off) + " remain");
    }
    off += len;
  }
  if (off != bytes.size()) {
    return Status::InvalidArg("input " + Quote(input) + ": " + std::to_string(bytes.size() - off) +
                              " bytes left after its " + std::to_string(count) +
                              " BYTES elements; binary_data_size must match them exactly");
  }
  return Status::Ok();
}

}  // namespace tg::server
