#include "runtime/onnx_graph.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>

#include "common/file_handles.h"
#include "common/file_util.h"

namespace tg::runtime {
namespace {

// Field numbers from onnx.proto (stable since IR version 3).
constexpr std::uint32_t kModelIrVersion = 1;
constexpr std::uint32_t kModelGraph = 7;
constexpr std::uint32_t kModelOpsetImport = 8;
constexpr std::uint32_t kGraphNode = 1;
constexpr std::uint32_t kGraphInitializer = 5;
constexpr std::uint32_t kGraphInput = 11;
constexpr std::uint32_t kValueInfoName = 1;
constexpr std::uint32_t kValueInfoType = 2;
constexpr std::uint32_t kTypeTensor = 1;
constexpr std::uint32_t kTensorTypeShape = 2;
constexpr std::uint32_t kShapeDim = 1;
constexpr std::uint32_t kDimValue = 1;
constexpr std::uint32_t kDimParam = 2;
constexpr std::uint32_t kTensorName = 8;
constexpr std::uint32_t kTensorExternalData = 13;
constexpr std::uint32_t kTensorDataLocation = 14;
constexpr std::uint32_t kTensorLocationExternal = 1;
constexpr std::uint32_t kEntryKey = 1;
constexpr std::uint32_t kEntryValue = 2;
constexpr std::uint32_t kNodeInput = 1;
constexpr std::uint32_t kNodeOutput = 2;
constexpr std::uint32_t kNodeName = 3;
constexpr std::uint32_t kNodeOpType = 4;
constexpr std::uint32_t kNodeDomain = 7;
constexpr std::uint32_t kOpsetDomain = 1;
constexpr std::uint32_t kOpsetVersion = 2;

// A bounds-checked cursor over one protobuf message.
class Reader {
 public:
  Reader(const std::uint8_t* begin, const std::uint8_t* end, const std::uint8_t* base)
      : p_(begin), end_(end), base_(base) {}

  bool done() const { return p_ >= end_; }
  std::size_t offset() const { return static_cast<std::size_t>(p_ - base_); }

  bool Varint(std::uint64_t* out) {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) return false;
      const std::uint8_t b = *p_++;
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        *out = v;
        return true;
      }
    }
    return false;
  }

  // Reads the next field header; for length-delimited fields also the payload bounds.
  bool Next(std::uint32_t* field, std::uint32_t* wire, const std::uint8_t** payload,
            std::size_t* len, std::uint64_t* scalar) {
    std::uint64_t key;
    if (!Varint(&key)) return false;
    // Field number 0 (and numbers past 2^29-1) do not exist in protobuf: a zero byte where a tag
    // belongs ends the walk at once instead of "skipping" gigabytes of zeros as empty varints.
    if ((key >> 3) == 0 || (key >> 3) > 0x1fffffff) return false;
    *field = static_cast<std::uint32_t>(key >> 3);
    *wire = static_cast<std::uint32_t>(key & 7);
    switch (*wire) {
      case 0:
        return Varint(scalar);
      case 1:
        if (end_ - p_ < 8) return false;
        p_ += 8;
        return true;
      case 5:
        if (end_ - p_ < 4) return false;
        p_ += 4;
        return true;
      case 2: {
        std::uint64_t n;
        if (!Varint(&n) || n > static_cast<std::uint64_t>(end_ - p_)) return false;
        *payload = p_;
        *len = static_cast<std::size_t>(n);
        p_ += n;
        return true;
      }
      default:  // groups (3/4) are not used by ONNX
        return false;
    }
  }

 private:
  const std::uint8_t* p_;
  const std::uint8_t* end_;
  const std::uint8_t* base_;
};

common::Status Malformed(const std::string& source, std::size_t offset, const char* what) {
  return common::Status::InvalidArg(source + ": not a valid ONNX model: malformed " + what +
                                    " at byte " + std::to_string(offset));
}

// One decoded field of a message: its number, wire type and (for wire type 2) payload, or (for
// wire type 0) the varint value.
struct Field {
  std::uint32_t number = 0;
  std::uint32_t wire = 0;
  const std::uint8_t* payload = nullptr;
  std::size_t len = 0;
  std::uint64_t scalar = 0;

  std::string String() const { return std::string(reinterpret_cast<const char*>(payload), len); }
};

// Walks every field of the message in [data, data + len) and calls visit(field) -> Status. The
// first malformed field stops the walk with an error naming `what` and its byte offset in the
// file (offsets are relative to `base`, the start of the file), so every nesting level reports
// errors the same way.
template <typename Visit>
common::Status ForEachField(const std::uint8_t* data, std::size_t len, const std::uint8_t* base,
                            const std::string& source, const char* what, Visit visit) {
  Reader r(data, data + len, base);
  while (!r.done()) {
    Field f;
    const std::size_t at = r.offset();
    if (!r.Next(&f.number, &f.wire, &f.payload, &f.len, &f.scalar)) {
      return Malformed(source, at, what);
    }
    TG_RETURN_IF_ERROR(visit(f));
  }
  return common::Status::Ok();
}

common::Status ParseNode(const Field& msg, const std::uint8_t* base, const std::string& source,
                         OnnxNode* node) {
  return ForEachField(msg.payload, msg.len, base, source, "node", [&](const Field& f) {
    if (f.wire != 2) return common::Status::Ok();
    switch (f.number) {
      case kNodeInput:
        node->inputs.push_back(f.String());
        break;
      case kNodeOutput:
        node->outputs.push_back(f.String());
        break;
      case kNodeName:
        node->name = f.String();
        break;
      case kNodeOpType:
        node->op_type = f.String();
        break;
      case kNodeDomain:
        node->domain = f.String();
        break;
      default:
        break;  // attributes, doc strings: not needed
    }
    return common::Status::Ok();
  });
}

common::Status ParseOpset(const Field& msg, const std::uint8_t* base, const std::string& source,
                          OnnxGraphSummary* out) {
  std::string domain;
  std::int64_t version = 0;
  TG_RETURN_IF_ERROR(
      ForEachField(msg.payload, msg.len, base, source, "opset import", [&](const Field& f) {
        if (f.number == kOpsetDomain && f.wire == 2) domain = f.String();
        if (f.number == kOpsetVersion && f.wire == 0) version = static_cast<std::int64_t>(f.scalar);
        return common::Status::Ok();
      }));
  out->opsets.emplace_back(std::move(domain), version);
  return common::Status::Ok();
}

// An initializer: only where its data lives, when that is an external file (raw data is
// skipped by its length, never copied).
common::Status ParseInitializer(const Field& msg, const std::uint8_t* base,
                                const std::string& source, OnnxGraphSummary* out) {
  OnnxExternalData ext;
  bool external = false;
  TG_RETURN_IF_ERROR(
      ForEachField(msg.payload, msg.len, base, source, "initializer", [&](const Field& f) {
        if (f.number == kTensorName && f.wire == 2) ext.tensor = f.String();
        if (f.number == kTensorDataLocation && f.wire == 0) {
          external = f.scalar == kTensorLocationExternal;
        }
        if (f.number != kTensorExternalData || f.wire != 2) return common::Status::Ok();
        std::string key, value;
        TG_RETURN_IF_ERROR(ForEachField(f.payload, f.len, base, source, "external data entry",
                                        [&](const Field& e) {
                                          if (e.wire != 2) return common::Status::Ok();
                                          if (e.number == kEntryKey) key = e.String();
                                          if (e.number == kEntryValue) value = e.String();
                                          return common::Status::Ok();
                                        }));
        ext.entries.emplace_back(std::move(key), std::move(value));
        return common::Status::Ok();
      }));
  if (external) out->external_data.push_back(std::move(ext));
  return common::Status::Ok();
}

// A graph input (ValueInfoProto): its name and, for a tensor type, its declared dimensions
// (type 2 -> tensor_type 1 -> shape 2 -> dim 1 -> dim_value 1 | dim_param 2).
common::Status ParseInput(const Field& msg, const std::uint8_t* base, const std::string& source,
                          OnnxGraphSummary* out) {
  OnnxInput in;
  // Calls `visit` on the payload of every field `number` of the message `f`.
  auto into = [&](const Field& f, std::uint32_t number, const char* what, auto visit) {
    return ForEachField(f.payload, f.len, base, source, what, [&](const Field& g) {
      return g.number == number && g.wire == 2 ? visit(g) : common::Status::Ok();
    });
  };
  auto dim = [&](const Field& d) {
    OnnxDim od;
    TG_RETURN_IF_ERROR(
        ForEachField(d.payload, d.len, base, source, "dimension", [&](const Field& v) {
          if (v.number == kDimValue && v.wire == 0) od.value = static_cast<std::int64_t>(v.scalar);
          if (v.number == kDimParam && v.wire == 2) od.param = v.String();
          return common::Status::Ok();
        }));
    in.dims.push_back(std::move(od));
    return common::Status::Ok();
  };
  auto shape = [&](const Field& f) { return into(f, kShapeDim, "shape", dim); };
  auto tensor = [&](const Field& f) { return into(f, kTensorTypeShape, "tensor type", shape); };
  TG_RETURN_IF_ERROR(ForEachField(msg.payload, msg.len, base, source, "input", [&](const Field& f) {
    if (f.number == kValueInfoName && f.wire == 2) in.name = f.String();
    if (f.number == kValueInfoType && f.wire == 2) return into(f, kTypeTensor, "type", tensor);
    return common::Status::Ok();
  }));
  out->inputs.push_back(std::move(in));
  return common::Status::Ok();
}

common::Status ParseGraph(const Field& msg, const std::uint8_t* base, const std::string& source,
                          OnnxGraphSummary* out) {
  return ForEachField(msg.payload, msg.len, base, source, "graph", [&](const Field& f) {
    if (f.number == kGraphInitializer && f.wire == 2) {
      return ParseInitializer(f, base, source, out);
    }
    if (f.number == kGraphInput && f.wire == 2) return ParseInput(f, base, source, out);
    if (f.number != kGraphNode || f.wire != 2) return common::Status::Ok();
    OnnxNode node;
    TG_RETURN_IF_ERROR(ParseNode(f, base, source, &node));
    out->nodes.push_back(std::move(node));
    return common::Status::Ok();
  });
}

}  // namespace

common::Result<OnnxGraphSummary> ParseOnnxGraph(const std::uint8_t* data, std::size_t size,
                                                const std::string& source) {
  OnnxGraphSummary out;
  bool saw_graph = false;
  TG_RETURN_IF_ERROR(ForEachField(data, size, data, source, "model", [&](const Field& f) {
    if (f.number == kModelIrVersion && f.wire == 0) {
      out.ir_version = static_cast<std::int64_t>(f.scalar);
    } else if (f.number == kModelOpsetImport && f.wire == 2) {
      return ParseOpset(f, data, source, &out);
    } else if (f.number == kModelGraph && f.wire == 2) {
      saw_graph = true;
      return ParseGraph(f, data, source, &out);
    }
    return common::Status::Ok();
  }));
  if (!saw_graph) {
    return common::Status::InvalidArg(source + ": not a valid ONNX model: no graph found");
  }
  return out;
}

common::Result<OnnxGraphSummary> ReadOnnxGraph(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is then refused as not regular).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    std::string msg = path + ": " + std::strerror(err);
    if (err == ENOENT) return common::Status::NotFound("model file " + msg);
    return common::Status::InvalidArg("model file " + msg);
  }
  common::UniqueFd owner(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return common::Status::InvalidArg("model file " + path + " is not a regular file");
  }
  if (st.st_size == 0) {
    return common::Status::InvalidArg(path + ": not a valid ONNX model: empty file");
  }
  auto map =
      common::MappedFile::Map(fd, static_cast<std::size_t>(st.st_size), "model file " + path);
  owner.Close();  // the mapping stays valid without the descriptor
  if (!map.ok()) return map.status();
  return ParseOnnxGraph(map->data(), map->size(), path);
}

namespace {

// A decimal offset or length as ONNX writes them: digits only, at most 2^63-1 (ORT reads both
// into signed 64-bit integers).
bool ParseExternalNumber(const std::string& text, std::uint64_t* v) {
  if (text.empty() || text.size() > 19 || text.find_first_not_of("0123456789") != text.npos) {
    return false;
  }
  *v = std::stoull(text);
  return *v <= static_cast<std::uint64_t>(INT64_MAX);
}

}  // namespace

common::Status CheckDeclaredInputDims(const OnnxGraphSummary& graph,
                                      const std::string& model_path) {
  for (const OnnxInput& in : graph.inputs) {
    for (std::size_t d = 0; d < in.dims.size(); ++d) {
      const auto& v = in.dims[d].value;
      if (!v || *v >= 0) continue;
      return common::Status::InvalidArg(model_path + ": input '" + in.name + "' dimension " +
                                        std::to_string(d) + ": found " + std::to_string(*v) +
                                        "; required a size >= 0 or a symbolic name (dim_param)");
    }
  }
  return common::Status::Ok();
}

common::Status CheckExternalData(const OnnxGraphSummary& graph, const std::string& model_path) {
  namespace fs = std::filesystem;
  const fs::path folder = fs::path(model_path).parent_path();
  for (const OnnxExternalData& e : graph.external_data) {
    const std::string what = model_path + ": initializer '" + e.tensor + "': external data ";
    std::string location;
    std::uint64_t offset = 0, length = 0;
    bool has_length = false;
    for (const auto& [key, value] : e.entries) {
      if (key == "location") location = value;
      if (key != "offset" && key != "length") continue;
      std::uint64_t v = 0;
      if (!ParseExternalNumber(value, &v)) {
        return common::Status::InvalidArg(what + key + " '" + value.substr(0, 40) +
                                          "' is not an integer 0..9223372036854775807");
      }
      (key == "offset" ? offset : length) = v;
      has_length = has_length || key == "length";
    }
    const fs::path rel(location);
    if (location.empty() || rel.is_absolute() ||
        std::any_of(rel.begin(), rel.end(), [](const fs::path& c) { return c == ".."; })) {
      return common::Status::InvalidArg(what + "location '" + location.substr(0, 200) +
                                        "' must be a relative path inside the model's folder");
    }
    std::error_code ec;
    const auto size = fs::file_size(folder / rel, ec);
    if (ec) {
      return common::Status::InvalidArg(what + "file " + location.substr(0, 200) +
                                        " cannot be read: " + ec.message());
    }
    // offset + length, with the sum checked: both may be up to 2^63-1.
    if (offset > size || (has_length && length > size - offset)) {
      return common::Status::InvalidArg(
          what + "offset " + std::to_string(offset) + (has_length ? " + length " : "") +
          (has_length ? std::to_string(length) : "") + " lies outside " + location.substr(0, 200) +
          " (" + std::to_string(size) + " bytes)");
    }
  }
  return common::Status::Ok();
}

}  // namespace tg::runtime
