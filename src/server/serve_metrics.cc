#include "server/serve_metrics.h"

namespace tg::server {

HttpResponse RenderServerMetrics(Metrics& metrics, const ModelRegistry& models,
                                 const MemoryAdmission& memory, const FrontEnd& front,
                                 const Readiness& readiness) {
  if (models.open()) {
    for (auto& [name, mr] : models.all()) {
      int pending = 0;
      for (const auto& lane : mr->lanes) {
        Labels lb = {{"model", name}, {"lane", lane->name()}};
        metrics.Set("truegreen_queue_depth", lb, lane->depth());
        metrics.Set("truegreen_in_flight", lb, lane->in_flight());
        pending += lane->depth();
      }
      metrics.Set("nv_inference_pending_request_count", {{"model", name}}, pending);
      runtime::IoStats io = mr->model->Io();
      metrics.Set("truegreen_host_to_device_bytes_total", {{"model", name}},
                  static_cast<double>(io.h2d_bytes));
      metrics.Set("truegreen_device_to_host_bytes_total", {{"model", name}},
                  static_cast<double>(io.d2h_bytes));
    }
  }
  memory.Export(metrics);
  front.Export(metrics);
  // The one state (readiness.h), read at each render: it also falls with the GPU liveness check,
  // which has its own thread.
  const ServerState state = readiness.State();
  metrics.Set("truegreen_ready", {}, state.ready() ? 1 : 0);
  for (ServerPhase p : {ServerPhase::kStarting, ServerPhase::kReady, ServerPhase::kNotReady,
                        ServerPhase::kDraining}) {
    metrics.Set("truegreen_server_state", {{"state", std::string(ServerPhaseName(p))}},
                p == state.phase ? 1 : 0);
  }
  HttpResponse r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = metrics.Render();
  return r;
}

void DeclareServerMetrics(Metrics& m, const std::vector<std::string>& gate_names) {
  // Triton-compatible names (same meaning as Triton's; counters without _total, as Triton has).
  m.DeclareCounter("nv_inference_request_success", "Successful inference requests per model");
  m.DeclareCounter("nv_inference_request_failure", "Failed inference requests per model, reason");
  m.DeclareCounter("nv_inference_count", "Inferences performed (images or batch rows)");
  m.DeclareCounter("nv_inference_exec_count", "Model executions (a batch counts once)");
  m.DeclareGauge("nv_inference_pending_request_count", "Requests queued, not yet executing");
  m.DeclareCounter("nv_inference_request_duration_us", "Cumulative end-to-end request time (us)");
  m.DeclareCounter("nv_inference_queue_duration_us", "Cumulative time requests waited in queue");
  m.DeclareCounter("nv_inference_compute_infer_duration_us", "Cumulative model compute time (us)");
  const auto lat = Metrics::LatencyBuckets();
  m.DeclareHistogram("truegreen_request_duration_seconds", "End-to-end request latency", lat);
  m.DeclareHistogram("truegreen_queue_duration_seconds", "Time spent queued", lat);
  m.DeclareHistogram("truegreen_compute_duration_seconds", "Model compute time", lat);
  m.DeclareHistogram("truegreen_denoise_step_duration_seconds", "UNet time per denoising step",
                     lat);
  m.DeclareHistogram("truegreen_batch_size", "Requests per model execution",
                     Metrics::CountBuckets());
  m.DeclareGauge("truegreen_queue_depth", "Queued requests per model lane");
  m.DeclareGauge("truegreen_in_flight", "Executions running per model lane");
  m.DeclareGauge("truegreen_http_requests_in_flight", "HTTP requests accepted, not yet answered");
  m.DeclareCounter("truegreen_images_generated_total", "Images generated per model");
  m.DeclareCounter("truegreen_http_requests_total", "HTTP responses by status code");
  m.DeclareCounter("truegreen_http_rejections_total", "Requests refused by the transport");
  m.DeclareGauge("truegreen_canary_latency_seconds", "Latest canary latency quantiles");
  m.DeclareGauge("truegreen_canary_ok", "1 when the latest canary passed");
  m.DeclareCounter("truegreen_canary_runs_total", "Canary runs by outcome");
  m.DeclareGauge("truegreen_gate_status", "1 when the start-up gate passed, 0 otherwise");
  m.DeclareGauge("truegreen_session_nodes", "Graph nodes per provider per model session");
  m.DeclareGauge("truegreen_degraded", "1 when any model runs degraded (dev policy, CPU)");
  m.DeclareGauge("truegreen_ready", "1 when /readyz answers 200");
  m.DeclareGauge("truegreen_server_state", "1 for the server's state, 0 for the others");
  m.DeclareCounter("truegreen_host_to_device_bytes_total", "Host to device bytes (IO binding)");
  m.DeclareCounter("truegreen_device_to_host_bytes_total", "Device to host bytes (IO binding)");
  MemoryAdmission::Declare(m);
  for (const std::string& gate : gate_names) m.Set("truegreen_gate_status", {{"gate", gate}}, 0);
  m.Set("truegreen_ready", {}, 0);
  m.Set("truegreen_canary_ok", {}, 0);
}

}  // namespace tg::server
