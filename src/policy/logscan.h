// logscan: finds the fallback and degradation language of ONNX Runtime, TensorRT, cuDNN and CUDA
// in logs (a provider that failed to load, nodes placed on the CPU, Memcpy nodes, engine cache
// rebuilds, driver problems), so a replica that silently runs slow is caught from its own log.
//
// The patterns live in one table (LogPatterns()): id, category, a literal prefilter (a
// case-insensitive substring that must occur before the regex runs — that keeps scanning large
// logs cheap), an ECMAScript regex, a plain explanation, and a positive and a negative sample line
// that the tests run. Scanning is streaming: a line is matched and forgotten, so memory is bounded
// by the longest line, and lines longer than kMaxLineBytes are matched on their first
// kMaxLineBytes bytes.
//
// Failure behaviour: ScanFile returns NOT_FOUND / INVALID_ARG for unreadable input; matching never
// fails. Thread safety: the table and LogScanner are immutable after construction; one scanner can
// be shared by threads.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
// GCC 12 reports a false -Wmaybe-uninitialized inside libstdc++'s regex compiler at -O1 and above.
// (Clang, used by the fuzz build, has no such group and would warn about the pragma itself.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <regex>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.h"
#include "common/status.h"

namespace tg::policy {

struct LogPattern {
  const char* id;           // stable id, e.g. "ort.provider_load_failed"
  const char* category;     // e.g. "provider-load-failure", "cpu-fallback"
  const char* needle;       // lowercase literal that every match contains (prefilter)
  const char* regex;        // ECMAScript, matched case-insensitively
  const char* explanation;  // what it means and what to do, in plain words
  const char* positive;     // a log line that must match (tests)
  const char* negative;     // a similar line that must not match (tests)
};

std::span<const LogPattern> LogPatterns();

struct LogMatch {
  std::int64_t line = 0;  // 1-based line number
  const LogPattern* pattern = nullptr;
  std::string text;  // the line (trimmed of the newline; truncated to 400 bytes)
};

inline constexpr std::size_t kMaxLineBytes = 64 * 1024;

class LogScanner {
 public:
  LogScanner();
  // Patterns matching `line` (at most one match per pattern).
  std::vector<const LogPattern*> Match(std::string_view line) const;

 private:
  std::vector<std::regex> regexes_;  // parallel to LogPatterns()
};

struct LogScanSummary {
  std::int64_t lines = 0;
  std::int64_t matches = 0;
  std::vector<std::pair<std::string, std::int64_t>> per_category;  // in table order, non-zero
};

// The exit code (README) a finding of `category` calls for: 3 no usable GPU path (provider load
// failure, CPU fallback, node assignment, no device, missing library), 4 version drift (driver,
// library, TensorRT or cuDNN mismatch), 5 performance (Memcpy nodes, TensorRT engine rebuilt or
// not loadable). 1 for a category without a code (a table bug; a test covers every category).
int LogCategoryExitCode(std::string_view category);
// The exit code of a whole scan: 0 without findings, else the most severe category's code
// (3 before 4 before 5).
int LogScanExitCode(const LogScanSummary& summary);

// Scans `path` ("-" = stdin) line by line, calling `on_match` for every match in order.
common::Result<LogScanSummary> ScanLogFile(const std::string& path,
                                           const std::function<void(const LogMatch&)>& on_match);
// Same over an open stream (not closed).
LogScanSummary ScanLogStream(std::FILE* in, const std::function<void(const LogMatch&)>& on_match);

}  // namespace tg::policy
