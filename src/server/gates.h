// What the server needs from the startup chain, behind one narrow interface.
//
// The implementation (MakeChainStartup) is the one shared chain of src/runtime/startup.h, the
// same one doctor, run and generate use: snapshot -> admit -> factory (locked providers) in
// SnapshotAndAdmit, open with placement proof in OpenModel, the op canary (in a child process,
// over the opened models' op types) in OpCanary. Warm-up and the timed request canary stay in the
// server (server.cc): they are per-model serving concerns.
//
// Ownership: a LoadedModel owns its sessions (and the SD pipeline over them); it is immutable
// after OpenModel and safe to use from several threads (sessions are thread-safe for Run).
// Startup is used from one thread (the server's gate thread).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/dynlib.h"
#include "common/status.h"
#include "runtime/session.h"
#include "runtime/startup.h"
#include "sd/model_loader.h"
#include "sd/pipeline.h"
#include "server/serve_config.h"

namespace tg::server {

// What the admission step measured and decided, kept for /v1/capabilities whether or not it
// admitted the node (a refused node still shows its snapshot and the report that refused it).
struct NodeAdmission {
  std::string verdict;    // "ACCELERATED", "DEGRADED (...)", "NOT ACCELERATED", ... ("" if none)
  common::Json snapshot;  // probe::ToJson of the node (null if no snapshot was taken)
  common::Json report;    // the admission report (null if admission did not run)
};

struct LoadedModel {
  ModelSpec spec;
  std::unique_ptr<sd::SdModel> sd;          // kStableDiffusion
  std::unique_ptr<sd::Pipeline> pipeline;   // over *sd
  std::optional<runtime::Session> session;  // kOnnx
  bool degraded() const;
  std::string degraded_reason() const;
  // Placement per session: {"unet": {"nodes_per_provider": ..., "gpu_active": ...}, ...}.
  common::Json Placement() const;
  // Host<->device bytes over all sessions.
  runtime::IoStats Io() const;
};

class Startup {
 public:
  virtual ~Startup() = default;
  // Snapshot of the node and admission against the matrix (--matrix, else the --policy matrix).
  // Fills *admission with what was measured, whatever the outcome. Errors: the refusing step's
  // status: UNAVAILABLE (no GPU path, exit 3), FAILED_PRECONDITION (drift, 4), INVALID_ARG /
  // NOT_FOUND (configuration, 2); its message is the root cause ("[check] found; required; fix").
  [[nodiscard]] virtual common::Status SnapshotAndAdmit(NodeAdmission* admission) = 0;
  // Sessions with placement proof. Errors: UNAVAILABLE (no GPU path / placement violated, exit
  // 3), FAILED_PRECONDITION (drift, 4), NOT_FOUND / INVALID_ARG (model files, 2).
  virtual common::Result<std::unique_ptr<LoadedModel>> OpenModel(const ModelSpec& spec) = 0;
  // The chain's op canary over the op types of the models opened so far (skipped, never passed,
  // when no GPU provider is attached). UNAVAILABLE (exit 3) when an op crashes, hangs, errs or
  // gives a wrong result on the GPU in production.
  virtual common::Status OpCanary(const std::vector<ModelSpec>& specs) = 0;
  // The chain's steps so far (name, outcome, ms, detail), for /v1/capabilities.
  virtual common::Json StartupJson() const = 0;
};

// The shared chain (see file comment). `config.policy` is the global --policy value.
std::unique_ptr<Startup> MakeChainStartup(const ServeConfig& config, common::LibraryLoader loader);

}  // namespace tg::server
