// Small string helpers shared by the modules.
//
// All functions are pure, allocate only their result, never throw on any input and are safe to
// call from any thread. ASCII only: bytes >= 0x80 pass through unchanged (UTF-8 stays valid).
#pragma once

#include <string>
#include <string_view>

namespace tg::common {

// ASCII lower-case copy.
std::string Lower(std::string_view s);
// ASCII upper-case copy.
std::string Upper(std::string_view s);
// `s` without leading and trailing ASCII whitespace (space, \t, \n, \r, \v, \f).
std::string_view Trim(std::string_view s);
// Prefix and suffix tests: use C++20 std::string_view::starts_with / ends_with.

// An image reference pinned by digest: "name[:tag]@sha256:<64 lowercase hex>". Checked by hand:
// std::regex recursion is unbounded on long input.
bool IsPinnedByDigest(std::string_view image);

// Edit distance (insert, delete, substitute: cost 1 each) between two short strings; used to
// suggest the nearest command or flag. O(|a|*|b|) time, O(|b|) memory.
std::size_t EditDistance(std::string_view a, std::string_view b);

// XML/HTML text and attribute values: escapes & < > " ', drops the controls XML 1.0 cannot carry
// (below 0x20 but tab, newline, carriage return) and turns invalid UTF-8 into U+FFFD.
std::string XmlEscape(std::string_view s);

// Appends the Base64 encoding of `bytes` (RFC 4648 standard alphabet, padded, no line breaks) to
// *out. Two output characters per table lookup: ~2x OpenSSL's EVP_EncodeBlock, which mattered for
// the ~0.3 MB PNG of each generated image.
void AppendBase64(std::string_view bytes, std::string* out);

// The current UTC time in a strftime format, e.g. "%Y-%m-%dT%H:%M:%SZ" (at most 63 characters
// of output; "" when the format produces nothing).
std::string UtcNow(const char* strftime_format);

}  // namespace tg::common
