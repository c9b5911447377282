#include "server/startup.h"

#include "policy/admission.h"
#include "policy/matrix.h"
#include "probe/probe.h"
#include "runtime/runtime_policy.h"

namespace tg::server {
namespace {

using common::Json;
using common::Result;
using common::Status;

class LocalStartup : public Startup {
 public:
  LocalStartup(const ServeConfig& c, common::LibraryLoader loader)
      : config_(c), loader_(std::move(loader)) {}

  AdmitOutcome SnapshotAndAdmit() override {
    AdmitOutcome out;
    auto m = config_.matrix.empty() ? policy::ResolvePolicyMatrix(config_.policy)
                                    : policy::LoadMatrix(config_.matrix);
    if (!m.ok()) {
      out.exit_code = common::kExitUsage;
      out.message = m.status().message();
      return out;
    }
    probe::Snapshot snap = probe::TakeSnapshot(loader_);
    policy::AdmissionReport r = policy::Admit(snap, *m);
    out.snapshot = probe::ToJson(snap);
    out.report = r.ToJson();
    out.verdict = std::string(policy::VerdictName(r.verdict));
    out.exit_code = r.exit_code;
    out.ok = r.exit_code == common::kExitOk;
    auto causes = r.Causes();
    if (!causes.empty()) {
      const policy::Check* c = causes.front();
      out.message = "[" + c->id + "] " + c->found;
      if (!c->required.empty()) out.message += "; required: " + c->required;
      if (!c->cause.empty()) out.message += "; fix: " + c->cause;
    }
    return out;
  }

  Result<std::unique_ptr<LoadedModel>> OpenModel(const ModelSpec& spec) override {
    if (!factory_) {
      auto p = runtime::LoadRuntimePolicy(config_.policy);
      if (!p.ok()) return p.status().WithPrefix("--policy");
      if (!config_.matrix.empty()) p->matrix_path = config_.matrix;
      auto f = runtime::SessionFactory::Create(*p, loader_);
      if (!f.ok()) return f.status();
      factory_ = std::move(f).value();
    }
    auto m = std::make_unique<LoadedModel>();
    m->spec = spec;
    if (spec.kind == ModelKind::kStableDiffusion) {
      auto sd = sd::LoadSdModel(spec.path, *factory_);
      if (!sd.ok()) return sd.status();
      m->sd = std::move(sd).value();
      m->pipeline = std::make_unique<sd::Pipeline>(*m->sd);
    } else {
      auto s = factory_->Open(spec.path);
      if (!s.ok()) return s.status();
      m->session.emplace(std::move(s).value());
    }
    return m;
  }

 private:
  ServeConfig config_;
  common::LibraryLoader loader_;
  std::optional<runtime::SessionFactory> factory_;
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

std::unique_ptr<Startup> MakeLocalStartup(const ServeConfig& config, common::LibraryLoader loader) {
  return std::make_unique<LocalStartup>(config, std::move(loader));
}

}  // namespace tg::server
