// Pod security and GPU-isolation rules (k8s_security.h) through AuditK8sText: each rule positive
// and negative on a pod that otherwise passes, with its severity.
#include "audit/k8s/k8s_security.h"

#include <gtest/gtest.h>

#include "audit/k8s/k8s_audit.h"

namespace tg::audit {
namespace {

const std::string kDigest = "@sha256:" + std::string(64, 'd');
const std::string kGpu = ", nvidia.com/gpu: \"1\"";

// A GPU pod that passes every rule; `pod` and `ctr` are inserted into the pod spec and the
// container.
std::string Pod(const std::string& pod = "", const std::string& ctr = "",
                const std::string& limits = ", nvidia.com/gpu: \"1\"",
                const std::string& csc =
                    "{allowPrivilegeEscalation: false, "
                    "readOnlyRootFilesystem: true}") {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
         "  securityContext: {runAsNonRoot: true}\n" +
         pod +
         "  containers:\n"
         "    - name: c\n"
         "      image: app" +
         kDigest +
         "\n"
         "      securityContext: " +
         csc +
         "\n"
         "      resources: {requests: {cpu: \"1\", memory: 1Gi}, limits: {memory: 1Gi" +
         limits + "}}\n" + ctr;
}

std::string Replace(const std::string& from, const std::string& to, std::string s) {
  std::size_t p = s.find(from);
  EXPECT_NE(p, std::string::npos) << from;
  if (p != std::string::npos) s.replace(p, from.size(), to);
  return s;
}

struct Case {
  const char* name;
  std::string yaml;
  const char* rule;
  bool expect;
  Severity severity = Severity::kError;
  std::string runtime_class = "";
};

const K8sFinding* Find(const K8sAuditReport& r, const std::string& rule) {
  for (const auto& f : r.findings) {
    if (f.finding.rule == rule) return &f;
  }
  return nullptr;
}

TEST(K8sSecurity, EveryRulePositiveAndNegative) {
  // The pod's probes are not required (a Pod without GPU env is not "long running GPU" unless it
  // has a GPU limit), so probes are added to keep the clean case clean.
  const std::string probes =
      "      startupProbe: {httpGet: {path: /readyz, port: 80}}\n"
      "      readinessProbe: {httpGet: {path: /readyz, port: 80}}\n"
      "      livenessProbe: {httpGet: {path: /healthz, port: 80}}\n";
  std::vector<Case> cases = {
      {"clean", Pod("", probes), "", false},
      {"privileged", Pod("", probes, kGpu, "{privileged: true, allowPrivilegeEscalation: false}"),
       "k8s.privileged", true},
      {"escalation true", Pod("", probes, kGpu, "{allowPrivilegeEscalation: true}"),
       "k8s.privilege-escalation", true},
      {"escalation unset", Pod("", probes, kGpu, "{runAsUser: 1000}"), "k8s.privilege-escalation",
       true, Severity::kWarning},
      {"cap SYS_ADMIN",
       Pod("", probes, kGpu, "{allowPrivilegeEscalation: false, capabilities: {add: [SYS_ADMIN]}}"),
       "k8s.capabilities", true},
      {"cap NET_BIND_SERVICE",
       Pod("", probes, kGpu,
           "{allowPrivilegeEscalation: false, capabilities: {add: [NET_BIND_SERVICE]}}"),
       "k8s.capabilities", false},
      {"hostPath", Pod("  volumes: [{name: h, hostPath: {path: /var/run}}]\n", probes),
       "k8s.host-path", true},
      {"emptyDir", Pod("  volumes: [{name: h, emptyDir: {}}]\n", probes), "k8s.host-path", false},
      {"hostNetwork", Pod("  hostNetwork: true\n", probes), "k8s.host-namespaces", true},
      {"hostPID", Pod("  hostPID: true\n", probes), "k8s.host-namespaces", true},
      {"hostIPC", Pod("  hostIPC: true\n", probes), "k8s.host-namespaces", true},
      {"hostNetwork false", Pod("  hostNetwork: false\n", probes), "k8s.host-namespaces", false},
      {"runAsUser 0", Pod("", probes, kGpu, "{allowPrivilegeEscalation: false, runAsUser: 0}"),
       "k8s.run-as-non-root", true},
      {"no runAsNonRoot", Replace("  securityContext: {runAsNonRoot: true}\n", "", Pod("", probes)),
       "k8s.run-as-non-root", true, Severity::kWarning},
      {"visible devices void without gpu (no injection: not a leak)",
       Pod("", "      env: [{name: NVIDIA_VISIBLE_DEVICES, value: void}]\n" + probes, ""),
       "k8s.visible-devices-all", false},
      {"visible devices all without gpu",
       Pod("", "      env: [{name: NVIDIA_VISIBLE_DEVICES, value: all}]\n" + probes, ""),
       "k8s.visible-devices-all", true},
      {"visible devices all with gpu",
       Pod("", "      env: [{name: NVIDIA_VISIBLE_DEVICES, value: all}]\n" + probes),
       "k8s.visible-devices-all", false},
      {"runtime class missing", Pod("", probes), "k8s.runtime-class", true, Severity::kError,
       "nvidia"},
      {"runtime class wrong", Pod("  runtimeClassName: runc\n", probes), "k8s.runtime-class", true,
       Severity::kError, "nvidia"},
      {"runtime class set", Pod("  runtimeClassName: nvidia\n", probes), "k8s.runtime-class", false,
       Severity::kError, "nvidia"},
      {"runtime class, no gpu", Pod("", "", ""), "k8s.runtime-class", false, Severity::kError,
       "nvidia"},
      {"engine cache on read-only root",
       Pod("", "      env: [{name: ORT_TENSORRT_ENGINE_CACHE_PATH, value: /cache/trt}]\n" + probes),
       "k8s.readonly-cache", true},
      {"engine cache arg on read-only root",
       Pod("", "      args: [\"--provider-option=trt_engine_cache_path=/var/trt\"]\n" + probes),
       "k8s.readonly-cache", true},
      {"engine cache with volume",
       Pod("  volumes: [{name: cache, emptyDir: {}}]\n",
           "      env: [{name: ORT_TENSORRT_ENGINE_CACHE_PATH, value: /cache/trt}]\n"
           "      volumeMounts: [{name: cache, mountPath: /cache}]\n" +
               probes),
       "k8s.readonly-cache", false},
      {"engine cache under a read-only volume",
       Pod("  volumes: [{name: cache, emptyDir: {}}]\n",
           "      env: [{name: ORT_TENSORRT_ENGINE_CACHE_PATH, value: /cache/trt}]\n"
           "      volumeMounts: [{name: cache, mountPath: /cache, readOnly: true}]\n" +
               probes),
       "k8s.readonly-cache", true},
  };
  for (const Case& c : cases) {
    K8sAuditReport rep;
    K8sAuditOptions opts;
    opts.runtime_class = c.runtime_class;
    common::Status s = AuditK8sText(c.yaml, "m.yaml", opts, &rep);
    ASSERT_TRUE(s.ok()) << c.name << ": " << s.message() << "\n" << c.yaml;
    if (std::string(c.rule).empty()) {
      EXPECT_TRUE(rep.findings.empty()) << c.name << "\n" << K8sReportToText(rep);
      continue;
    }
    const K8sFinding* f = Find(rep, c.rule);
    EXPECT_EQ(f != nullptr, c.expect) << c.name << "\n" << K8sReportToText(rep) << c.yaml;
    if (f != nullptr && c.expect) {
      EXPECT_EQ(f->finding.severity, c.severity) << c.name;
      EXPECT_GT(f->finding.line, 0) << c.name;
    }
  }
}

}  // namespace
}  // namespace tg::audit
