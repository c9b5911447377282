// The load generator: HTTP/1.1 keep-alive connections, asynchronous, in one process. Like wrk,
// each of `threads` threads runs its own epoll loop over its share of the connections
// (non-blocking sockets, requests serialized once, responses framed by ResponseReader in
// loadgen_http.h without copying bodies), to keep the generator's own CPU per request low; that
// CPU is reported per point (client_cpu_us_per_request). Request deadlines (`timeout_s`) are
// checked every 50 ms.
//
// Closed loop: each connection sends its next request when the previous response arrived (the
// classic "concurrency" mode; it hides stalls, see coordinated omission). Open loop: each
// connection has a fixed schedule (total rate / connections, staggered); latency is measured from
// the *intended* send time, so a stall shows up in every request that should have been sent during
// it (wrk2's method); the service time (actual send to last byte) is recorded separately.
//
// Time is cut into a warm-up (discarded) and windows of `window_s`; a request belongs to the
// window in which it completed. After each window the perf_analyzer stability rule is checked on
// the last `stable_windows` windows; the run stops when stable, after `max_trials` windows, or
// when `*stop` becomes true (SIGINT), and the point's result is the merge of the last (up to 3)
// complete windows (bench/loadgen_windows.h). Every time it takes (timestamps, deadlines, the
// open-loop schedule, windows) is read from `clock`. Error kinds: "http_<status>", "timeout",
// "connection".
//
// RunLoad blocks the calling thread and owns every socket it opens; thread-safe with respect to
// other RunLoad calls. Failure to resolve the target, or to create a thread's epoll set or timer,
// is UNAVAILABLE; refused or broken connections are counted as errors, not returned.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "bench/loadgen_windows.h"
#include "bench/result.h"
#include "common/clock.h"
#include "common/status.h"

namespace tg::bench {

struct Target {
  std::string host;  // "127.0.0.1"
  std::string port;  // "8000"
  std::string base;  // path prefix without trailing slash ("" or "/api")
};
// Parses http://HOST[:PORT][/PREFIX]; https and other schemes are INVALID_ARG naming `url`.
common::Result<Target> ParseUrl(const std::string& url);

struct HttpRequest {
  std::string method = "POST";
  std::string path;  // below the target's base, e.g. "/v1/images/generations"
  std::string body;  // JSON
};

struct LoadOptions {
  Target target;
  std::vector<HttpRequest> requests;  // sent round-robin (one per prompt of the set)
  int connections = 1;
  int threads = 1;
  double rate = 0;  // total requests/s; > 0 means open loop
  double warmup_s = 1;
  double window_s = 5;
  int max_trials = 10;
  int stable_windows = 3;
  double stability = 0.10;  // max/min within 1 + stability
  double timeout_s = 120;
  const std::atomic<bool>* stop = nullptr;                 // set by a SIGINT handler; may be null
  std::function<void(int window, bool stable)> on_window;  // progress; may be empty
  common::Clock* clock = nullptr;  // not owned; must outlive RunLoad; nullptr: common::RealClock()
};

struct LoadResult {
  PointResult point;  // latency, service, ok, errors, measured_s, windows, stable, trials
  // Measured interval (the merged windows), for aggregating server-side metrics.
  std::chrono::steady_clock::time_point measured_begin, measured_end;
  bool interrupted = false;
  double cpu_s = 0;  // this process's user+sys CPU over the measured windows
};

// Runs one sweep point until it is stable, out of trials or stopped (see the file comment);
// blocks the calling thread. Errors: UNAVAILABLE as the file comment says.
common::Result<LoadResult> RunLoad(const LoadOptions& options);

}  // namespace tg::bench
