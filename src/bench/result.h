// The data model of a benchmark run: one PointResult per sweep point (concurrency x batch x size x
// steps x scheduler), with its latency and service-time histograms, error counts by kind, the
// stability verdict and the GPU-side aggregates scraped from the server. RunResult adds the
// environment, the prompt-set hash and the capability snapshots. Plain values; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/histogram.h"
#include "common/config.h"
#include "common/status.h"

namespace tg::bench {

struct PointConfig {
  int concurrency = 1;
  int batch = 1;
  std::string size = "512x512";
  int steps = 20;
  std::string scheduler;      // empty: the server's default
  double rate = 0;            // requests/s; > 0 selects open loop (constant rate)
  std::string Label() const;  // "c16 b1 512x512 s20 euler" (+ " r5/s")
};

struct WindowStat {
  double throughput = 0;  // successful requests per second
  double latency_us = 0;  // mean latency of the window
};

// GPU-side aggregates over the measured window only (absent when not measured).
struct GpuSide {
  std::optional<double> utilization;        // mean of nv_gpu_utilization samples, 0..1
  std::optional<double> memory_used_bytes;  // max of nv_gpu_memory_used_bytes
  // Mean over the samples of truegreen_gpu_pcie_{tx,rx}_bytes_per_second summed over GPUs
  // (host<->device traffic as NVML's 20 ms windows saw it).
  std::optional<double> pcie_tx_bytes_per_s;
  std::optional<double> pcie_rx_bytes_per_s;
  std::optional<double> queue_us_per_req;    // delta nv_inference_queue_duration_us / delta count
  std::optional<double> compute_us_per_req;  // delta nv_inference_compute_infer_duration_us / count
  std::optional<bool> gates_ok;              // every truegreen_gate_status sample was 1
  std::vector<std::pair<double, double>> utilization_series;  // (seconds since start, 0..1)
  std::string source;  // "server /metrics", "nvml", or "" when nothing was measured
};

struct PointResult {
  PointConfig config;
  bool open_loop = false;
  Histogram latency;  // open loop: from the intended send time; closed loop: from the send
  Histogram service;  // from the actual send to the last byte of the response
  std::uint64_t ok = 0;
  std::map<std::string, std::uint64_t> errors;  // "http_503", "timeout", "connection"
  double measured_s = 0;
  // The generator's own cost: its process's user+sys CPU over the measured windows divided by the
  // requests completed in them (0 when not measured, e.g. an interrupted first window).
  double client_cpu_us_per_request = 0;
  std::vector<WindowStat> windows;
  bool stable = false;
  int trials = 0;
  GpuSide gpu;
  std::vector<std::string> slo_failures;  // filled by EvaluateSlos

  std::uint64_t ErrorCount() const;  // sum over `errors`
  double Throughput() const;         // successful requests per second
  double ImagesPerMin() const;       // successful requests x batch per minute
  double ErrorRate() const;          // errors / (ok + errors), 0 when nothing was sent
};

struct RunResult {
  std::string tool_version;
  std::string url;
  std::string api;  // "openai" | "kserve"
  std::string model;
  std::string prompt_set_path;
  std::string prompt_set_sha256;     // of the file's bytes; "builtin:<sha256>" when none was given
  std::string started_at;            // ISO 8601 UTC
  bool interrupted = false;          // SIGINT: only what was measured so far
  common::Json environment;          // host, cpu count, kernel
  common::Json server_capabilities;  // GET /v1/capabilities, or null when unavailable
  std::vector<std::string> slos;     // the threshold expressions, as given
  std::vector<PointResult> points;

  // True when any point failed an SLO threshold (bench then exits 5).
  bool SlosFailed() const;
};

// The run as `bench --json` prints it and `compare` reads it back (RunFromJson). Never fails.
common::Json RunToJson(const RunResult& r);
// Caps on what a run file may hold, checked before any element of the list is read: a bench run
// has at most 1024 sweep points and 1000 windows (trials) per point; any other list (histogram
// buckets, GPU series) at most kMaxRunListElements, checked while the file is parsed.
inline constexpr std::size_t kMaxRunPoints = 1024;
inline constexpr std::size_t kMaxWindowsPerPoint = 1000;
inline constexpr std::size_t kMaxRunListElements = std::size_t{1} << 17;

// Parses a run written by RunToJson; errors name `path` and the field, and the cap that was hit.
common::Result<RunResult> RunFromJson(const common::Json& j, const std::string& path);

}  // namespace tg::bench
