// The two protocol adapters of the server (server/ only), each owning its routes' handlers and
// the work its models' lanes run:
//   OpenAiApi (api_adapters_openai.cc)  POST /v1/images/generations, GET /v1/models[/{id}],
//                              GET /v1/images/files/{file}; SD batches, warm-up and canary runs.
//   KserveApi (api_adapters_kserve.cc)  the Open Inference Protocol under /v2 (JSON and binary
//   tensors);
//                              ONNX batches, warm-up and canary runs.
// They see the server through ServerParts only. Handlers return ApiResult<Reply>; a queued
// request is answered by its lane through ServerParts::finish, its errors shaped by ErrorFor.
//
// Thread safety: AddRoutes before the server starts; handlers run on I/O threads, RunJobs on lane
// workers, Warmup and TimeCanaryRun on the gate or background-canary thread; every part they
// share is itself thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "server/image_store.h"
#include "server/lanes.h"
#include "server/memory_admission.h"
#include "server/metrics.h"
#include "server/model_registry.h"
#include "server/readiness.h"
#include "server/router.h"
#include "server/serve_config.h"

namespace tg::server {

// A queued request: its bookkeeping and how to answer it.
struct ServerJob : Job {
  std::shared_ptr<RequestCtx> ctx;
  Responder respond;
};

// The parts of the server an adapter uses; the Server owns them all and outlives the adapters.
struct ServerParts {
  const ServeConfig& config;
  ModelRegistry& models;
  Readiness& readiness;
  Metrics& metrics;
  ImageStore& images;
  MemoryAdmission& memory;
  const int& port;                // the bound port (set before the first request)
  std::int64_t started_unix = 0;  // process start (Model.created of /v1/models)
  // Sends the answer of a request: metrics, access log, X-Request-Id, then the responder.
  std::function<void(const std::shared_ptr<RequestCtx>&, const Responder&, HttpResponse)> finish;

  // UNAVAILABLE "not ready: <reason>" until every gate passed, else OK (Readiness::GatesPassed:
  // the rule /readyz answers by, so a client that saw 200 is never refused).
  common::Status CheckStarted() const {
    if (readiness.GatesPassed()) return common::Status::Ok();
    return common::Status::Unavailable("not ready: " + readiness.State().reason);
  }
};

class OpenAiApi {
 public:
  explicit OpenAiApi(ServerParts parts) : p_(std::move(parts)) {}
  void AddRoutes(RouteTable* table);
  // Runs a lane's batch of image jobs and answers each (api_adapters_openai.cc).
  void RunJobs(ModelRuntime* mr, std::vector<std::shared_ptr<Job>>& jobs);
  // One timed canary generation (fixed prompt and seed `index`) in ms.
  common::Result<double> TimeCanaryRun(ModelRuntime* mr, int index);
  common::Status Warmup(ModelRuntime* mr);

 private:
  // One run of at most `part` images at once (api_adapters_openai.cc).
  void RunBatch(ModelRuntime* mr, std::vector<std::shared_ptr<Job>>& jobs, int part);
  ApiResult<Reply> Generations(Call& c);
  ApiResult<Reply> ListModels(Call& c);
  ApiResult<Reply> GetModel(Call& c);
  ApiResult<Reply> StoredImage(Call& c);
  common::Json ImageModels() const;

  ServerParts p_;
};

class KserveApi {
 public:
  explicit KserveApi(ServerParts parts) : p_(std::move(parts)) {}
  void AddRoutes(RouteTable* table);
  // Runs a lane's batch of infer jobs (merged along dim 0) and answers each
  // (api_adapters_kserve.cc): reserves the merged run's memory estimate first (a batch whose merged
  // run cannot fit is run in halves; the requests are answered 504 when their deadline passes while
  // waiting).
  void RunJobs(ModelRuntime* mr, std::vector<std::shared_ptr<Job>>& jobs);
  // One timed run of the model's first warm-up shapes in ms.
  common::Result<double> TimeCanaryRun(ModelRuntime* mr);
  common::Status Warmup(ModelRuntime* mr);

 private:
  ApiResult<Reply> ServerMetadata(Call& c);
  ApiResult<Reply> ModelMetadata(Call& c);
  ApiResult<Reply> ModelReady(Call& c);
  ApiResult<Reply> Infer(Call& c);
  // One session run of `jobs` merged along dim 0, answering each (api_adapters_kserve.cc).
  void RunMerged(ModelRuntime* mr, std::vector<std::shared_ptr<Job>>& jobs);
  // The served model the path's {model} and {version} name; NOT_FOUND otherwise.
  ApiResult<ModelRuntime*> PathModel(Call& c) const;

  ServerParts p_;
};

}  // namespace tg::server
