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
// Returns INVALID_ARG for an unknown level or format name.
Status InitLogging(std::string_view format, std::string_view level);

}  // namespace tg::common
