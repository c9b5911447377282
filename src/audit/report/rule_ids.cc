// A flat sorted table: the id set is small (under 100) and fixed at build time.
#include "audit/report/rule_ids.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "common/strings.h"

namespace tg::audit {

namespace {

// Every id an audit can emit (kept in step with the sources by hostile_audit_test).
constexpr std::string_view kRuleIds[] = {
    "audit.findings-truncated",
    "dockerfile.add-url",
    "dockerfile.apt-recommends",
    "dockerfile.base-digest",
    "dockerfile.base-tag",
    "dockerfile.cd",
    "dockerfile.cuda-compat",
    "dockerfile.cuda-stubs",
    "dockerfile.dockerignore",
    "dockerfile.dockerignore-coverage",
    "dockerfile.expose-range",
    "dockerfile.maintainer",
    "dockerfile.multi-stage",
    "dockerfile.package-cache",
    "dockerfile.password-literal",
    "dockerfile.pipe-to-shell",
    "dockerfile.runtime-build-tools",
    "dockerfile.runtime-devel-base",
    "dockerfile.secret-env",
    "dockerfile.sudo",
    "dockerfile.user-root",
    "image.budget",
    "image.budget.compressed",
    "image.budget.layer",
    "image.build-tools",
    "image.caches",
    "image.dev-packages",
    "image.digest-mismatch",
    "image.digest-unverified",
    "image.efficiency",
    "image.gpu.cuda-version",
    "image.gpu.disable-require",
    "image.gpu.driver-capabilities",
    "image.gpu.driver-libs",
    "image.gpu.needed",
    "image.gpu.needed-unchecked",
    "image.gpu.require-cuda",
    "image.gpu.visible-devices",
    "image.hardlink-broken",
    "image.headers",
    "image.history-mismatch",
    "image.hostile.absolute-path",
    "image.hostile.bomb",
    "image.hostile.entry-limit",
    "image.hostile.path-traversal",
    "image.hostile.size-limit",
    "image.hostile.symlink-loop",
    "image.layer-compression-mismatch",
    "image.layer-media-type",
    "image.layer-nested-compression",
    "image.matrix",
    "image.notebooks",
    "image.ort.layout",
    "image.ort.pair",
    "image.ort.unchecked",
    "image.secrets",
    "image.tests",
    "image.user-wasted-percent",
    "image.vcs",
    "image.wasted-bytes",
    "k8s.capabilities",
    "k8s.cuda-stubs",
    "k8s.gpu-request",
    "k8s.host-namespaces",
    "k8s.host-path",
    "k8s.image-digest",
    "k8s.no-workload",
    "k8s.node-affinity",
    "k8s.not-audited",
    "k8s.privilege-escalation",
    "k8s.privileged",
    "k8s.probes",
    "k8s.readonly-cache",
    "k8s.resources",
    "k8s.run-as-non-root",
    "k8s.runtime-class",
    "k8s.secret-env",
    "k8s.visible-devices-all",
};

}  // namespace

const std::vector<std::string_view>& AuditRuleIds() {
  static const std::vector<std::string_view> k = [] {
    std::vector<std::string_view> v(std::begin(kRuleIds), std::end(kRuleIds));
    std::sort(v.begin(), v.end());
    return v;
  }();
  return k;
}

bool IsAuditRuleId(std::string_view id) {
  const auto& v = AuditRuleIds();
  return std::binary_search(v.begin(), v.end(), id);
}

std::string ClosestAuditRuleId(std::string_view id) {
  if (id.size() > 80) return "";
  std::string best;
  std::size_t best_d = 4;
  for (std::string_view k : AuditRuleIds()) {
    const std::size_t d = common::EditDistance(id, k);
    if (d < best_d) {
      best_d = d;
      best = std::string(k);
    }
  }
  return best;
}

std::vector<std::string> UnknownRuleWarnings(const Suppressions& s, std::size_t max_listed) {
  std::vector<std::string> out;
  std::size_t unknown = 0;
  for (const Suppression& e : s.entries) {
    if (IsAuditRuleId(e.rule)) continue;
    if (++unknown > max_listed) continue;
    const std::string near = ClosestAuditRuleId(e.rule);
    // The id is user text: cut it so a huge id cannot make a huge warning.
    const std::string shown = e.rule.size() > 80 ? e.rule.substr(0, 80) + "..." : e.rule;
    out.push_back(fmt::format(
        "{}:{}: unknown rule id '{}': no audit reports it, so this suppression matches nothing{}",
        s.source, e.line, shown, near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near)));
  }
  if (unknown > max_listed) {
    out.push_back(fmt::format("{}: {} more suppression(s) with unknown rule ids not listed",
                              s.source, unknown - max_listed));
  }
  return out;
}

}  // namespace tg::audit
