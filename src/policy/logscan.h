// logscan: finds the fallback and degradation language of ONNX Runtime, TensorRT, cuDNN and CUDA
// in logs (a provider that failed to load, nodes placed on the CPU, Memcpy nodes, engine cache
// rebuilds, driver problems), so a replica that silently runs slow is caught from its own log.
//
// The patterns live in one table (LogPatterns()): id, category, a key phrase (what the pattern is
// about, lower case), a regex in RE2 syntax (matched case-insensitively), a plain explanation, and
// a positive and a negative sample line that the tests run. All patterns, built-in and user, are
// compiled into one RE2::Set: a line is scanned once by a DFA whatever the number of patterns, in
// time linear in its length (no backtracking, no recursion). A literal prefilter comes first
// (logscan_prefilter.h): literals that every match of a pattern contains are read off the
// regexes and searched in one pass over each read chunk, so only lines holding one reach the
// set; the findings are exactly those of matching every line. Scanning is streaming: a line is
// matched and forgotten, so memory is bounded by the longest line, and lines longer than
// kMaxLineBytes are matched on their first kMaxLineBytes bytes. A key phrase wrapped onto the next
// line (at a space, or inside a word) is found too: a space in a pattern also matches a line
// break, and at each line boundary the previous line's tail joined with the next line's head is
// tested; such a match is reported at the line where the phrase starts.
//
// Failure behaviour: ScanLogFile returns NOT_FOUND / INVALID_ARG for unreadable input; matching
// never fails. Thread safety: the table and LogScanner are immutable after construction; one
// scanner can be shared by threads.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.h"
#include "common/outcome.h"
#include "common/status.h"

namespace tg::policy {

struct LogPattern {
  const char* id;           // stable id, e.g. "ort.provider_load_failed"
  const char* category;     // e.g. "provider-load-failure", "cpu-fallback"
  const char* needle;       // lowercase literal that every match contains (prefilter)
  const char* regex;        // RE2 syntax, matched case-insensitively
  const char* explanation;  // what it means and what to do, in plain words
  const char* positive;     // a log line that must match (tests)
  const char* negative;     // a similar line that must not match (tests)
};

// The built-in table (static storage; never changes).
std::span<const LogPattern> LogPatterns();

struct LogMatch {
  std::int64_t line = 0;  // 1-based line number
  const LogPattern* pattern = nullptr;
  std::string text;  // the line (trimmed of the newline; truncated to 400 bytes)
};

inline constexpr std::size_t kMaxLineBytes = 64 * 1024;
// A --patterns file: at most this many patterns and YAML nodes (counted before a tree is built).
inline constexpr std::size_t kMaxUserPatterns = 1000;
inline constexpr std::size_t kMaxUserPatternNodes = 16000;

class LogScanner {
 public:
  // The built-in patterns.
  LogScanner();
  // Built-ins plus the patterns of a user file (YAML):
  //   patterns:
  //     - id: app.oom                 # required, unique, not a built-in id
  //       regex: "cuda out of memory" # required, RE2 syntax, matched case-insensitively
  //       category: memory            # required
  //       advice: "lower the batch"   # required
  //       needle: "out of memory"     # optional lowercase key phrase (documentation)
  // INVALID_ARG "<file>:<line>:<col>: ..." naming the field for anything malformed (a regex
  // that does not compile, a duplicate id, a needle with upper-case letters, unknown keys), and
  // for more than kMaxUserPatterns patterns or kMaxUserPatternNodes nodes (found on the parser's
  // events, before the file is held as a tree: memory stays a small multiple of the file).
  static common::Result<std::unique_ptr<LogScanner>> WithUserPatterns(const std::string& path);

  LogScanner(const LogScanner&) = delete;
  LogScanner& operator=(const LogScanner&) = delete;

  // Patterns matching `line` (at most one match per pattern).
  std::vector<const LogPattern*> Match(std::string_view line) const;
  // Whether some pattern matches `text` (cheaper than Match: no match list).
  bool MayMatch(std::string_view text) const;
  // The prefilter (logscan_prefilter.h): a pointer into the first line of [begin, end) that may
  // match (it holds a literal that every match of some pattern contains, in any case), or end
  // when no line there can match. Returns begin when some pattern has no required literal (then
  // every line is matched by the regex engine).
  const char* FindCandidate(const char* begin, const char* end) const;
  // The longest required literal in bytes (0 without a prefilter): a literal that a line break
  // splits inside a word lies within this many bytes either side of the break.
  std::size_t MaxLiteral() const;
  // Built-ins first (pointers into LogPatterns()), then user patterns in file order.
  const std::vector<const LogPattern*>& patterns() const { return patterns_; }
  ~LogScanner();

 private:
  struct Engine;  // RE2::Set over every pattern (logscan.cc)
  struct EngineDeleter {
    void operator()(Engine* e) const;
  };
  // Compiles every pattern into the engine; INVALID_ARG with RE2's reason for a bad one.
  common::Status Compile();

  std::deque<std::string> strings_;       // text of user patterns (deque: stable addresses)
  std::deque<LogPattern> user_patterns_;  // stable addresses
  std::vector<const LogPattern*> patterns_;
  std::unique_ptr<Engine, EngineDeleter> engine_;
};

struct LogScanSummary {
  std::int64_t lines = 0;
  std::int64_t matches = 0;
  std::vector<std::pair<std::string, std::int64_t>> per_category;  // in table order, non-zero
};

// The result a finding of `category` calls for: kNotAccelerated (provider load failure, CPU
// fallback, node assignment, no device, missing library), kDrift (driver, library, TensorRT or
// cuDNN mismatch), kPerformanceFailed (Memcpy nodes, TensorRT engine rebuilt or not loadable).
// nullopt for a category without one: a user pattern's category (--patterns), which
// LogScanOutcome counts as kNotAccelerated. Every built-in category has one (a test checks).
std::optional<common::Outcome> LogCategoryOutcome(std::string_view category);
// The result of a whole scan: kOk without findings, else the most severe category's, by
// common::WorseOutcome (no GPU path before drift before performance).
common::Outcome LogScanOutcome(const LogScanSummary& summary);
// The scan's exit code: common::ExitCodeFromOutcome(LogScanOutcome(summary)).
int LogScanExitCode(const LogScanSummary& summary);

// Scans `path` ("-" = stdin) line by line, calling `on_match` on the calling thread for every
// match in order. `scanner` (not owned; nullptr: the built-in patterns) must outlive the call.
common::Result<LogScanSummary> ScanLogFile(const std::string& path,
                                           const std::function<void(const LogMatch&)>& on_match,
                                           const LogScanner* scanner = nullptr);
// Same over an open stream (not closed).
LogScanSummary ScanLogStream(std::FILE* in, const std::function<void(const LogMatch&)>& on_match,
                             const LogScanner* scanner = nullptr);

}  // namespace tg::policy
