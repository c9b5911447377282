// The server's Prometheus families (server/ only): DeclareServerMetrics declares them once, at
// server construction (Triton's nv_inference_* names with Triton's meaning, and truegreen's own);
// RenderServerMetrics sets the gauges read at render time (lanes, IO-binding copies, memory, the
// front end's counters, the one ServerState) and renders the text exposition.
//
// Ownership: none; the parts are borrowed for the call. Thread safety: RenderServerMetrics may run
// on any I/O thread at once with the request path (Metrics has its own lock).
#pragma once

#include <string>
#include <vector>

#include "server/front_end.h"
#include "server/http.h"
#include "server/memory_admission.h"
#include "server/metrics.h"
#include "server/model_registry.h"
#include "server/readiness.h"

namespace tg::server {

void DeclareServerMetrics(Metrics& m, const std::vector<std::string>& gate_names);

HttpResponse RenderServerMetrics(Metrics& metrics, const ModelRegistry& models,
                                 const MemoryAdmission& memory, const FrontEnd& front,
                                 const Readiness& readiness);

}  // namespace tg::server
