// The one JSON writer: every document the program prints, writes to a file, sends over HTTP or
// hashes is turned into text here, and this never throws.
//
// nlohmann::json stores strings as bytes and refuses, by throwing, to print one that is not valid
// UTF-8. Input reaches outputs unchanged in many places (a Dockerfile's FROM, a log line, a file
// name), so a stray byte must never end a command. Here such bytes are replaced by U+FFFD and the
// result says so: when the document is an object, a member "invalid_utf8" is added at its start,
// {"strings_replaced": N, "note": "..."} (JsonNotice::kInline), unless the caller asks for the
// text alone (JsonNotice::kNone: log lines, hashes, request bodies with a fixed schema).
//
// Stateless free functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/config.h"

namespace tg::common {

enum class JsonNotice { kInline, kNone };

// The member name added by JsonNotice::kInline.
inline constexpr std::string_view kInvalidUtf8Member = "invalid_utf8";

// True when `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool IsValidUtf8(std::string_view s) noexcept;

// How many strings (object keys included) in `j` are not valid UTF-8. Iterative: any depth.
std::uint64_t CountInvalidUtf8(const Json& j) noexcept;

// `j` as text: compact when `indent` < 0, else indented by `indent` spaces per level. Invalid
// UTF-8 is replaced by U+FFFD (see the file comment for the notice). NaN and infinities print as
// null (JSON has no spelling for them). If memory runs out, returns the text {"error":"oom"}.
std::string WriteJson(const Json& j, int indent = -1,
                      JsonNotice notice = JsonNotice::kInline) noexcept;

// `s` with every byte sequence that is not valid UTF-8 replaced by U+FFFD: for text outputs
// (XML, Markdown, HTML) that must stay valid documents. Returns `s` unchanged when valid.
std::string SanitizeUtf8(std::string_view s);

}  // namespace tg::common
