#include "server/gates.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <system_error>

#include "common/clock.h"
#include "policy/admission.h"
#include "probe/snapshot.h"
#include "runtime/runtime_policy.h"

namespace tg::server {
namespace {

using common::Json;
using common::Result;
using common::Status;

// The SD pipeline's component models (<folder>/<component>/*.onnx), for the canary's op set.
std::vector<std::string> ModelFiles(const ModelSpec& spec) {
  if (spec.kind != ModelKind::kStableDiffusion) return {spec.path};
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& comp : std::filesystem::directory_iterator(spec.path, ec)) {
    if (!comp.is_directory(ec)) continue;
    for (const auto& f : std::filesystem::directory_iterator(comp.path(), ec)) {
      if (f.path().extension() == ".onnx") out.push_back(f.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

class ChainStartup : public Startup {
 public:
  ChainStartup(const ServeConfig& c, common::LibraryLoader loader)
      : config_(c), loader_(std::move(loader)) {}

  Status SnapshotAndAdmit(NodeAdmission* out) override {
    auto p = runtime::LoadRuntimePolicy(config_.policy);
    if (!p.ok()) return p.status().WithPrefix("--policy");
    if (!config_.matrix.empty()) p->matrix_path = config_.matrix;
    // Admission by memory (memory_admission.h) estimates each job's peak with every run's arena
    // returned after it, and the budget is the CUDA arena's limit, so ORT refuses an allocation
    // past it cleanly instead of the driver (a policy's own gpu_mem_limit stays).
    p->arena.shrink_after_run = true;
    if (config_.memory_budget && !p->cuda.gpu_mem_limit) {
      p->cuda.gpu_mem_limit = *config_.memory_budget;
    }
    options_.canary = config_.op_canary;
    auto chain = runtime::StartupChain::Start(*p, loader_, runtime::OrtRuntime::Open(loader_),
                                              options_, &report_);
    if (report_.snapshot) out->snapshot = probe::ToJson(*report_.snapshot);
    if (report_.admission) out->report = report_.admission->ToJson();
    // The one verdict value: admission, overturned by a refused step (policy/verdict.h).
    if (auto v = report_.Verdict()) out->verdict = std::string(policy::VerdictName(v->verdict));
    if (!chain.ok()) {
      // The step that refused says why (drift at admit: 4; no GPU path at factory: 3). The
      // admission's own integrity finding names the node-level cause (device nodes, driver)
      // beside the step's exact error (e.g. the provider's loader text).
      std::string message = chain.status().message();
      if (report_.admission) {
        const auto causes = report_.admission->Causes();
        if (!causes.empty()) {
          const policy::Check* c = causes.front();
          message += "; admission: [" + c->id + "] " + c->found;
          if (!c->required.empty()) message += "; required: " + c->required;
          if (!c->cause.empty()) message += "; fix: " + c->cause;
        }
      }
      return Status(chain.status().code(), message);
    }
    chain_.emplace(std::move(chain).value());
    return Status::Ok();
  }

  Result<std::unique_ptr<LoadedModel>> OpenModel(const ModelSpec& spec) override {
    if (!chain_) return Status::Internal("OpenModel before SnapshotAndAdmit succeeded");
    const runtime::SessionFactory& factory = chain_->factory();
    auto m = std::make_unique<LoadedModel>();
    m->spec = spec;
    const auto t0 = std::chrono::steady_clock::now();
    Status st = Status::Ok();
    if (spec.kind == ModelKind::kStableDiffusion) {
      auto sd = sd::LoadSdModel(spec.path, factory);
      st = sd.status();
      if (sd.ok()) {
        m->sd = std::move(sd).value();
        m->pipeline = std::make_unique<sd::Pipeline>(*m->sd);
      }
    } else {
      auto s = factory.Open(spec.path);
      st = s.status();
      if (s.ok()) m->session.emplace(std::move(s).value());
    }
    runtime::StartupChain::RecordStep(&report_, "open", common::MsSince(t0), st, true, spec.path);
    if (!st.ok()) return st;
    return m;
  }

  Status OpCanary(const std::vector<ModelSpec>& specs) override {
    if (!chain_) return Status::Internal("OpCanary before SnapshotAndAdmit succeeded");
    std::vector<std::string> files;
    for (const ModelSpec& s : specs) {
      for (std::string& f : ModelFiles(s)) files.push_back(std::move(f));
    }
    // Warm-up runs are the server's own gate, so the chain's warm-up step is skipped here.
    return chain_->Finish(files, options_, &report_);
  }

  Json StartupJson() const override { return report_.ToJson(); }

 private:
  ServeConfig config_;
  common::LibraryLoader loader_;
  runtime::StartupOptions options_;
  runtime::StartupReport report_;
  std::optional<runtime::StartupChain> chain_;
};

Json ReportPlacement(const runtime::SessionReport& r) {
  Json per = Json::object();
  for (const auto& [p, n] : r.placement.nodes_per_provider) per[p] = n;
  return {{"model_path", r.model_path},
          {"gpu_active", r.gpu_active},
          {"degraded", r.degraded},
          {"total_nodes", r.placement.total_nodes},
          {"nodes_per_provider", per},
          {"cpu_share", r.placement.cpu_share},
          {"placement_source", r.placement.source},
          {"placement_ok", r.placement.ok}};
}

}  // namespace

bool LoadedModel::degraded() const {
  if (sd) return sd->degraded();
  return session && session->report().degraded;
}

std::string LoadedModel::degraded_reason() const {
  if (sd) return sd->degraded_reason();
  return session ? session->report().degraded_reason : "";
}

Json LoadedModel::Placement() const {
  Json j = Json::object();
  if (sd) {
    static const char* kParts[] = {"text_encoder", "text_encoder_2", "unet", "vae_decoder"};
    const auto reports = sd->reports();
    // reports() lists text_encoder, [text_encoder_2], unet, vae_decoder in that order.
    std::size_t part = 0;
    for (const runtime::SessionReport* r : reports) {
      if (part == 1 && !sd->text_encoder_2) ++part;
      j[kParts[part++ % 4]] = ReportPlacement(*r);
    }
  } else if (session) {
    j["model"] = ReportPlacement(session->report());
  }
  return j;
}

runtime::IoStats LoadedModel::Io() const {
  runtime::IoStats t;
  auto add = [&t](const runtime::Session& s) {
    runtime::IoStats i = s.io_stats();
    t.runs += i.runs;
    t.h2d_bytes += i.h2d_bytes;
    t.d2h_bytes += i.d2h_bytes;
  };
  if (sd) {
    add(sd->text_encoder.session);
    if (sd->text_encoder_2) add(sd->text_encoder_2->session);
    add(sd->unet.session);
    add(sd->vae.session);
  }
  if (session) add(*session);
  return t;
}

std::unique_ptr<Startup> MakeChainStartup(const ServeConfig& config, common::LibraryLoader loader) {
  return std::make_unique<ChainStartup>(config, std::move(loader));
}

}  // namespace tg::server
