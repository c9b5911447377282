// `truegreen compare A.json B.json [C.json ...]`: every later run against the first (the
// baseline), point by point (matched by the point label: concurrency, batch, size, steps,
// scheduler, rate). Per point: throughput and P50/P95 ratios with distribution-free 95 % intervals,
// the Mann-Whitney U p-value, the KS distance and overlap coefficient of the latency histograms,
// and a verdict only when both sides hold enough samples for the P95 interval; per run: the diff
// of the servers' capabilities (policy::DiffJson over CapabilityView, so timings never show as
// changes). Regression gates (`p95 +10%`) are checked on the ratios. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "bench/result.h"
#include "bench/slo.h"
#include "bench/stats.h"
#include "common/config.h"

namespace tg::bench {

struct PointComparison {
  std::string label;
  bool matched = false;  // the point exists in both runs
  double throughput_ratio = 0;
  Interval throughput_ci;  // from the per-window throughputs: [min B / max A, max B / min A]
  double p50_ratio = 0, p95_ratio = 0;
  Interval p50_ci, p95_ci;
  MannWhitney mw;
  double ks = 0, overlap = 0;
  // "~" (no significant change, p >= 0.05), "faster", "slower", or "too few samples (n = A/B)"
  // when a side has fewer than MinSamplesForInterval(0.95) samples.
  std::string verdict;
  const PointResult* a = nullptr;
  const PointResult* b = nullptr;
};

struct RunComparison {
  std::string a_name, b_name;
  std::vector<PointComparison> points;
  common::Json capability_diff;  // policy::DiffToJson, or null when a side has no snapshot
  bool gates_given = false;      // false: the report says "none given", never "pass"
  std::vector<std::string> gate_failures;
  bool prompt_sets_differ = false;
};

// What the capability diff leaves out: members, wherever they appear, that hold a time, a sample,
// a duration or a live reading (they differ between any two runs, so a real change would drown
// in them), and whole sections that are measurements rather than capabilities. Each entry is
// {name, why}; docs/BENCH.md lists them (tested).
struct CapabilityExclusion {
  std::string name;  // a member name ("taken_at"), or a top-level section ("canary")
  bool section;      // true: only as a top-level member
  std::string why;
};
const std::vector<CapabilityExclusion>& CapabilityDiffExclusions();
// A copy of a server's GET /v1/capabilities answer without the excluded members. Pure.
common::Json CapabilityView(const common::Json& capabilities);

// `b` against the baseline `a` (names as given for the report), with `gates` checked on the
// ratios. Never fails: a point of `a` that `b` lacks is reported unmatched. The result points
// into `a` and `b`, which must outlive it.
RunComparison CompareRuns(const RunResult& a, const std::string& a_name, const RunResult& b,
                          const std::string& b_name, const std::vector<Gate>& gates);

// The comparisons as Markdown (text output), JSON and a self-contained HTML page. Never fail.
std::string ComparisonsToMarkdown(const std::vector<RunComparison>& c);
common::Json ComparisonsToJson(const std::vector<RunComparison>& c);
std::string ComparisonsToHtml(const std::vector<RunComparison>& c);

}  // namespace tg::bench
