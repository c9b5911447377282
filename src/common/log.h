// Logging: everything goes to stderr (results go to stdout), as plain text or as JSON lines.
// A thin layer over spdlog so every module logs the same way. Thread-safe after InitLogging.
#pragma once

#include <spdlog/spdlog.h>

#include <string>
#include <string_view>

#include "common/status.h"

namespace tg::common {

enum class LogFormat { kText, kJson };

// Configures the process-wide logger. `level` is one of trace, debug, info, warn, error, off.
// Returns INVALID_ARG for an unknown level or format name. Call once from main, before other
// threads log.
Status InitLogging(std::string_view format, std::string_view level);

// Chooses how WriteStderrLine formats (InitLogging sets it too). The CLI calls this before parsing
// its options, so even a command-line parse error follows --log-format json. Both thread-safe.
void SetStderrFormat(LogFormat format);
LogFormat StderrFormat();

// Writes one line to stderr whatever the log level (errors and warnings of the command itself):
// with LogFormat::kJson one object {"ts","level","msg"} per line, else `text` as it is.
// Thread-safe (one fwrite per line).
void WriteStderrLine(std::string_view level, std::string_view text);

}  // namespace tg::common
