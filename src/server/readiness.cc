#include "server/readiness.h"
#include "common/json_writer.h"

namespace tg::server {

using common::Json;

std::string_view GateStateName(GateState s) {
  switch (s) {
    case GateState::kPending:
      return "pending";
    case GateState::kRunning:
      return "running";
    case GateState::kPassed:
      return "passed";
    case GateState::kFailed:
      return "failed";
  }
  return "unknown";
}

std::string_view ServerPhaseName(ServerPhase p) {
  switch (p) {
    case ServerPhase::kStarting:
      return "starting";
    case ServerPhase::kReady:
      return "ready";
    case ServerPhase::kNotReady:
      return "not_ready";
    case ServerPhase::kDraining:
      return "draining";
  }
  return "unknown";
}

Readiness::Readiness(const std::vector<std::string>& gate_names,
                     std::function<std::string()> liveness_fault)
    : names_(gate_names), liveness_fault_(std::move(liveness_fault)) {
  for (const std::string& g : names_) gates_.push_back({g, GateState::kPending, 0.0, ""});
}

Readiness::~Readiness() { StopBackground(); }

void Readiness::StartBackground(std::chrono::seconds interval, std::function<void()> run) {
  bg_thread_ = std::thread([this, interval, run = std::move(run)] {
    while (true) {
      {
        std::unique_lock<std::mutex> l(bg_mu_);
        if (bg_cv_.wait_for(l, interval, [this] { return bg_stop_; })) return;
      }
      run();
    }
  });
}

void Readiness::StopBackground() {
  {
    std::lock_guard<std::mutex> l(bg_mu_);
    bg_stop_ = true;
  }
  bg_cv_.notify_all();
  if (bg_thread_.joinable()) bg_thread_.join();
}

void Readiness::GateRunning(std::size_t i) {
  std::lock_guard<std::mutex> l(mu_);
  gates_[i].state = GateState::kRunning;
  ++gates_version_;
}

void Readiness::GateDone(std::size_t i, const common::Status& s, double ms) {
  std::lock_guard<std::mutex> l(mu_);
  gates_[i].duration_ms = ms;
  gates_[i].state = s.ok() ? GateState::kPassed : GateState::kFailed;
  gates_[i].message = s.message();
  ++gates_version_;
}

void Readiness::SetAdmission(const NodeAdmission& a) {
  std::lock_guard<std::mutex> l(mu_);
  admit_ = a;
}

void Readiness::SetStartupCanary(const CanaryResult& c) {
  std::lock_guard<std::mutex> l(mu_);
  canary_ = c;
  last_canary_ = c;
}

CanaryResult Readiness::StartupCanary() const {
  std::lock_guard<std::mutex> l(mu_);
  return canary_;
}

std::string Readiness::SetBackgroundCanary(const CanaryResult& c) {
  std::lock_guard<std::mutex> l(mu_);
  std::string was = bg_fault_;
  bg_fault_ = c.ok ? "" : "background canary failed: " + c.message;
  last_canary_ = c;
  return was;
}

ServerState Readiness::StateAt(std::uint64_t* version) const {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (version) *version = gates_version_;
    if (draining_.load()) return {ServerPhase::kDraining, "draining: shutting down"};
    for (const Gate& g : gates_) {
      if (g.state == GateState::kFailed) {
        return {ServerPhase::kNotReady, "gate " + g.name + " failed: " + g.message};
      }
      if (g.state != GateState::kPassed) {
        return {ServerPhase::kStarting,
                "gate " + g.name + " " + std::string(GateStateName(g.state))};
      }
    }
  }
  // The liveness callback takes the GPU monitor's lock: called under none of ours.
  if (std::string live = liveness_fault_ ? liveness_fault_() : ""; !live.empty()) {
    return {ServerPhase::kNotReady, live};
  }
  std::lock_guard<std::mutex> l(mu_);
  if (!bg_fault_.empty()) return {ServerPhase::kNotReady, bg_fault_};
  return {ServerPhase::kReady, ""};
}

ServerState Readiness::State() const { return StateAt(nullptr); }

bool Readiness::GatesPassed() const {
  std::lock_guard<std::mutex> l(mu_);
  for (const Gate& g : gates_) {
    if (g.state != GateState::kPassed) return false;
  }
  return true;
}

Json Readiness::GatesJsonLocked() const {
  Json gates = Json::array();
  for (const Gate& g : gates_) {
    gates.push_back({{"name", g.name},
                     {"status", std::string(GateStateName(g.state))},
                     {"duration_ms", g.duration_ms},
                     {"message", g.message}});
  }
  return gates;
}

Json Readiness::GatesJson() const {
  std::lock_guard<std::mutex> l(mu_);
  return GatesJsonLocked();
}

HttpResponse Readiness::Readyz() const {
  std::uint64_t version = 0;
  const std::string reason = StateAt(&version).reason;
  const bool degraded = degraded_.load();
  HttpResponse r;
  r.status = reason.empty() ? 200 : 503;
  {
    // The body changes only with the gates (version), the degraded flag or the reason; a probe
    // while they hold shares the rendered body.
    std::lock_guard<std::mutex> l(ready_mu_);
    if (ready_cache_.body && ready_cache_.gates_version == version &&
        ready_cache_.degraded == degraded && ready_cache_.reason == reason) {
      r.shared_body = ready_cache_.body;
      return r;
    }
  }
  Json gates;
  std::uint64_t rendered_version = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    gates = GatesJsonLocked();
    rendered_version = gates_version_;
  }
  Json body = {{"ready", reason.empty()}, {"gates", gates}, {"degraded", degraded}};
  if (!reason.empty()) body["reason"] = reason;
  r.shared_body = std::make_shared<const std::string>(common::WriteJson(body));
  // Cached only when the gates did not move between the reason and the rendering.
  if (rendered_version == version) {
    std::lock_guard<std::mutex> l(ready_mu_);
    ready_cache_ = {version, degraded, reason, r.shared_body};
  }
  return r;
}

void Readiness::AddCapabilities(Json* j) const {
  auto canary_json = [](const CanaryResult& c) {
    Json models = Json::object();
    for (const auto& [name, mc] : c.models) {
      models[name] = {{"p50_ms", mc.p50_ms}, {"p95_ms", mc.p95_ms}, {"samples_ms", mc.samples_ms}};
    }
    return Json{{"ran", c.ran},         {"ok", c.ok},           {"slow", c.slow},
                {"message", c.message}, {"at_unix", c.at_unix}, {"models", models},
                {"gpu", c.gpu}};
  };
  std::lock_guard<std::mutex> l(mu_);
  (*j)["snapshot"] = admit_.snapshot;
  (*j)["verdict"] = admit_.verdict;
  (*j)["admission"] = admit_.report;
  (*j)["canary"] = canary_json(canary_);
  (*j)["background_canary"] = canary_json(last_canary_);
  (*j)["degraded"] = degraded_.load();
}

}  // namespace tg::server
