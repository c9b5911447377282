// `truegreen serve`: an inference server that turns ready only when its fast path is proven.
//
// RunServer binds the HTTP port first (so /healthz and /readyz answer during start-up), then runs
// the gates in order on a background thread: admit (snapshot + admission + the provider factory),
// sessions (placement proof per model, then the op canary over their ops), warm-up (per model and
// shape), canary (fixed prompts and seeds, timed against the P50/P95 ceilings; with NVML also the
// GPU-utilisation floor and the proof that this process used the GPU, server/gpu_monitor.h).
// /readyz is 503 naming the pending or failed gate until all pass, and later while the background
// canary or the NVML liveness check fails. A failed gate exits with the shared code (3 no GPU path,
// 4 drift, 5 canary too slow, 2 bad model files) unless exit_on_fail is false, in which case the
// process stays up answering 503 with the reason. SIGTERM/SIGINT drain: stop accepting, finish
// every accepted request, exit 0.
//
// Thread safety: call RunServer once per process. It blocks SIGTERM/SIGINT in the calling thread
// (and so in every thread it starts), takes them through a signalfd and returns at shutdown.
#pragma once

#include "common/config.h"
#include "common/dynlib.h"
#include "common/status.h"
#include "server/serve_config.h"

namespace tg::server {

// How a run of the server ended.
struct ServeResult {
  // OK after a SIGTERM/SIGINT drain; else the failed gate's Status, or INVALID_ARG when the port
  // cannot be bound.
  common::Status status;
  // The failed gate is the timed canary and its runs completed too slowly: a result, not an
  // error (exit 5 through common::ExitCodeFromOutcome).
  bool performance_failed = false;
  int exit_code = 0;     // the process exit code, from the one place serve decides it
  common::Json summary;  // ok, exit_code, state, reason, port, degraded, gates (serve --json)
};

// Runs the server until it stops (see the file comment). Prints nothing on stdout: the caller
// reports `summary`, and an error through the CLI's one error path.
ServeResult RunServer(const ServeConfig& config, const std::vector<ModelSpec>& models,
                      const common::LibraryLoader& loader);

}  // namespace tg::server
