#include "common/log.h"
#include "common/json_writer.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>

namespace tg::common {
namespace {

std::atomic<LogFormat> g_stderr_format{LogFormat::kText};

// "2026-01-31T12:00:00.123Z" (UTC, milliseconds).
std::string Timestamp(std::chrono::system_clock::time_point when) {
  auto t = std::chrono::system_clock::to_time_t(when);
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char ts[80];
  std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return ts;
}

// One JSON log line; invalid UTF-8 in a message (file names, ORT errors) is replaced, not fatal.
std::string JsonLine(std::chrono::system_clock::time_point when, std::string_view level,
                     std::string_view msg) {
  nlohmann::json j;
  j["ts"] = Timestamp(when);
  j["level"] = std::string(level);
  j["msg"] = std::string(msg);
  std::string line = WriteJson(j, -1, JsonNotice::kNone);
  line.push_back('\n');
  return line;
}

// Formats one record as a JSON object per line. Messages are escaped by nlohmann::json, so a
// message carrying quotes or newlines (ORT errors do) never breaks the line structure.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    auto lv = spdlog::level::to_string_view(msg.level);
    std::string line = JsonLine(msg.time, std::string_view(lv.data(), lv.size()),
                                std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

}  // namespace

Status InitLogging(std::string_view format, std::string_view level) {
  auto lv = spdlog::level::from_str(std::string(level));
  if (lv == spdlog::level::off && level != "off") {
    return Status::InvalidArg("--log-level: unknown level '" + std::string(level) +
                              "' (expected trace, debug, info, warn, error or off)");
  }
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("truegreen", sink);
  if (format == "json") {
    SetStderrFormat(LogFormat::kJson);
    logger->set_formatter(std::make_unique<JsonFormatter>());
  } else if (format == "text") {
    SetStderrFormat(LogFormat::kText);
    logger->set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  } else {
    return Status::InvalidArg("--log-format: unknown format '" + std::string(format) +
                              "' (expected text or json)");
  }
  logger->set_level(lv);
  spdlog::set_default_logger(logger);
  return Status::Ok();
}

void SetStderrFormat(LogFormat format) { g_stderr_format.store(format); }
LogFormat StderrFormat() { return g_stderr_format.load(); }

void WriteStderrLine(std::string_view level, std::string_view text) {
  std::string line;
  if (StderrFormat() == LogFormat::kJson) {
    line = JsonLine(std::chrono::system_clock::now(), level, text);
  } else {
    line.assign(text);
    line.push_back('\n');
  }
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace tg::common
