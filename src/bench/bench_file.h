// The bench file: what `truegreen bench --bench-file FILE` and the blue-green gate Job (its
// ConfigMap, `k8s render --bench-file`) read. YAML, every key optional:
//   slo: ["p95<8s", "errors<1%"]   thresholds (bench/slo.h), added to --slo
//   api: openai | kserve | get     as --api (default openai)
//   model: NAME                    as --model (required with kserve)
//   body: {...}                    as --body: one JSON request sent verbatim (generic KServe v2
//                                  models: JSON tensors), given inline as YAML/JSON
// A flag given on the command line wins over the file. The file is how a gate benchmarks a
// generic model: the gate Job's command line is rendered, the file is the user's.
//
// Failure: INVALID_ARG naming the file, line and field, what was found and what was required
// (unknown keys included: a misspelt key is never ignored). Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace tg::bench {

struct BenchFile {
  std::vector<std::string> slos;   // as written; each one parses (ParseThresholds)
  std::optional<std::string> api;  // "openai" | "kserve" | "get"
  std::optional<std::string> model;
  std::optional<std::string> body;  // compact JSON text of the request body
};

// Parses the YAML text of a bench file; messages name `path`. Errors: as the file comment says.
common::Result<BenchFile> ParseBenchFile(const std::string& text, const std::string& path);
// Reads (size-capped) and parses `path`; NOT_FOUND when it does not exist.
common::Result<BenchFile> LoadBenchFile(const std::string& path);

}  // namespace tg::bench
