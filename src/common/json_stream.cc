// The layout is nlohmann's dump(): with an indent, "{\n", members at one more level, each
// "key": value, joined by ",\n", then "\n" and the closing brace at the container's level; empty
// containers are "{}" and "[]". A value below the streamed path is dumped by nlohmann itself and
// its line breaks re-indented to its level (a dumped string never holds a raw line break).
#include "common/json_stream.h"

#include <cstdio>
#include <cstdlib>

namespace tg::common {
namespace {

struct Writer {
  const TextSink& sink;
  int indent;
  const JsonPath& path;
  std::size_t count;
  const JsonElement& element;
  bool wrote = false;

  void Put(std::string_view s) {
    if (s.empty()) return;
    wrote = true;
    sink(s);
  }
  std::string Pad(int level) const {
    return indent < 0 ? std::string() : std::string(static_cast<std::size_t>(level * indent), ' ');
  }
  // `v` as nlohmann dumps it at nesting level `level`.
  void Dump(const Json& v, int level) {
    std::string text = v.dump(indent, ' ', false, Json::error_handler_t::replace);
    if (indent < 0 || level == 0 || text.find('\n') == std::string::npos) return Put(text);
    const std::string pad = "\n" + Pad(level);
    std::string out;
    out.reserve(text.size() + text.size() / 8);
    for (char c : text) {
      if (c == '\n') {
        out += pad;
      } else {
        out += c;
      }
    }
    Put(out);
  }
  // Opens member or element number `i` of a container at `level`.
  void Separator(std::size_t i, int level) {
    Put(i == 0 ? "" : ",");
    if (indent >= 0) Put("\n" + Pad(level + 1));
  }
  void Key(const std::string& k) {
    Put(Json(k).dump(-1, ' ', false, Json::error_handler_t::replace));
    Put(indent < 0 ? ":" : ": ");
  }
  void Close(std::size_t n, int level, char bracket) {
    if (n > 0 && indent >= 0) Put("\n" + Pad(level));
    Put(std::string_view(&bracket, 1));
  }
  void Streamed(int level) {
    Put("[");
    for (std::size_t i = 0; i < count; ++i) {
      Separator(i, level);
      Dump(element(i), level + 1);
    }
    Close(count, level, ']');
  }
  // `v` at `level`, `depth` steps down `path`; `notice` (top level only) is a first member.
  void Value(const Json& v, std::size_t depth, int level, const Json* notice) {
    if (depth == path.size()) return Streamed(level);
    if (v.is_object()) {
      Put("{");
      std::size_t i = 0;
      if (notice != nullptr) {
        Separator(i++, level);
        Key(std::string(kInvalidUtf8Member));
        Dump(*notice, level + 1);
      }
      for (auto it = v.begin(); it != v.end(); ++it, ++i) {
        Separator(i, level);
        Key(it.key());
        if (it.key() == path[depth]) {
          Value(it.value(), depth + 1, level + 1, nullptr);
        } else {
          Dump(it.value(), level + 1);
        }
      }
      return Close(i, level, '}');
    }
    Put("[");
    std::size_t i = 0;
    for (const Json& e : v) {
      Separator(i, level);
      if (std::to_string(i) == path[depth]) {
        Value(e, depth + 1, level + 1, nullptr);
      } else {
        Dump(e, level + 1);
      }
      ++i;
    }
    Close(i, level, ']');
  }
};

// The value at `path` in `head`, or nullptr when the path does not lead to one.
const Json* At(const Json& head, const JsonPath& path) {
  const Json* v = &head;
  for (const std::string& step : path) {
    if (v->is_object()) {
      auto it = v->find(step);
      if (it == v->end()) return nullptr;
      v = &*it;
    } else if (v->is_array()) {
      char* end = nullptr;
      const unsigned long i = std::strtoul(step.c_str(), &end, 10);
      if (step.empty() || *end != '\0' || i >= v->size()) return nullptr;
      v = &(*v)[i];
    } else {
      return nullptr;
    }
  }
  return v;
}

// The notice's note, exactly as the one writer words it.
const std::string& NoticeNote() {
  static const std::string note = [] {
    const Json j = Json::parse(WriteJson(Json{{"x", std::string("\xff")}}));
    return j[std::string(kInvalidUtf8Member)]["note"].get<std::string>();
  }();
  return note;
}

}  // namespace

TextSink StringSink(std::string* out) {
  return [out](std::string_view s) {
    try {
      out->append(s);
    } catch (...) {
      // Out of memory: the text stops here, as the sink contract allows.
    }
  };
}

TextSink FileSink(std::FILE* f) {
  return [f](std::string_view s) { std::fwrite(s.data(), 1, s.size(), f); };
}

void WriteJsonStreamed(const TextSink& sink, const Json& head, const JsonPath& path,
                       std::size_t count, const JsonElement& element, int indent,
                       JsonNotice notice) noexcept {
  Writer w{sink, indent, path, count, element};
  try {
    const Json* slot = At(head, path);
    if (slot == nullptr) return w.Put(WriteJson(head, indent, notice));
    std::uint64_t invalid = CountInvalidUtf8(head) - CountInvalidUtf8(*slot);
    for (std::size_t i = 0; i < count; ++i) invalid += CountInvalidUtf8(element(i));
    const bool add_notice = invalid > 0 && notice == JsonNotice::kInline && head.is_object() &&
                            !head.contains(kInvalidUtf8Member) && !path.empty();
    Json note;
    if (add_notice) note = {{"strings_replaced", invalid}, {"note", NoticeNote()}};
    w.Value(head, 0, 0, add_notice ? &note : nullptr);
  } catch (...) {
    // Out of memory (the only exception left once invalid UTF-8 is replaced).
    if (!w.wrote) sink("{\"error\":\"oom\"}");
  }
}

}  // namespace tg::common
