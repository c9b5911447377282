#include "common/strings.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <vector>

#include "common/json_writer.h"

namespace tg::common {
namespace {

bool IsIn(std::string_view set, char c) { return set.find(c) != std::string_view::npos; }

}  // namespace

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

std::string_view TrimLeft(std::string_view s, std::string_view set) {
  std::size_t b = 0;
  while (b < s.size() && IsIn(set, s[b])) ++b;
  return s.substr(b);
}

std::string_view TrimRight(std::string_view s, std::string_view set) {
  std::size_t e = s.size();
  while (e > 0 && IsIn(set, s[e - 1])) --e;
  return s.substr(0, e);
}

std::string_view Trim(std::string_view s, std::string_view set) {
  return TrimRight(TrimLeft(s, set), set);
}

std::vector<std::string> Split(std::string_view s, char sep, SplitMode mode) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = std::min(s.find(sep, start), s.size());
    std::string_view piece = s.substr(start, end - start);
    if (mode == SplitMode::kTrimSkipEmpty) piece = Trim(piece);
    if (mode == SplitMode::kKeepEmpty || !piece.empty()) out.emplace_back(piece);
    if (end == s.size()) break;
    start = end + 1;
  }
  return out;
}

std::string Join(const std::vector<std::string>& pieces, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    if (i > 0) out += sep;
    out += pieces[i];
  }
  return out;
}

std::string_view Basename(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string_view Dirname(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
}

std::vector<std::string> SplitWords(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (true) {
    while (i < s.size() && IsIn(kAsciiSpace, s[i])) ++i;
    if (i == s.size()) break;
    const std::size_t start = i;
    while (i < s.size() && !IsIn(kAsciiSpace, s[i])) ++i;
    out.emplace_back(s.substr(start, i - start));
  }
  return out;
}

std::string HexLower(const void* data, std::size_t size) {
  static constexpr char kHex[] = "0123456789abcdef";
  const auto* p = static_cast<const unsigned char*>(data);
  std::string out;
  out.reserve(2 * size);
  for (std::size_t i = 0; i < size; ++i) {
    out.push_back(kHex[p[i] >> 4]);
    out.push_back(kHex[p[i] & 15]);
  }
  return out;
}

bool IsPinnedByDigest(std::string_view image) {
  constexpr std::string_view kMarker = "@sha256:";
  const std::size_t at = image.rfind(kMarker);
  if (at == std::string_view::npos || at == 0 || image.size() - at != kMarker.size() + 64) {
    return false;
  }
  return std::all_of(image.begin() + static_cast<std::ptrdiff_t>(at + kMarker.size()), image.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string XmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  // XML text must be well-formed UTF-8: stray bytes become U+FFFD, as in every JSON output.
  for (char ch : SanitizeUtf8(s)) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') continue;
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out.push_back(ch);
    }
  }
  return out;
}

namespace {
constexpr char kBase64Alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Every 12-bit value as its two Base64 characters (8 KiB, built once).
struct Base64Pairs {
  char pair[4096][2];
  Base64Pairs() {
    for (int i = 0; i < 4096; ++i) {
      pair[i][0] = kBase64Alphabet[i >> 6];
      pair[i][1] = kBase64Alphabet[i & 63];
    }
  }
};
}  // namespace

void AppendBase64(std::string_view bytes, std::string* out) {
  static const Base64Pairs kPairs;
  const std::size_t n = bytes.size();
  const std::size_t at = out->size();
  out->resize(at + 4 * ((n + 2) / 3));
  char* o = out->data() + at;
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t i = 0;
  for (; i + 3 <= n; i += 3, o += 4) {
    const std::uint32_t v = (std::uint32_t{s[i]} << 16) | (std::uint32_t{s[i + 1]} << 8) | s[i + 2];
    std::memcpy(o, kPairs.pair[v >> 12], 2);
    std::memcpy(o + 2, kPairs.pair[v & 4095], 2);
  }
  if (i < n) {  // one or two bytes left: two or three characters and padding
    const bool two = i + 1 < n;
    const std::uint32_t v = (std::uint32_t{s[i]} << 16) | (two ? std::uint32_t{s[i + 1]} << 8 : 0);
    o[0] = kBase64Alphabet[v >> 18];
    o[1] = kBase64Alphabet[(v >> 12) & 63];
    o[2] = two ? kBase64Alphabet[(v >> 6) & 63] : '=';
    o[3] = '=';
  }
}

std::string UtcNow(const char* strftime_format) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  const std::size_t n = std::strftime(buf, sizeof buf, strftime_format, &tm);
  return std::string(buf, n);
}

}  // namespace tg::common
