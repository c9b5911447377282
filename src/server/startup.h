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
#include "server/config.h"

namespace tg::server {

struct AdmitOutcome {
  bool ok = false;
  // Why !ok: the refusing step's code (UNAVAILABLE no GPU path, FAILED_PRECONDITION drift,
  // INVALID_ARG/NOT_FOUND configuration); its exit code follows from common::ExitCodeFromStatus.
  common::StatusCode code = common::StatusCode::kOk;
  std::string verdict;    // "ACCELERATED", "DEGRADED (...)", "NOT ACCELERATED", ...
  std::string message;    // the root cause when !ok ("[check] found; required; fix")
  common::Json snapshot;  // probe::ToJson of the node
  common::Json report;    // the admission report
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
  virtual AdmitOutcome SnapshotAndAdmit() = 0;
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
