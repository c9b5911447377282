// JSON parsing with limits checked on the parser's events, before any document exists: the
// element count of each array or object, and a check-only mode that builds nothing. The same
// parser, messages and rules as common::ParseJson (config.h), which is this with no limits.
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/config.h"

namespace tg::common {

struct JsonLimits {
  // Elements of any one array or members of any one object; 0 = no limit. `what` names the
  // limit in the error, e.g. "the limit per list in a snapshot".
  std::size_t max_container_elements = 0;
  const char* what = "the limit per list";
  // false: check only (syntax, duplicate keys, depth, counts); the result is null.
  bool build = true;
};

// As ParseJson(text, source), and containers over `limits` are errors
// ("<source>:<line>:<col>: invalid JSON: an array or object of more than N elements (what)").
Result<Json> ParseJson(const std::string& text, const std::string& source,
                       const JsonLimits& limits);
// Reads (at most `max_bytes`) and parses a JSON file under `limits`.
Result<Json> LoadJsonFile(const std::string& path, std::uint64_t max_bytes,
                          const JsonLimits& limits);

}  // namespace tg::common
