// Configuration of `truegreen serve`: flags/env values (ServeConfig) and the model repository.
//
// Model repository (--models DIR), one entry per model, named by the entry:
//   DIR/<name>/model_index.json     a Stable Diffusion pipeline folder (sd::LoadSdModel layout),
//                                   optional DIR/<name>/config.yaml (below)
//   DIR/<name>/model.onnx           a generic ONNX model, optional DIR/<name>/config.yaml
//   DIR/<name>.onnx                 a generic ONNX model, optional DIR/<name>.yaml beside it
// config.yaml of a generic model (every key optional; unknown keys are errors):
//   max_batch: 4            requests merged into one run along dim 0 (1 = no batching)
//   batch_delay_ms: 2       how long the first request waits for others to join its batch
//   warmup:                 shapes run once at start-up (input name -> shape); the first one is
//     - {x: [1, 8]}         also the canary's shape
//   canary_p50_ms: 5        canary latency ceilings of this model (exit 5 above)
//   canary_p95_ms: 10
// config.yaml of an SD pipeline folder (every key optional; unknown keys are errors):
//   max_batch: 8            images of compatible requests in one UNet batch, 1..8 (default 8;
//                           1 = every request alone); see server/api_adapters_openai.cc
//   batch_delay_ms: 0       how long the first request waits for others (default 0: merge only
//                           requests already queued behind a running generation)
//   canary_p50_ms / canary_p95_ms   as above
// Errors: NOT_FOUND for a missing folder, INVALID_ARG naming file, line and field for anything
// malformed; an empty repository is INVALID_ARG. Plain value types; no shared state.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "runtime/canary.h"

namespace tg::server {

// Warm-up runs allocate their inputs: a shape's elements (the product of its dimensions, checked
// for overflow) are capped per input and per run when the config is read, and the bytes (elements
// x the input's data type) again before the tensors are made. Real shapes are far below: an SD
// UNet latent batch [2, 4, 128, 128] is 131072 elements.
inline constexpr std::int64_t kMaxWarmupElements = std::int64_t{1} << 24;     // per input
inline constexpr std::int64_t kMaxWarmupRunElements = std::int64_t{1} << 25;  // all inputs of a run
inline constexpr std::int64_t kMaxWarmupBytes = std::int64_t{1} << 28;        // 256 MiB per run

enum class ModelKind { kStableDiffusion, kOnnx };
std::string_view ModelKindName(ModelKind k);  // "stable_diffusion" | "onnx"

struct ModelSpec {
  std::string name;  // URL-safe: [A-Za-z0-9._-], 1..64 characters
  ModelKind kind = ModelKind::kOnnx;
  std::string path;   // the pipeline folder, or the .onnx file
  int max_batch = 1;  // generic: requests per run; SD: images per UNet batch (default 8)
  int batch_delay_ms = 0;
  // Each entry is one warm-up run: input name -> shape (dynamic dims resolved).
  std::vector<std::map<std::string, std::vector<std::int64_t>>> warmup;
  // Canary ceilings of this model (config.yaml canary_p50_ms / canary_p95_ms); unset = the
  // --canary-p50-ms / --canary-p95-ms flags apply (image models), else not gated.
  std::optional<double> canary_p50_ms;
  std::optional<double> canary_p95_ms;
};

struct Limits {
  std::uint64_t max_body_bytes = 1 << 20;  // 413 above
  int queue_size = 16;                     // waiting requests per model (lane); 429 above
  int deadline_ms = 300000;                // per request, queue + compute; 504 after
  int concurrency = 1;                     // requests computing at once per model (lane)
  int max_connections = 256;               // open connections; more are closed at accept
  int header_timeout_ms = 10000;           // time to receive the request header (slowloris)
  int body_timeout_ms = 30000;             // time to receive the body once the header is in
  int idle_timeout_ms = 60000;             // keep-alive connection with no request
  int max_n = 10;                          // images per OpenAI request (the API allows 1..10)
  int max_steps = 150;                     // denoising steps per request
  int large_pixels = 768 * 768;            // SD jobs above (pixels x steps/50 x n) use the
                                           // large lane
};

struct CanaryConfig {
  int steps = 4;                 // denoising steps of each canary generation
  int size = 0;                  // image side; 0 = 256 (smallest the pipeline accepts)
  std::optional<double> p50_ms;  // ceilings; unset = not gated (the result is still reported)
  std::optional<double> p95_ms;
  // GPU-utilisation floor (0..1] during the canary, measured through NVML; unset = not gated.
  // Also makes the canary require proof that this process used the GPU (docs/POLICY.md).
  std::optional<double> min_gpu_utilization;
  int interval_s = 0;            // background canary period; 0 = off
  double drift_tolerance = 3.0;  // background P50 above tolerance x start-up P50 = drift
};

struct ServeConfig {
  std::string models_dir = "/models";  // the model volume's mount point in a pod
  std::string matrix;                  // "" = the --policy matrix
  std::string policy = "production";
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string port_file;  // written with the bound port once listening
  bool exit_on_fail = true;
  std::string token;  // "" = no authentication
  int io_threads = 2;
  std::string access_log = "-";       // "-" = stderr, "off", or a file (appended)
  std::string fault_file;             // test hook: its content injects a background-canary fault
  int gpu_sample_interval_ms = 1000;  // NVML metrics + liveness tick (server/gpu_monitor.h)
  // response_format "url": the in-memory image store's size and each image's lifetime.
  std::uint64_t image_store_bytes = 256ull << 20;
  int image_ttl_s = 3600;  // the OpenAI API keeps its URLs for 60 minutes
  // OpenAI `model` names mapped to served models (--model-alias dall-e-3=sd15).
  std::map<std::string, std::string> model_aliases;
  // --memory-budget: the memory the replica may use, overriding the cgroup / MemAvailable / free
  // GPU memory reading (sd::ResolveBudget); also the CUDA arena's gpu_mem_limit.
  std::optional<std::int64_t> memory_budget;
  Limits limits;
  CanaryConfig canary;
  // The op canary of the shared startup chain (child command line, cache); none: step skipped.
  std::optional<runtime::CanaryOptions> op_canary;
};

// Reads the repository in `dir` (see file comment), sorted by name.
[[nodiscard]] common::Result<std::vector<ModelSpec>> LoadModelRepository(const std::string& dir);

// The documented range of one number option of `serve`, bounds included. This table is the one
// source of serve's ranges: the CLI checks each flag's text against it before parsing and shows
// it in --help (src/cli/option_checks.cc), and ValidateServeConfig checks the config against it.
struct ServeOptionRange {
  const char* flag;  // "--port"
  double lo, hi;
  const char* unit;  // what the number counts, for messages and --help
};
// Every row; a static table, safe from any thread.
std::span<const ServeOptionRange> ServeOptionRanges();
// The row of `flag`, or null when the flag has none.
const ServeOptionRange* FindServeOptionRange(std::string_view flag);
// `config`'s value of every ServeOptionRanges flag, in the table's order (an unset canary ceiling
// or GPU floor is 0, the CLI's "not gated"): what ValidateServeConfig checks, and what the
// documentation's defaults are compared with (ServeOptionValues(ServeConfig{})). Pure.
std::vector<std::pair<const char*, double>> ServeOptionValues(const ServeConfig& config);

// Checks every numeric field against ServeOptionRanges, then the holes inside those ranges
// (--canary-size 1..255; a canary ceiling or GPU floor, when set, above 0); INVALID_ARG naming
// the flag, the value and what is allowed. Then the output paths.
[[nodiscard]] common::Status ValidateServeConfig(const ServeConfig& config);

// Reads a token file (first line, trimmed; empty file is an error).
[[nodiscard]] common::Result<std::string> ReadTokenFile(const std::string& path);

}  // namespace tg::server
