// Writing a JSON document whose one large array is produced element by element, so a report of
// many findings is never held as one DOM or one string. The text is byte for byte what the one
// JSON writer (json_writer.h) makes of the whole document with the array filled in, including its
// contract: it never throws, bytes that are not valid UTF-8 are replaced by U+FFFD, and the
// "invalid_utf8" notice member comes first when any string held such bytes (the elements are
// produced twice for that: once to count, once to write, so nothing is kept between them).
//
// Stateless free functions; thread-safe as far as `sink` and `element` are.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.h"
#include "common/json_writer.h"

namespace tg::common {

// Where streamed text goes (stdout, a report file, a string). Must not throw.
using TextSink = std::function<void(std::string_view)>;

// A sink appending to *out.
TextSink StringSink(std::string* out);
// A sink writing to `f` (stdout). Write errors are left to the stream's error flag.
TextSink FileSink(std::FILE* f);

// One step of the path from the document to the streamed array: an object member's key, or (for
// an array) the element's index written in decimal ("0").
using JsonPath = std::vector<std::string>;

// Produces element `index` of the streamed array.
using JsonElement = std::function<Json(std::size_t index)>;

// Writes WriteJson(doc, indent, notice) to `sink`, where doc is `head` with the value at `path`
// replaced by the array [element(0), ..., element(count - 1)]. `head` must hold a value (any) at
// `path`; members are written in `head`'s order, as nlohmann dumps them. On a bad path nothing
// is streamed and the value in `head` is written as it is. If memory runs out before anything was
// written, the text is {"error":"oom"}; later, the text stops there.
void WriteJsonStreamed(const TextSink& sink, const Json& head, const JsonPath& path,
                       std::size_t count, const JsonElement& element, int indent = -1,
                       JsonNotice notice = JsonNotice::kInline) noexcept;

}  // namespace tg::common
