// File helpers that turn every IO problem into a Status naming the file and what went wrong.
// Stateless free functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace tg::common {

// Default cap for configuration files (matrix, policy, snapshot): large enough for anything real,
// small enough that a hostile 100 MB file is refused before it is parsed.
inline constexpr std::uint64_t kMaxConfigBytes = 16ull << 20;

// Reads a whole file. Errors: NOT_FOUND (missing), INVALID_ARG (a directory, unreadable, larger
// than max_bytes — the message gives the size found and the limit). `path` "-" reads standard
// input.
Result<std::string> ReadFileLimited(const std::string& path, std::uint64_t max_bytes);

// Writes `data` to `path` atomically (temp file + rename) so a crash never leaves half a file.
Status WriteFileAtomic(const std::string& path, const std::string& data);

// 1-based line and column of byte offset `offset` in `text`.
struct TextPosition {
  int line = 1;
  int column = 1;
};
TextPosition PositionOfOffset(const std::string& text, std::size_t offset);

// Lowercase hex sha256 of a file's contents / of a buffer (OpenSSL).
Result<std::string> Sha256File(const std::string& path);
std::string Sha256Hex(const void* data, std::size_t size);

// True when `path` names a regular file (symbolic links followed): what a library or model path
// must be. A directory, device or missing path is false. Never fails.
bool IsRegularFile(const std::string& path);

}  // namespace tg::common
