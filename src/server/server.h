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
// (and so in every thread it starts), takes them with sigtimedwait and returns at shutdown.
#pragma once

#include "common/dynlib.h"
#include "server/config.h"

namespace tg::server {

// Returns the process exit code.
int RunServer(const ServeConfig& config, const std::vector<ModelSpec>& models,
              const common::LibraryLoader& loader);

}  // namespace tg::server
