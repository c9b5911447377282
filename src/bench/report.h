// Outputs of `truegreen bench`: the JSON document (RunToJson in result.h), a CSV with
// perf_analyzer's columns (plus truegreen's), a text table for the terminal and a self-contained
// HTML report (inline SVG: latency percentiles and throughput per point, latency CDFs, GPU
// utilisation over time, the server's capability snapshot, SLO verdicts). Pure functions.
#pragma once

#include <string>

#include "bench/result.h"

namespace tg::bench {

// Header: Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,
// Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,
// p90 latency,p95 latency,p99 latency (µs, as perf_analyzer), then Avg latency,Batch,Size,Steps,
// Scheduler,Mode,Images/Min,Errors,Stable,Trials,GPU Util,SLO. Cells that were not measured are
// empty, never 0.
std::string RunToCsv(const RunResult& r);
std::string RunToText(const RunResult& r);  // a header, then a row per point
std::string RunToHtml(const RunResult& r);  // the whole page, self-contained
// The server capability snapshot (GET /v1/capabilities) as HTML: verdict, causes and a table of
// the admission checks; "not available" for null.
std::string CapabilitiesHtml(const common::Json& caps);

// Flattens a JSON document into "dotted.path = value" rows (capability tables).
std::vector<std::pair<std::string, std::string>> FlattenJson(const common::Json& j);

}  // namespace tg::bench
