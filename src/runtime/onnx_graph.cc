#include "runtime/onnx_graph.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/file_util.h"

namespace tg::runtime {
namespace {

// Field numbers from onnx.proto (stable since IR version 3).
constexpr std::uint32_t kModelIrVersion = 1;
constexpr std::uint32_t kModelGraph = 7;
constexpr std::uint32_t kModelOpsetImport = 8;
constexpr std::uint32_t kGraphNode = 1;
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

common::Status ParseGraph(const Field& msg, const std::uint8_t* base, const std::string& source,
                          OnnxGraphSummary* out) {
  return ForEachField(msg.payload, msg.len, base, source, "graph", [&](const Field& f) {
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
  void* map = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  owner.Close();  // the mapping stays valid without the descriptor
  if (map == MAP_FAILED) {
    return common::Status::Internal("cannot map model file " + path + ": " + std::strerror(errno));
  }
  auto r = ParseOnnxGraph(static_cast<const std::uint8_t*>(map),
                          static_cast<std::size_t>(st.st_size), path);
  ::munmap(map, static_cast<std::size_t>(st.st_size));
  return r;
}

}  // namespace tg::runtime
