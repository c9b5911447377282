#include "audit/report/byte_size.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

#include "common/strings.h"

namespace tg::audit {

common::Result<std::uint64_t> ParseByteSizeOrError(std::string_view text) {
  const std::string shown =
      "'" + std::string(text.substr(0, 80)) + (text.size() > 80 ? "...'" : "'");
  const auto not_a_size = [&] {
    return common::Status::InvalidArg(shown + " is not a size such as 2GiB, 500MB or 1048576");
  };
  std::string s;
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) s.push_back(c);
  }
  if (s.empty()) return not_a_size();
  std::size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) return not_a_size();
  std::string num = s.substr(0, i);
  const std::string unit = common::Lower(s.substr(i));
  char* end = nullptr;
  double v = std::strtod(num.c_str(), &end);
  if (end == nullptr || *end != '\0' || !std::isfinite(v) || v < 0) return not_a_size();
  static constexpr std::pair<std::string_view, double> kUnitsBySuffix[] = {
      {"", 1},         {"b", 1},       {"k", 0x1p10},   {"ki", 0x1p10},  {"kib", 0x1p10},
      {"m", 0x1p20},   {"mi", 0x1p20}, {"mib", 0x1p20}, {"g", 0x1p30},   {"gi", 0x1p30},
      {"gib", 0x1p30}, {"t", 0x1p40},  {"ti", 0x1p40},  {"tib", 0x1p40}, {"kb", 1e3},
      {"mb", 1e6},     {"gb", 1e9},    {"tb", 1e12}};
  double mult = 0;
  for (const auto& [suffix, m] : kUnitsBySuffix) {
    if (unit == suffix) mult = m;
  }
  if (mult == 0) return not_a_size();
  // 2^64 is exactly representable; below it a double has no fraction left to round up to it, so
  // the conversion after this check is defined.
  const double r = std::round(v * mult);
  if (!(r < 0x1p64)) {
    return common::Status::InvalidArg(
        fmt::format("{} is {:.4g} bytes, more than the largest size, {} bytes (16 EiB)", shown, r,
                    kMaxByteSize));
  }
  return static_cast<std::uint64_t>(r);
}

}  // namespace tg::audit
