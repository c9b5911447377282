// What the generator sends: the prompt set (JSONL: {"prompt", "negative", "seed"} per line,
// identified by the SHA-256 of its bytes) and the request bodies for one sweep point, for the
// OpenAI images API (POST /v1/images/generations, with truegreen's extensions negative_prompt,
// steps, scheduler, seed) or KServe v2 (POST /v2/models/{model}/infer, the prompt as a BYTES
// tensor of shape [batch], the rest as request parameters). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/loadgen.h"
#include "bench/result.h"
#include "common/status.h"

namespace tg::bench {

struct Prompt {
  std::string prompt;
  std::string negative;
  std::int64_t seed = 0;
};

struct PromptSet {
  std::string path;  // "" for the built-in set
  std::string sha256;
  std::vector<Prompt> prompts;
};

// Loads a JSONL prompt set (at most 16 MiB and 100000 lines). Errors name file, line and field.
common::Result<PromptSet> LoadPromptSet(const std::string& path);
// A fixed three-prompt set with locked seeds, hashed like a file ("builtin:" + sha256).
PromptSet BuiltinPromptSet();

// One request per prompt for `point`. `api` is "openai", "kserve" (needs `model`) or "get" (a
// plain GET of the base URL, for measuring the generator itself against wrk); INVALID_ARG else.
common::Result<std::vector<HttpRequest>> BuildRequests(const std::string& api,
                                                       const std::string& model,
                                                       const PointConfig& point,
                                                       const PromptSet& prompts);

// Sweep axes, e.g. "1,8,16,32" or "512x512,1024x1024"; errors name the flag.
common::Result<std::vector<int>> ParseIntList(const std::string& flag, const std::string& text);
common::Result<std::vector<std::string>> ParseSizeList(const std::string& flag,
                                                       const std::string& text);

}  // namespace tg::bench
