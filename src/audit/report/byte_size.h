// Parsing sizes written the way users write them ("2GiB", "500 MB", "1.5G", "1048576").
#pragma once

#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace tg::audit {

// The largest size a text may name: 2^64 - 1 bytes (16 EiB), what a std::uint64_t holds.
inline constexpr std::uint64_t kMaxByteSize = UINT64_MAX;

// Parses a size: a non-negative decimal number, optionally with a binary (K/M/G/T, KiB/MiB/GiB/
// TiB) or decimal (KB/MB/GB/TB) suffix, case-insensitive, spaces ignored; rounded to whole bytes.
// INVALID_ARG naming the text for anything else, and for a value of 2^64 bytes or more (checked
// on the value before it is converted to an integer), naming the value and kMaxByteSize. Pure;
// thread-safe.
common::Result<std::uint64_t> ParseByteSizeOrError(std::string_view text);

}  // namespace tg::audit
