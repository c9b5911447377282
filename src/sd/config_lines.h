// Line numbers for errors about fields of a component's JSON config (unet/, text_encoder/,
// vae_decoder/ config.json, scheduler/scheduler_config.json). The JSON DOM keeps no positions, so
// the line of a field is found by one bounded pass over the file's text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace tg::sd {

// The size of one component config file (model_index.json, a component's config.json,
// scheduler_config.json): real ones are a few KB. A JSON document costs up to ~35 times its text
// (an array of `{}`), so the cap, not the generic 16 MiB, bounds what reading one may cost.
inline constexpr std::uint64_t kMaxComponentConfigBytes = 1ULL << 20;

// 1-based line where the member `key` of the top-level JSON object in `text` starts; 0 when the
// text has no such member. Linear in the text; strings are skipped with their escapes, so the same
// name inside a value or a nested object never matches. Pure; thread-safe.
int JsonTopLevelKeyLine(std::string_view text, std::string_view key);

// `status` with "<source>: field '<key>...': ..." rewritten as "<source>:<line>: field ..." when
// the key's line in `text` is known ("key[3]" is looked up as "key"); any other status, and OK,
// unchanged. Pure; thread-safe.
common::Status WithFieldLine(common::Status status, const std::string& source,
                             std::string_view text);

}  // namespace tg::sd
