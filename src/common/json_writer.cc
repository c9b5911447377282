#include "common/json_writer.h"

#include <new>
#include <vector>

namespace tg::common {
namespace {

// Length of the well-formed UTF-8 sequence starting at s[i], or 0 when it is not one (the
// table of RFC 3629 section 4, which nlohmann's own decoder also follows).
std::size_t SequenceLength(std::string_view s, std::size_t i) noexcept {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  const std::size_t left = s.size() - i;
  const auto cont = [&](std::size_t k, unsigned lo, unsigned hi) {
    return b(i + k) >= lo && b(i + k) <= hi;
  };
  if (c >= 0xC2 && c <= 0xDF) return left >= 2 && cont(1, 0x80, 0xBF) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (left < 3) return 0;
    const unsigned lo = c == 0xE0 ? 0xA0 : 0x80;
    const unsigned hi = c == 0xED ? 0x9F : 0xBF;
    return cont(1, lo, hi) && cont(2, 0x80, 0xBF) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (left < 4) return 0;
    const unsigned lo = c == 0xF0 ? 0x90 : 0x80;
    const unsigned hi = c == 0xF4 ? 0x8F : 0xBF;
    return cont(1, lo, hi) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF) ? 4 : 0;
  }
  return 0;
}

// The notice member, as text in the same layout as the document it goes into; its closing
// brace is left off so the document's own members can follow.
std::string NoticeHead(std::uint64_t count, int indent) {
  Json n = Json::object();
  n[std::string(kInvalidUtf8Member)] = {
      {"strings_replaced", count},
      {"note", "bytes that are not valid UTF-8 were replaced by U+FFFD"}};
  const std::string text = n.dump(indent);
  return text.substr(0, text.size() - (indent >= 0 ? 2 : 1));  // without "\n}" or "}"
}

}  // namespace

bool IsValidUtf8(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = SequenceLength(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::uint64_t CountInvalidUtf8(const Json& j) noexcept {
  std::uint64_t count = 0;
  try {
    std::vector<const Json*> todo{&j};
    while (!todo.empty()) {
      const Json* v = todo.back();
      todo.pop_back();
      if (v->is_string()) {
        count += IsValidUtf8(v->get_ref<const std::string&>()) ? 0 : 1;
      } else if (v->is_object()) {
        for (auto it = v->begin(); it != v->end(); ++it) {
          count += IsValidUtf8(it.key()) ? 0 : 1;
          todo.push_back(&it.value());
        }
      } else if (v->is_array()) {
        for (const Json& e : *v) todo.push_back(&e);
      }
    }
  } catch (...) {
    // Out of memory for the walk: report at least one, so the caller takes the replacing path.
    return count + 1;
  }
  return count;
}

std::string WriteJson(const Json& j, int indent, JsonNotice notice) noexcept {
  try {
    const std::uint64_t invalid = CountInvalidUtf8(j);
    std::string text = j.dump(indent, ' ', false, Json::error_handler_t::replace);
    const bool add_notice = invalid > 0 && notice == JsonNotice::kInline && j.is_object() &&
                            !j.contains(kInvalidUtf8Member);
    if (!add_notice) return text;
    std::string out = NoticeHead(invalid, indent);
    if (!j.empty()) {
      out += ',';
      out.append(text, 1, std::string::npos);  // the document after its "{"
    } else {
      out += indent >= 0 ? "\n}" : "}";
    }
    return out;
  } catch (...) {
    // std::bad_alloc is the only exception left once invalid UTF-8 is replaced. Fifteen
    // characters: the short-string buffer holds them without allocating.
    return std::string("{\"error\":\"oom\"}");
  }
}

std::string SanitizeUtf8(std::string_view s) {
  if (IsValidUtf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = SequenceLength(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

}  // namespace tg::common
