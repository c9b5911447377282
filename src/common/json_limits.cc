#include "common/json_limits.h"

#include <algorithm>
#include <exception>
#include <set>
#include <string>

#include "common/file_util.h"
#include "common/json_offset_internal.h"

namespace tg::common {
namespace {

// nlohmann's message names the token it read ("last read: '...'"): a piece of the file. Keep the
// reason only, and say in plain words what the common non-JSON spellings are.
std::string JsonReason(const std::string& what, const std::string& text, std::size_t offset) {
  std::string detail = what;
  if (auto colon = detail.find("]: "); colon != std::string::npos)
    detail = detail.substr(colon + 3);
  if (auto at = detail.find(": ");
      detail.rfind("syntax error", 0) == 0 && at != std::string::npos) {
    detail = detail.substr(at + 2);
  }
  if (auto last = detail.find("; last read"); last != std::string::npos) detail.resize(last);
  char c = offset < text.size() ? text[offset] : '\0';
  if (offset >= text.size()) return "unexpected end of input (truncated?): " + detail;
  if (c == 'N' || c == 'I' || c == '-') {
    if (text.compare(offset, 3, "NaN") == 0 || text.compare(offset, 8, "Infinity") == 0 ||
        text.compare(offset, 9, "-Infinity") == 0) {
      return "NaN and Infinity are not JSON numbers";
    }
  }
  if (c == '/') return "comments are not allowed in JSON";
  if (detail.find("UTF-8") != std::string::npos || static_cast<unsigned char>(c) >= 0x80) {
    return "invalid UTF-8 in a string";
  }
  return detail;
}

// Builds the document from the parser's events, checking nesting, duplicate keys and the
// element count of each container as it goes (so a cap refuses a huge list before it is built).
// Not nlohmann's callback parser: that one scans the whole enclosing array or object after every
// object it closes, so an array of n objects took n^2 steps (0.04 s at 10k '{}', 2.6 s at 100k).
// Here each event costs O(log k) at most (the key lookup in its object). Without `build` nothing
// is stored but the keys of the open objects (for the duplicate check).
class DomBuilder {
 public:
  DomBuilder(const std::size_t* offset, const JsonLimits& limits)
      : offset_(offset), limits_(limits) {}

  bool null() { return Put(nullptr); }
  bool boolean(bool v) { return Put(v); }
  bool number_integer(Json::number_integer_t v) { return Put(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return Put(v); }
  bool number_float(Json::number_float_t v, const Json::string_t&) { return Put(v); }
  bool string(Json::string_t& v) { return Put(std::move(v)); }
  bool binary(Json::binary_t& v) { return Put(Json::binary(std::move(v))); }
  bool start_object(std::size_t) { return Open(Json::object()); }
  bool start_array(std::size_t) { return Open(Json::array()); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool key(Json::string_t& k) {
    const bool dup = limits_.build ? stack_.back()->contains(k) : !keys_.back().insert(k).second;
    if (dup) {
      return Fail("duplicate key '" + k.substr(0, 80) + (k.size() > 80 ? "..." : "") +
                  "' (each key may appear once in an object)");
    }
    key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    syntax_ = e.id >= 100 && e.id < 200;  // parse_error ids; 4xx is out_of_range (1e9999)
    error_ = e.what();
    error_offset_ = position;
    return false;
  }

  Json& root() { return root_; }
  bool failed() const { return !error_.empty(); }
  bool syntax() const { return syntax_; }
  bool guard() const { return guard_; }
  const std::string& error() const { return error_; }
  std::size_t error_offset() const { return error_offset_; }

 private:
  // Counts one more element of the open container against the cap.
  bool Count() {
    if (counts_.empty()) return true;
    if (limits_.max_container_elements != 0 && ++counts_.back() > limits_.max_container_elements) {
      return Fail("an array or object of more than " +
                  std::to_string(limits_.max_container_elements) + " elements (" + limits_.what +
                  ")");
    }
    return true;
  }
  // Stores `v` where the parser is: the root, the next array element or the member `key_`.
  template <typename V>
  Json* Place(V&& v) {
    if (!limits_.build) return nullptr;
    if (stack_.empty()) {
      root_ = Json(std::forward<V>(v));
      return &root_;
    }
    Json* top = stack_.back();
    if (top->is_array()) {
      top->emplace_back(std::forward<V>(v));
      return &top->back();
    }
    Json& slot = (*top)[key_];
    slot = Json(std::forward<V>(v));
    return &slot;
  }
  template <typename V>
  bool Put(V&& v) {
    if (!Count()) return false;
    Place(std::forward<V>(v));
    return true;
  }
  bool Open(Json container) {
    if (stack_.size() >= static_cast<std::size_t>(kMaxJsonDepth)) {
      return Fail("nesting deeper than " + std::to_string(kMaxJsonDepth) +
                  " levels (limit on depth)");
    }
    if (!Count()) return false;
    if (!limits_.build && container.is_object()) keys_.emplace_back();
    objects_.push_back(container.is_object());
    stack_.push_back(Place(std::move(container)));
    counts_.push_back(0);
    return true;
  }
  bool Close() {
    if (!limits_.build && objects_.back()) keys_.pop_back();
    objects_.pop_back();
    stack_.pop_back();
    counts_.pop_back();
    return true;
  }
  bool Fail(std::string message) {
    guard_ = true;
    error_ = std::move(message);
    error_offset_ = *offset_;
    return false;
  }

  const std::size_t* offset_;
  JsonLimits limits_;
  Json root_;
  std::vector<Json*> stack_;
  std::vector<std::size_t> counts_;
  std::vector<bool> objects_;
  std::vector<std::set<std::string>> keys_;
  std::string key_;
  std::string error_;
  std::size_t error_offset_ = 0;
  bool syntax_ = false;
  bool guard_ = false;
};

}  // namespace

Result<Json> ParseJson(const std::string& text, const std::string& source,
                       const JsonLimits& limits) {
  std::size_t offset = 0;
  auto where = [&](std::size_t off) {
    TextPosition pos = PositionOfOffset(text, off);
    return source + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column);
  };
  CountingIterator first{text.data(), text.data(), &offset};
  CountingIterator last{text.data() + text.size(), text.data(), nullptr};
  DomBuilder dom(&offset, limits);
  try {
    Json::sax_parse(first, last, &dom);
  } catch (const std::exception& e) {
    // sax_parse reports through DomBuilder::parse_error; only memory exhaustion is left.
    return Status::InvalidArg(source + ": the JSON document needs more memory than is free (" +
                              e.what() + ")");
  }
  if (!dom.failed()) return std::move(dom.root());
  if (dom.guard())
    return Status::InvalidArg(where(dom.error_offset()) + ": invalid JSON: " + dom.error());
  if (dom.syntax()) {
    const std::size_t at = dom.error_offset() > 0 ? dom.error_offset() - 1 : 0;
    return Status::InvalidArg(where(at) + ": invalid JSON: " + JsonReason(dom.error(), text, at));
  }
  // Not a syntax error but still bad input, e.g. a number too large for a double (found by the
  // snapshot fuzzer: "1111e1111...").
  std::string what = dom.error();
  if (auto colon = what.find("] "); colon != std::string::npos) what = what.substr(colon + 2);
  if (auto quote = what.find(" '"); quote != std::string::npos) what.resize(quote);
  return Status::InvalidArg(where(offset) + ": invalid JSON: " + what);
}

Result<Json> LoadJsonFile(const std::string& path, std::uint64_t max_bytes,
                          const JsonLimits& limits) {
  TG_ASSIGN_OR_RETURN(std::string text, ReadFileLimited(path, max_bytes));
  return ParseJson(text, path, limits);
}

}  // namespace tg::common
