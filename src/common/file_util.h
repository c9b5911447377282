// File helpers that turn every IO problem into a Status naming the file and what went wrong: the
// reader (ReadFileLimited) and the writer (WriteFileAtomic) of the configuration, model side
// files, reports and outputs the commands are given, and the checks made on such paths. Their
// rules:
//   reader: never blocks forever on a FIFO with no writer, refuses directories, devices and
//           sockets, reads at most max_bytes (+1 to detect overflow), reports read errors on
//           standard input ("-") instead of treating them as end of file. Pipes (`<(cmd)`) and
//           "-" keep working.
//   writer: writes only to a new path or over a regular file (a symbolic link to a regular file
//           replaces the file it names); refuses devices, FIFOs, sockets and directories; never
//           creates missing parent directories unless the caller asks.
// Stateless free functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace tg::common {

// Default cap for configuration files (matrix, policy, snapshot): large enough for anything real,
// small enough that a hostile 100 MB file is refused before it is parsed.
inline constexpr std::uint64_t kMaxConfigBytes = 16ull << 20;

// A pipe (`<(cmd)` or "-") that delivers no byte for this long is reported, not waited on forever.
inline constexpr int kPipeIdleTimeoutMs = 30'000;

// Reads a whole file. Errors: NOT_FOUND (missing), INVALID_ARG (a directory, a device, a socket, a
// named FIFO with no writer, unreadable, a read error, larger than max_bytes — the message gives
// the size found and the limit). `path` "-" reads standard input (closed, a directory or
// write-only standard input is an error, never an empty file).
Result<std::string> ReadFileLimited(const std::string& path, std::uint64_t max_bytes);

// Opens a file input for streaming (logs, which have no size cap) with ReadFileLimited's checks:
// "-" gives a duplicate of standard input after checking it is open, readable and not a
// directory. The descriptor is blocking; opening never waits for a FIFO's writer (a FIFO with no
// writer reads as end of file: *named_fifo, when given, tells the caller so it can report a read
// of nothing as "no writer"). The caller owns (closes) the descriptor.
Result<int> OpenInputFd(const std::string& path, bool* named_fifo = nullptr);

// Writes `data` to `path` atomically (temp file in the same folder + fsync + rename) so a crash
// never leaves half a file. `path` must be new or a regular file (its permission bits are kept);
// anything else is refused with INVALID_ARG naming the file and what it is. A missing parent
// folder is an error unless `create_parents` (then it is created, like mkdir -p).
Status WriteFileAtomic(const std::string& path, const std::string& data,
                       bool create_parents = false);

// The checks WriteFileAtomic makes before writing (target new or a regular file, parent folder
// present), without writing: lets a command refuse a bad output path before minutes of work.
Status CheckOutputPath(const std::string& path);

// 1-based line and column of byte offset `offset` in `text`.
struct TextPosition {
  int line = 1;
  int column = 1;
};
TextPosition PositionOfOffset(const std::string& text, std::size_t offset);  // past the end: end

// Lowercase hex sha256 of a file's contents / of a buffer (OpenSSL). The file must be a regular
// file (the same refusals as ReadFileLimited; it is streamed, not held in memory).
Result<std::string> Sha256File(const std::string& path);
std::string Sha256Hex(const void* data, std::size_t size);

// True when `path` names a regular file (symbolic links followed): what a library or model path
// must be. A directory, device or missing path is false. Never fails.
bool IsRegularFile(const std::string& path);

// The checks a command makes on an input before it starts any work (the startup chain, a
// benchmark), so a missing or unreadable input is a usage error (exit 2) on every machine.
// `dir` false: a regular file (symbolic links followed); true: a directory. Errors: NOT_FOUND
// (missing), INVALID_ARG (the wrong kind, or not readable by this process); the message names
// `what` ("--model"), the path and what was required. Never blocks (no open). Thread-safe.
Status CheckInputPath(const std::string& path, std::string_view what, bool dir = false);

// Owns one file descriptor (closed by the destructor). Move-only; not thread-safe.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  ~UniqueFd();
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }  // -1 when it holds none
  int Release() {                  // gives the descriptor up (the caller closes it); holds -1
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  // Closes now and returns close()'s result (a late write error on some file systems).
  int Close();

 private:
  int fd_;
};

// A private temporary directory (mode 0700, under $TMPDIR or /tmp) removed with everything in it
// when the owner goes out of scope. Create fails with UNAVAILABLE naming the template and errno.
// Move-only; not thread-safe (one owner).
class ScopedTempDir {
 public:
  static Result<ScopedTempDir> Create(const std::string& prefix);
  ScopedTempDir() = default;  // holds no directory: path() is ""
  ~ScopedTempDir();
  ScopedTempDir(ScopedTempDir&& other) noexcept : path_(std::move(other.path_)) {
    other.path_.clear();
  }
  ScopedTempDir& operator=(ScopedTempDir&& other) noexcept;
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;
  const std::string& path() const { return path_; }  // valid while this object owns it

 private:
  explicit ScopedTempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace tg::common
