// SLOs as code (k6-style thresholds) and compare's regression gates.
//
// Threshold grammar (one per expression; a list may be comma-separated):
//   <metric> <op> <number>[<unit>]
//   metric: p50 p90 p95 p99 p99.9 max mean (latency; unit us|ms|s required)
//           throughput (requests/s) | images_per_min | gpu_util (0..1 or N%) | errors (0..1 or N%)
//   op: < <= > >=
// Examples: "p95<8s", "images_per_min>40", "gpu_util>0.6", "errors<0.1%".
// Gate grammar (compare --fail-on): <metric> +N% | -N%, e.g. "p95 +10%" (fail when B's p95 is more
// than 10 % above A's), "throughput -5%" (fail when B's throughput is more than 5 % below A's).
// A threshold on something that was not measured (gpu_util without metrics) fails: green means
// proven. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/result.h"
#include "common/status.h"

namespace tg::bench {

struct Threshold {
  std::string text;    // as given
  std::string metric;  // canonical: "p95", "images_per_min", ...
  std::string op;      // "<", "<=", ">", ">="
  double value = 0;    // latency in µs; fractions for gpu_util/errors
};

// Parses one threshold; INVALID_ARG names the expression, what was found and what was required.
common::Result<Threshold> ParseThreshold(const std::string& text);
// Splits on commas and parses each.
common::Result<std::vector<Threshold>> ParseThresholds(const std::vector<std::string>& texts);

// The metric's value for a point, or nullopt when it was not measured.
std::optional<double> MetricValue(const PointResult& p, const std::string& metric);
// Fills p.slo_failures with one line per failed threshold ("p95<8s: measured 9.1 s").
void EvaluateSlos(const std::vector<Threshold>& thresholds, PointResult& p);

struct Gate {
  std::string text;
  std::string metric;     // same metric names as thresholds
  double max_change = 0;  // signed fraction: +0.10 means "fail above +10 %"
};
common::Result<Gate> ParseGate(const std::string& text);  // "p95 +10%"; INVALID_ARG says why
// Every gate of a --fail-on list; INVALID_ARG for a bad one or a metric gated twice in one
// direction.
common::Result<std::vector<Gate>> ParseGates(const std::vector<std::string>& texts);

}  // namespace tg::bench
