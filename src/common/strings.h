// Small string helpers shared by the modules.
//
// All functions are pure, allocate only their result, never throw on any input and are safe to
// call from any thread. ASCII only: bytes >= 0x80 pass through unchanged (UTF-8 stays valid).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tg::common {

// ASCII lower-case copy.
std::string Lower(std::string_view s);
// ASCII upper-case copy.
std::string Upper(std::string_view s);
// The ASCII whitespace set (space, \t, \n, \r, \v, \f): the default of the Trim family and the
// separators of SplitWords. Locale-independent, unlike std::isspace.
inline constexpr std::string_view kAsciiSpace = " \t\n\r\v\f";
// `s` without the leading (TrimLeft), trailing (TrimRight) or both runs of bytes in `set`. The
// result views `s`.
std::string_view TrimLeft(std::string_view s, std::string_view set = kAsciiSpace);
std::string_view TrimRight(std::string_view s, std::string_view set = kAsciiSpace);
std::string_view Trim(std::string_view s, std::string_view set = kAsciiSpace);

// What Split does with the pieces between separators.
enum class SplitMode {
  kKeepEmpty,      // every piece: "" gives {""}, "a,,b," gives {"a", "", "b", ""}
  kSkipEmpty,      // empty pieces dropped: "", "," give {}; "a,,b," gives {"a", "b"}
  kTrimSkipEmpty,  // each piece Trim()med, then empty ones dropped: " a , ,b" gives {"a", "b"}
};
// The pieces of `s` between each `sep`, in order, under `mode`.
std::vector<std::string> Split(std::string_view s, char sep, SplitMode mode);
// The words of `s`: the runs of bytes outside kAsciiSpace, in order (none for "" or all blanks).
std::vector<std::string> SplitWords(std::string_view s);
// The pieces with `sep` between each two ({} gives "", {"a", "", "b"} with "," gives "a,,b"):
// Split(Join(v, ","), ',', kKeepEmpty) is v again when no piece holds a ','.
std::string Join(const std::vector<std::string>& pieces, std::string_view sep);
// Prefix and suffix tests: use C++20 std::string_view::starts_with / ends_with.

// The last component of a '/'-separated path: what follows its last '/' (all of `path` when it
// has none, "" after a trailing '/'). The result views `path`.
std::string_view Basename(std::string_view path);
// What precedes the last '/' of `path` ("" when it has none, and for "/name"). The result views
// `path`.
std::string_view Dirname(std::string_view path);

// An image reference pinned by digest: "name[:tag]@sha256:<64 lowercase hex>". Checked by hand:
// std::regex recursion is unbounded on long input.
bool IsPinnedByDigest(std::string_view image);

// Edit distance (insert, delete, substitute: cost 1 each) between two short strings; used to
// suggest the nearest command or flag. O(|a|*|b|) time, O(|b|) memory.
std::size_t EditDistance(std::string_view a, std::string_view b);

// XML/HTML text and attribute values: escapes & < > " ', drops the controls XML 1.0 cannot carry
// (below 0x20 but tab, newline, carriage return) and turns invalid UTF-8 into U+FFFD.
std::string XmlEscape(std::string_view s);

// Lower-case hexadecimal of `size` bytes at `data` (two characters a byte, no separator).
std::string HexLower(const void* data, std::size_t size);

// Appends the Base64 encoding of `bytes` (RFC 4648 standard alphabet, padded, no line breaks) to
// *out. Two output characters per table lookup: ~2x OpenSSL's EVP_EncodeBlock, which mattered for
// the ~0.3 MB PNG of each generated image.
void AppendBase64(std::string_view bytes, std::string* out);

// The current UTC time in a strftime format, e.g. "%Y-%m-%dT%H:%M:%SZ" (at most 63 characters
// of output; "" when the format produces nothing).
std::string UtcNow(const char* strftime_format);

}  // namespace tg::common
