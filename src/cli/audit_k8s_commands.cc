// The blue-green gate's API steps. `k8s wait-ready` polls a Deployment until its rollout is
// complete; `k8s promote` switches the Service selector to the new colour and then stores the
// new colour's bench run as the baseline the next gate compares against.
//
// Exit codes: 0 done; 2 bad flag, missing token/CA/baseline file, or an API refusal (401/403 RBAC,
// 404 no such object, 409/422); 3 the API server could not be used (unreachable, timeout, 5xx)
// or the Deployment did not become ready in time.
#include "cli/audit_k8s_commands.h"

#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <thread>

#include "cli/output.h"
#include "common/file_util.h"
#include "common/log.h"
#include "deploy/k8s_client.h"
#include "deploy/k8s_render.h"

namespace tg::cli {
namespace {

using common::Status;

struct ApiFlags {
  deploy::K8sApiOverrides api;
  double timeout_s = 30;
};

void AddApiFlags(CLI::App* c, ApiFlags& f) {
  c->add_option("--namespace", f.api.namespace_name,
                "Namespace (default: the pod's service account namespace)")
      ->type_name("NAME");
  c->add_option("--api-server", f.api.api_server,
                "API server URL (default: in-cluster https://$KUBERNETES_SERVICE_HOST; plain http "
                "only to loopback)")
      ->type_name("URL");
  c->add_option("--token-file", f.api.token_file,
                "Bearer token file (default: the service account token)")
      ->type_name("FILE");
  c->add_option("--ca-file", f.api.ca_file, "CA bundle file (default: the service account ca.crt)")
      ->type_name("FILE");
  c->add_option("--request-timeout", f.timeout_s, "Seconds per API request (default 30)")
      ->check(CLI::Range(0.1, 600.0))
      ->type_name("SECONDS");
}

common::Result<deploy::K8sApiConfig> Resolve(const ApiFlags& f) {
  auto c = deploy::ResolveK8sApiConfig(f.api);
  if (c.ok()) c->timeout_ms = static_cast<int>(f.timeout_s * 1000);
  return c;
}

Status CheckName(const std::string& flag, const std::string& value) {
  if (deploy::IsK8sObjectName(value)) return Status::Ok();
  return Status::InvalidArg(
      fmt::format("{} '{}': not a Kubernetes object name (lower case letters, digits, '-' and '.')",
                  flag, value.substr(0, 64)));
}

struct PromoteArgs {
  ApiFlags api;
  std::string service, color, label = deploy::kColorLabel;
  std::string baseline_configmap, baseline_file, baseline_key = "baseline.json";
};

int RunPromote(const PromoteArgs& a, const GlobalOptions& g) {
  for (const auto& [flag, v] : {std::pair{"--service", a.service}, {"--color", a.color}}) {
    if (Status s = CheckName(flag, v); !s.ok()) return ReportError(s);
  }
  if (a.baseline_configmap.empty() != a.baseline_file.empty()) {
    return ReportError(Status::InvalidArg(
        "--baseline-configmap and --baseline-file go together (the run to store, and where)"));
  }
  std::string baseline;
  if (!a.baseline_file.empty()) {
    if (Status s = CheckName("--baseline-configmap", a.baseline_configmap); !s.ok()) {
      return ReportError(s);
    }
    // Read and check the run before anything changes: a switch followed by a failed store would
    // leave the next gate comparing against the old colour's numbers.
    auto run = common::LoadJsonFile(a.baseline_file);
    if (!run.ok()) return ReportError(run.status());
    baseline = run->dump(1) + "\n";
  }
  auto cfg = Resolve(a.api);
  if (!cfg.ok()) return ReportError(cfg.status());
  auto previous = deploy::SwitchServiceSelector(*cfg, a.service, a.label, a.color);
  if (!previous.ok()) return ReportError(previous.status());
  Status stored = Status::Ok();
  if (!baseline.empty()) {
    stored =
        deploy::StoreConfigMapValue(*cfg, a.baseline_configmap, a.baseline_key, baseline, a.color);
  }
  common::Json j = {{"namespace", cfg->namespace_name},
                    {"service", a.service},
                    {"label", a.label},
                    {"color", a.color},
                    {"previous", *previous},
                    {"baseline_configmap", a.baseline_configmap},
                    {"baseline_stored", !baseline.empty() && stored.ok()}};
  if (!stored.ok()) {
    return ReportError(
        Status(stored.code(),
               fmt::format("Service {} now selects {}={} (was {}), but storing the "
                           "baseline failed: {}",
                           a.service, a.label, a.color, *previous, stored.message())),
        j);
  }
  if (g.json) {
    PrintJson(j);
  } else {
    Print(fmt::format(
        "{}: Service {}/{} selects {}={} (was {}){}\n", Paint("PROMOTED", Tone::kPass),
        cfg->namespace_name, a.service, a.label, a.color, *previous,
        baseline.empty() ? ""
                         : fmt::format("; baseline stored in ConfigMap {}", a.baseline_configmap)));
  }
  return common::kExitOk;
}

struct WaitArgs {
  ApiFlags api;
  std::string deployment;
  double timeout_s = 900, interval_s = 5;
};

int RunWaitReady(const WaitArgs& a, const GlobalOptions& g) {
  if (Status s = CheckName("--deployment", a.deployment); !s.ok()) return ReportError(s);
  auto cfg = Resolve(a.api);
  if (!cfg.ok()) return ReportError(cfg.status());
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(a.timeout_s);
  std::string last;
  for (;;) {
    auto r = deploy::ReadDeploymentRollout(*cfg, a.deployment);
    // A refusal (RBAC, no such Deployment) will not heal by waiting; a network blip may.
    if (!r.ok() && r.status().code() != common::StatusCode::kUnavailable) {
      return ReportError(r.status());
    }
    const std::string detail = r.ok() ? r->detail : r.status().message();
    if (detail != last) {
      common::WriteStderrLine(
          "info", fmt::format("truegreen k8s wait-ready: Deployment {}: {}", a.deployment, detail));
      last = detail;
    }
    if (r.ok() && r->complete) {
      if (g.json) {
        PrintJson({{"deployment", a.deployment},
                   {"namespace", cfg->namespace_name},
                   {"ready", true},
                   {"detail", detail}});
      } else {
        Print(fmt::format("{}: Deployment {}/{}: {}\n", Paint("READY", Tone::kPass),
                          cfg->namespace_name, a.deployment, detail));
      }
      return common::kExitOk;
    }
    if (Clock::now() >= deadline) {
      return ReportError(
          Status::Unavailable(fmt::format("Deployment {}/{} not ready after {} s: {}",
                                          cfg->namespace_name, a.deployment, a.timeout_s, detail)),
          {{"deployment", a.deployment}, {"ready", false}});
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(a.interval_s));
  }
}

}  // namespace

void RegisterK8sApiCommands(CLI::App& group, GlobalOptions& g, CommandRegistry& r) {
  auto pa = std::make_shared<PromoteArgs>();
  CLI::App* promote = group.add_subcommand(
      "promote",
      "Switch a blue-green Service's selector to a colour and store that colour's bench run as "
      "the baseline (the gate Job's last step; docs/DEPLOY.md)");
  promote->add_option("--service", pa->service, "The Service that carries user traffic")
      ->required()
      ->type_name("NAME");
  promote->add_option("--color", pa->color, "The colour to make live")
      ->required()
      ->type_name("NAME");
  promote
      ->add_option("--selector-label", pa->label,
                   "Selector label naming the colour (default truegreen.dev/color)")
      ->type_name("KEY");
  promote
      ->add_option("--baseline-configmap", pa->baseline_configmap,
                   "ConfigMap that holds the live colour's baseline run (key baseline.json)")
      ->type_name("NAME");
  promote
      ->add_option("--baseline-file", pa->baseline_file,
                   "The promoted colour's bench run (JSON file) to store as the new baseline")
      ->type_name("FILE");
  AddApiFlags(promote, pa->api);
  r.Add(promote, [pa, &g] { return RunPromote(*pa, g); });

  auto wa = std::make_shared<WaitArgs>();
  CLI::App* wait = group.add_subcommand(
      "wait-ready",
      "Wait until a Deployment's rollout is complete: every replica updated, ready and available "
      "(exit 3 on timeout)");
  wait->add_option("--deployment", wa->deployment, "Deployment name")
      ->required()
      ->type_name("NAME");
  wait->add_option("--timeout-s", wa->timeout_s, "Give up after this many seconds (default 900)")
      ->check(CLI::Range(0.0, 86400.0))
      ->type_name("SECONDS");
  wait->add_option("--interval-s", wa->interval_s, "Seconds between polls (default 5)")
      ->check(CLI::Range(0.05, 600.0))
      ->type_name("SECONDS");
  AddApiFlags(wait, wa->api);
  r.Add(wait, [wa, &g] { return RunWaitReady(*wa, g); });
}

}  // namespace tg::cli
