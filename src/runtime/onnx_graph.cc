#include "runtime/onnx_graph.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

common::Status ParseNode(const std::uint8_t* data, std::size_t len, const std::uint8_t* base,
                         const std::string& source, OnnxNode* node) {
  Reader r(data, data + len, base);
  while (!r.done()) {
    std::uint32_t field, wire;
    const std::uint8_t* payload = nullptr;
    std::size_t n = 0;
    std::uint64_t scalar = 0;
    const std::size_t at = r.offset();
    if (!r.Next(&field, &wire, &payload, &n, &scalar)) return Malformed(source, at, "node");
    if (wire != 2) continue;
    std::string s(reinterpret_cast<const char*>(payload), n);
    switch (field) {
      case kNodeInput:
        node->inputs.push_back(std::move(s));
        break;
      case kNodeOutput:
        node->outputs.push_back(std::move(s));
        break;
      case kNodeName:
        node->name = std::move(s);
        break;
      case kNodeOpType:
        node->op_type = std::move(s);
        break;
      case kNodeDomain:
        node->domain = std::move(s);
        break;
      default:
        break;  // attributes, doc strings: not needed
    }
  }
  return common::Status::Ok();
}

}  // namespace

common::Result<OnnxGraphSummary> ParseOnnxGraph(const std::uint8_t* data, std::size_t size,
                                                const std::string& source) {
  OnnxGraphSummary out;
  Reader model(data, data + size, data);
  bool saw_graph = false;
  while (!model.done()) {
    std::uint32_t field, wire;
    const std::uint8_t* payload = nullptr;
    std::size_t n = 0;
    std::uint64_t scalar = 0;
    const std::size_t at = model.offset();
    if (!model.Next(&field, &wire, &payload, &n, &scalar)) return Malformed(source, at, "model");
    if (field == kModelIrVersion && wire == 0) {
      out.ir_version = static_cast<std::int64_t>(scalar);
    } else if (field == kModelOpsetImport && wire == 2) {
      Reader op(payload, payload + n, data);
      std::string domain;
      std::int64_t version = 0;
      while (!op.done()) {
        std::uint32_t f, w;
        const std::uint8_t* pl = nullptr;
        std::size_t ln = 0;
        std::uint64_t sc = 0;
        const std::size_t at2 = op.offset();
        if (!op.Next(&f, &w, &pl, &ln, &sc)) return Malformed(source, at2, "opset import");
        if (f == kOpsetDomain && w == 2) domain.assign(reinterpret_cast<const char*>(pl), ln);
        if (f == kOpsetVersion && w == 0) version = static_cast<std::int64_t>(sc);
      }
      out.opsets.emplace_back(domain, version);
    } else if (field == kModelGraph && wire == 2) {
      saw_graph = true;
      Reader graph(payload, payload + n, data);
      while (!graph.done()) {
        std::uint32_t f, w;
        const std::uint8_t* pl = nullptr;
        std::size_t ln = 0;
        std::uint64_t sc = 0;
        const std::size_t at2 = graph.offset();
        if (!graph.Next(&f, &w, &pl, &ln, &sc)) return Malformed(source, at2, "graph");
        if (f == kGraphNode && w == 2) {
          OnnxNode node;
          auto st = ParseNode(pl, ln, data, source, &node);
          if (!st.ok()) return st;
          out.nodes.push_back(std::move(node));
        }
      }
    }
  }
  if (!saw_graph) {
    return common::Status::InvalidArg(source + ": not a valid ONNX model: no graph found");
  }
  return out;
}

common::Result<OnnxGraphSummary> ReadOnnxGraph(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    std::string msg = path + ": " + std::strerror(err);
    if (err == ENOENT) return common::Status::NotFound("model file " + msg);
    return common::Status::InvalidArg("model file " + msg);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return common::Status::InvalidArg("model file " + path + " is not a regular file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    return common::Status::InvalidArg(path + ": not a valid ONNX model: empty file");
  }
  void* map = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    return common::Status::Internal("cannot map model file " + path + ": " + std::strerror(errno));
  }
  auto r = ParseOnnxGraph(static_cast<const std::uint8_t*>(map),
                          static_cast<std::size_t>(st.st_size), path);
  ::munmap(map, static_cast<std::size_t>(st.st_size));
  return r;
}

}  // namespace tg::runtime
