// Readiness of the server (server/ only): the start-up gates' states, the start-up and latest
// background canary, the background fault, the admission outcome, and the draining and degraded
// flags; from them the one ServerState (State: starting, ready, not ready with its reason,
// draining) that /readyz, /metrics and serve's summary all read, and the /readyz answer, whose
// rendered body is reused while nothing it shows changed (a health probe costs no JSON). It also
// owns the thread that runs the background canary every interval.
//
// Thread safety: every method may be called from any thread (one mutex guards the state, another
// the rendered /readyz body, a third the background thread). Gate names are fixed at
// construction.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "server/gates.h"
#include "server/http.h"

namespace tg::server {

enum class GateState { kPending, kRunning, kPassed, kFailed };
std::string_view GateStateName(GateState s);

// Where the server stands. kStarting: a gate is pending or running and none failed. kNotReady: a
// gate failed, or after every gate passed the GPU liveness check or the background canary fails.
// kDraining: SIGTERM/SIGINT was taken (it wins over every other phase).
enum class ServerPhase { kStarting, kReady, kNotReady, kDraining };
std::string_view ServerPhaseName(ServerPhase p);  // "starting", "ready", "not_ready", "draining"

struct ServerState {
  ServerPhase phase = ServerPhase::kStarting;
  std::string reason;  // why not ready ("" exactly when phase is kReady)
  bool ready() const { return phase == ServerPhase::kReady; }
};

struct Gate {
  std::string name;
  GateState state = GateState::kPending;
  double duration_ms = 0.0;
  std::string message;
};

struct ModelCanary {
  std::vector<double> samples_ms;
  double p50_ms = 0.0;
  double p95_ms = 0.0;
};

struct CanaryResult {
  bool ran = false;
  bool ok = false;
  bool slow = false;    // every run completed but a ceiling or the drift tolerance was exceeded
  std::string message;  // why it failed ("" when ok), or the latency summary when ok
  std::int64_t at_unix = 0;
  std::map<std::string, ModelCanary> models;
  common::Json gpu;  // GpuUseVerdict::ToJson of this run (gate_runner_canary.cc)
};

class Readiness {
 public:
  // `liveness_fault` returns the GPU liveness fault ("" = holding); called under no lock of ours.
  Readiness(const std::vector<std::string>& gate_names,
            std::function<std::string()> liveness_fault);
  ~Readiness();  // StopBackground()
  Readiness(const Readiness&) = delete;
  Readiness& operator=(const Readiness&) = delete;

  // Runs `run` every `interval` on a thread of its own (the background canary; `run` reports
  // through SetBackgroundCanary) until StopBackground. Called at most once.
  void StartBackground(std::chrono::seconds interval, std::function<void()> run);
  // Wakes and joins the background thread (a run in progress finishes first); idempotent.
  void StopBackground();

  std::size_t gate_count() const { return gates_.size(); }
  const std::string& gate_name(std::size_t i) const { return names_[i]; }
  void GateRunning(std::size_t i);
  void GateDone(std::size_t i, const common::Status& s, double ms);

  void SetAdmission(const NodeAdmission& a);
  // The start-up canary is also the first "latest" one and the drift baseline.
  void SetStartupCanary(const CanaryResult& c);
  CanaryResult StartupCanary() const;
  // Records a background canary; returns the background fault it replaced ("" = was holding).
  std::string SetBackgroundCanary(const CanaryResult& c);

  void SetDraining() { draining_.store(true); }
  bool draining() const { return draining_.load(); }
  void SetDegraded() { degraded_.store(true); }
  bool degraded() const { return degraded_.load(); }

  // True once every gate passed; it stays true (a later fault or drain does not undo it).
  bool GatesPassed() const;
  // The one derivation of the server's state: draining, else the first gate not passed (pending
  // or running: starting; failed: not ready), else the liveness fault, else the background fault
  // (not ready), else ready.
  ServerState State() const;
  // 200 {"ready":true,...} or 503 with the reason; the gates, degraded flag and reason listed.
  HttpResponse Readyz() const;
  common::Json GatesJson() const;
  // The admission and canary parts of /v1/capabilities: snapshot, verdict, admission, canary,
  // background_canary.
  void AddCapabilities(common::Json* j) const;

 private:
  // State with `version` (the gates' version it saw) for the /readyz cache.
  ServerState StateAt(std::uint64_t* version) const;
  common::Json GatesJsonLocked() const;  // mu_ held

  const std::vector<std::string> names_;
  const std::function<std::string()> liveness_fault_;
  std::atomic<bool> draining_{false};
  std::atomic<bool> degraded_{false};

  mutable std::mutex mu_;  // guards everything below but the ready cache
  std::vector<Gate> gates_;
  std::uint64_t gates_version_ = 0;  // bumped whenever gates_ change
  CanaryResult canary_;              // start-up canary
  CanaryResult last_canary_;         // latest background canary
  std::string bg_fault_;             // background canary failure ("" = holding)
  NodeAdmission admit_;

  struct ReadyCache {
    std::uint64_t gates_version = 0;
    bool degraded = false;
    std::string reason;
    std::shared_ptr<const std::string> body;  // null until first rendered
  };
  mutable std::mutex ready_mu_;
  mutable ReadyCache ready_cache_;

  std::mutex bg_mu_;
  std::condition_variable bg_cv_;
  bool bg_stop_ = false;
  std::thread bg_thread_;
};

}  // namespace tg::server
