// Kubernetes rules (a table of good and bad manifests, each rule positive and negative), node
// affinity against matrix requirements, kustomize images and bad input (`k8s render` output
// passing this audit is deploy/k8s_render_test.cc).
#include "audit/k8s/k8s_audit.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "audit/k8s/k8s_test_outcome.h"
#include "tests/support/test_util.h"

namespace tg::audit {
namespace {

const std::string kDigest = "@sha256:" + std::string(64, 'd');

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  std::size_t p = s.find(from);
  EXPECT_NE(p, std::string::npos) << "fixture lacks: " << from;
  if (p != std::string::npos) s.replace(p, from.size(), to);
  return s;
}

// A truegreen Deployment that passes every rule (without a matrix).
std::string GoodDeployment() {
  return "apiVersion: apps/v1\n"
         "kind: Deployment\n"
         "metadata:\n"
         "  name: tg\n"
         "spec:\n"
         "  template:\n"
         "    spec:\n"
         "      securityContext: {runAsNonRoot: true}\n"
         "      containers:\n"
         "        - name: server\n"
         "          image: truegreen" +
         kDigest +
         "\n"
         "          securityContext: {allowPrivilegeEscalation: false}\n"
         "          env:\n"
         "            - name: NVIDIA_DRIVER_CAPABILITIES\n"
         "              value: compute,utility\n"
         "          resources:\n"
         "            requests: {cpu: \"2\", memory: 8Gi}\n"
         "            limits: {memory: 8Gi, nvidia.com/gpu: \"1\"}\n"
         "          startupProbe: {httpGet: {path: /readyz, port: http}}\n"
         "          readinessProbe: {httpGet: {path: /readyz, port: http}}\n"
         "          livenessProbe: {httpGet: {path: /healthz, port: http}}\n";
}

using Result = test::K8sOutcome;

Result Audit(const std::string& yaml, std::optional<GpuNodeRequirements> req = std::nullopt,
             const std::vector<KustomizeImage>& images = {}) {
  Result r;
  K8sAuditOptions opts;
  opts.requirements = req;
  r.status = AuditK8sText(yaml, "m.yaml", opts, &r.report, images);
  return r;
}

TEST(K8sAudit, GoodDeploymentPasses) {
  Result r = Audit(GoodDeployment());
  ASSERT_TRUE(r.status.ok()) << r.Dump();
  EXPECT_TRUE(r.report.findings.empty()) << r.Dump();
  EXPECT_EQ(r.report.workloads, 1);
  EXPECT_EQ(r.report.containers, 1);
}

struct RuleCase {
  const char* name;
  std::string yaml;
  const char* rule;
  bool expect;
};

TEST(K8sAudit, RuleTable) {
  const std::string g = GoodDeployment();
  const std::string cpu_pod =
      "apiVersion: v1\nkind: Pod\nmetadata: {name: sidecar}\nspec:\n  containers:\n"
      "    - name: web\n      image: busybox" +
      kDigest +
      "\n"
      "      resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {memory: 64Mi}}\n";
  std::vector<RuleCase> cases = {
      // k8s.gpu-request
      {"no gpu limit", Replace(g, ", nvidia.com/gpu: \"1\"", ""), "k8s.gpu-request", true},
      {"gpu only in requests",
       Replace(Replace(g, ", nvidia.com/gpu: \"1\"", ""), "memory: 8Gi}\n            limits",
               "memory: 8Gi, nvidia.com/gpu: \"1\"}\n            limits"),
       "k8s.gpu-request", true},
      {"gpu limit zero", Replace(g, "nvidia.com/gpu: \"1\"", "nvidia.com/gpu: \"0\""),
       "k8s.gpu-request", true},
      {"mig slice", Replace(g, "nvidia.com/gpu: \"1\"", "nvidia.com/mig-1g.10gb: 1"),
       "k8s.gpu-request", false},
      {"cpu-only pod", cpu_pod, "k8s.gpu-request", false},
      {"cuda image without gpu",
       Replace(cpu_pod, "busybox", "nvidia/cuda:13.0.0-runtime-ubuntu24.04"), "k8s.gpu-request",
       true},
      {"ort provider in args",
       Replace(cpu_pod, "      resources",
               "      args: [--provider, CUDAExecutionProvider]\n      resources"),
       "k8s.gpu-request", true},
      // NVIDIA_VISIBLE_DEVICES=void opts out only for commands that need no GPU.
      {"truegreen bench with void devices",
       Replace(Replace(cpu_pod, "busybox", "truegreen"), "      resources",
               "      args: [bench, --url, \"http://tg-green:8000\"]\n"
               "      env: [{name: NVIDIA_VISIBLE_DEVICES, value: void}]\n      resources"),
       "k8s.gpu-request", false},
      {"truegreen k8s promote with void devices",
       Replace(Replace(cpu_pod, "busybox", "truegreen"), "      resources",
               "      command: [/usr/bin/truegreen, k8s, promote]\n"
               "      env: [{name: NVIDIA_VISIBLE_DEVICES, value: void}]\n      resources"),
       "k8s.gpu-request", false},
      {"truegreen serve with void devices",
       Replace(Replace(cpu_pod, "busybox", "truegreen"), "      resources",
               "      args: [serve, --models, /models]\n"
               "      env: [{name: NVIDIA_VISIBLE_DEVICES, value: void}]\n      resources"),
       "k8s.gpu-request", true},
      {"truegreen bench without the opt-out",
       Replace(Replace(cpu_pod, "busybox", "truegreen"), "      resources",
               "      args: [bench]\n      resources"),
       "k8s.gpu-request", true},
      {"truegreen global flag first with void devices",
       Replace(Replace(cpu_pod, "busybox", "truegreen"), "      resources",
               "      args: [--json, bench]\n"
               "      env: [{name: NVIDIA_VISIBLE_DEVICES, value: void}]\n      resources"),
       "k8s.gpu-request", true},
      // k8s.visible-devices-all
      {"visible all without gpu",
       Replace(cpu_pod, "      resources",
               "      env: [{name: NVIDIA_VISIBLE_DEVICES, value: all}]\n      resources"),
       "k8s.visible-devices-all", true},
      {"visible all with gpu",
       Replace(g, "value: compute,utility",
               "value: compute,utility\n"
               "            - name: NVIDIA_VISIBLE_DEVICES\n"
               "              value: all"),
       "k8s.visible-devices-all", false},
      {"visible void without gpu",
       Replace(cpu_pod, "      resources",
               "      env: [{name: NVIDIA_VISIBLE_DEVICES, value: void}]\n      resources"),
       "k8s.visible-devices-all", false},
      // k8s.probes
      {"liveness on readyz", Replace(g, "path: /healthz", "path: /readyz"), "k8s.probes", true},
      {"readiness elsewhere",
       Replace(g, "readinessProbe: {httpGet: {path: /readyz",
               "readinessProbe: {httpGet: {path: /ready"),
       "k8s.probes", true},
      {"no startup probe",
       Replace(g, "          startupProbe: {httpGet: {path: /readyz, port: http}}\n", ""),
       "k8s.probes", true},
      {"exec liveness on truegreen",
       Replace(g, "livenessProbe: {httpGet: {path: /healthz, port: http}}",
               "livenessProbe: {exec: {command: [truegreen, probe]}}"),
       "k8s.probes", true},
      {"job needs no probes",
       Replace(Replace(Replace(Replace(g, "kind: Deployment", "kind: Job"),
                               "          startupProbe: {httpGet: {path: /readyz, port: "
                               "http}}\n",
                               ""),
                       "          readinessProbe: {httpGet: {path: /readyz, port: http}}\n", ""),
               "          livenessProbe: {httpGet: {path: /healthz, port: http}}\n", ""),
       "k8s.probes", false},
      {"triton keeps its own paths",
       Replace(Replace(Replace(Replace(g, "image: truegreen", "image: tritonserver"),
                               "path: /healthz", "path: /v2/health/live"),
                       "startupProbe: {httpGet: {path: /readyz",
                       "startupProbe: {httpGet: {path: /v2/health/ready"),
               "readinessProbe: {httpGet: {path: /readyz",
               "readinessProbe: {httpGet: {path: /v2/health/ready"),
       "k8s.probes", false},
      {"cpu pod needs no probes", cpu_pod, "k8s.probes", false},
      // k8s.resources
      {"no cpu request", Replace(g, "cpu: \"2\", ", ""), "k8s.resources", true},
      {"no memory limit", Replace(g, "limits: {memory: 8Gi, ", "limits: {"), "k8s.resources", true},
      {"no resources at all",
       Replace(cpu_pod,
               "      resources: {requests: {cpu: 100m, memory: 64Mi}, limits: "
               "{memory: 64Mi}}\n",
               ""),
       "k8s.resources", true},
      {"resources complete", cpu_pod, "k8s.resources", false},
      // k8s.image-digest
      {"tag only", Replace(g, "truegreen" + kDigest, "truegreen:1.0"), "k8s.image-digest", true},
      {"digest and tag", Replace(g, "truegreen" + kDigest, "truegreen:1.0" + kDigest),
       "k8s.image-digest", false},
  };
  for (const auto& c : cases) {
    Result r = Audit(c.yaml);
    ASSERT_TRUE(r.status.ok()) << c.name << ": " << r.status.message();
    EXPECT_EQ(r.Has(c.rule), c.expect) << c.name << "\n" << c.yaml << r.Dump();
  }
}

TEST(K8sAudit, FindingsNameFileDocumentLineContainerField) {
  std::string two = "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n---\n" +
                    Replace(GoodDeployment(), "cpu: \"2\", ", "");
  Result r = Audit(two);
  ASSERT_TRUE(r.status.ok());
  const K8sFinding* f = r.First("k8s.resources");
  ASSERT_NE(f, nullptr) << r.Dump();
  EXPECT_EQ(f->finding.path, "m.yaml");
  EXPECT_EQ(f->document, 2);
  EXPECT_EQ(f->object, "Deployment/tg");
  EXPECT_EQ(f->container, "server");
  EXPECT_EQ(f->field, "spec.template.spec.containers[0].resources");
  EXPECT_EQ(f->finding.line, 4 + 17);  // first line of the resources mapping
  EXPECT_EQ(r.report.skipped.size(), 1u);
  common::Json j = K8sReportToJson(r.report);
  EXPECT_EQ(j["findings"][0]["document"], 2);
  EXPECT_EQ(j["findings"][0]["container"], "server");
}

TEST(K8sAudit, WorkloadKinds) {
  std::string pod_spec =
      "containers:\n- name: c\n  image: busybox" + kDigest +
      "\n"
      "  resources: {requests: {cpu: 1, memory: 1Gi}, limits: {memory: 1Gi}}\n"
      "  securityContext: {runAsNonRoot: true, allowPrivilegeEscalation: false}\n";
  auto indent = [](const std::string& s, int n) {
    std::string out, pad(n, ' ');
    std::size_t pos = 0;
    while (pos < s.size()) {
      std::size_t nl = s.find('\n', pos);
      out += pad + s.substr(pos, nl - pos + 1);
      pos = nl + 1;
    }
    return out;
  };
  std::string yaml =
      "kind: Pod\nspec:\n" + indent(pod_spec, 2) +
      "---\nkind: StatefulSet\nspec:\n  template:\n    spec:\n" + indent(pod_spec, 6) +
      "---\nkind: DaemonSet\nspec:\n  template:\n    spec:\n" + indent(pod_spec, 6) +
      "---\nkind: CronJob\nspec:\n  jobTemplate:\n    spec:\n      template:\n        spec:\n" +
      indent(pod_spec, 10) +
      "---\nkind: List\nitems:\n- kind: Job\n  spec:\n    template:\n      spec:\n" +
      indent(pod_spec, 8) + "---\nkind: PodMonitor\nspec: {}\n---\n";
  Result r = Audit(yaml);
  ASSERT_TRUE(r.status.ok()) << r.Dump();
  EXPECT_EQ(r.report.workloads, 5) << r.Dump();
  EXPECT_EQ(r.report.documents, 6);
  EXPECT_EQ(r.report.skipped.size(), 1u);
  EXPECT_TRUE(r.report.findings.empty()) << r.Dump();
  // The CronJob's container is really read: an unpinned image there is found.
  Result bad = Audit(Replace(yaml,
                             "kind: CronJob\nspec:\n  jobTemplate:\n    spec:\n      "
                             "template:\n        spec:\n          containers:\n          "
                             "- name: c\n            image: busybox" +
                                 kDigest,
                             "kind: CronJob\nspec:\n  jobTemplate:\n    spec:\n      "
                             "template:\n        spec:\n          containers:\n          "
                             "- name: c\n            image: busybox"));
  const K8sFinding* f = bad.First("k8s.image-digest");
  ASSERT_NE(f, nullptr) << bad.Dump();
  EXPECT_EQ(f->field, "spec.jobTemplate.spec.template.spec.containers[0].image");
}

TEST(K8sAudit, BadInput) {
  struct Case {
    std::string yaml;
    const char* want;
  } cases[] = {
      {"kind: Deployment\nspec: [unclosed\n", "invalid YAML"},
      {"a: b\n- c\n", "invalid YAML"},
      {"just a string\n", "not a Kubernetes object"},
      {"apiVersion: v1\nmetadata: {name: x}\n", "has no 'kind'"},
      {"kind: Deployment\nspec: {replicas: 1}\n", "has no pod spec"},
  };
  for (const auto& c : cases) {
    Result r = Audit(c.yaml);
    ASSERT_FALSE(r.status.ok()) << c.yaml;
    EXPECT_NE(r.status.message().find(c.want), std::string::npos) << r.status.message();
    EXPECT_NE(r.status.message().find("m.yaml"), std::string::npos) << r.status.message();
  }
  Result unknown = Audit("apiVersion: example.com/v1\nkind: Widget\nspec: {x: 1}\n");
  EXPECT_TRUE(unknown.status.ok());
  EXPECT_EQ(unknown.report.skipped.size(), 1u);
}

GpuNodeRequirements Req() {
  GpuNodeRequirements r;
  r.driver_major_min = 580;
  r.driver_text = "580.65.06";
  r.compute_major = 8;
  r.compute_minor = 6;
  r.memory_mib_min = 16384;
  r.device_count = 1;
  return r;
}

std::string WithAffinity(const std::string& terms_yaml) {
  return Replace(GoodDeployment(), "      containers:\n",
                 "      affinity:\n        nodeAffinity:\n"
                 "          requiredDuringSchedulingIgnoredDuringExecution:\n"
                 "            nodeSelectorTerms:\n" +
                     terms_yaml + "      containers:\n");
}

std::string Term(const std::vector<std::string>& exprs) {
  std::string t = "            - matchExpressions:\n";
  for (const auto& e : exprs) t += "                - " + e + "\n";
  return t;
}

TEST(K8sAudit, NodeAffinityAgainstMatrix) {
  const std::string drv =
      "{key: nvidia.com/cuda.driver-version.major, operator: Gt, values: "
      "[\"579\"]}";
  const std::string mem = "{key: nvidia.com/gpu.memory, operator: Gt, values: [\"16383\"]}";
  const std::string maj9 = "{key: nvidia.com/gpu.compute.major, operator: Gt, values: [\"8\"]}";
  const std::string maj8 = "{key: nvidia.com/gpu.compute.major, operator: In, values: [\"8\"]}";
  const std::string min6 = "{key: nvidia.com/gpu.compute.minor, operator: Gt, values: [\"5\"]}";
  struct Case {
    const char* name;
    std::string yaml;
    bool bad;
  } cases[] = {
      {"no affinity", GoodDeployment(), true},
      {"exact two terms", WithAffinity(Term({drv, mem, maj9}) + Term({drv, mem, maj8, min6})),
       false},
      {"driver too loose",
       WithAffinity(Term({"{key: nvidia.com/cuda.driver-version.major, operator: Gt, values: "
                          "[\"500\"]}",
                          mem, maj9})),
       true},
      {"driver In list with an old one",
       WithAffinity(Term({"{key: nvidia.com/cuda.driver-version.major, operator: In, values: "
                          "[\"580\", \"570\"]}",
                          mem, maj9})),
       true},
      {"driver NotIn only admits unlabelled nodes",
       WithAffinity(Term({"{key: nvidia.com/cuda.driver-version.major, operator: NotIn, values: "
                          "[\"570\"]}",
                          mem, maj9})),
       true},
      {"compute 8.0 admitted", WithAffinity(Term({drv, mem, maj8})), true},
      {"compute major > 7 admits 8.0",
       WithAffinity(
           Term({drv, mem, "{key: nvidia.com/gpu.compute.major, operator: Gt, values: [\"7\"]}"})),
       true},
      {"memory missing", WithAffinity(Term({drv, maj9})), true},
      {"second term loose", WithAffinity(Term({drv, mem, maj9}) + Term({mem, maj9})), true},
      {"nodeSelector exact values",
       Replace(GoodDeployment(), "      containers:\n",
               "      nodeSelector:\n        nvidia.com/cuda.driver-version.major: \"580\"\n"
               "        nvidia.com/gpu.compute.major: \"9\"\n"
               "        nvidia.com/gpu.memory: \"81559\"\n      containers:\n"),
       false},
  };
  for (const auto& c : cases) {
    Result r = Audit(c.yaml, Req());
    ASSERT_TRUE(r.status.ok()) << c.name << r.Dump();
    EXPECT_EQ(r.Has("k8s.node-affinity"), c.bad) << c.name << r.Dump();
  }
  // Without a matrix the rule does not run.
  EXPECT_FALSE(Audit(GoodDeployment()).Has("k8s.node-affinity"));
  // Device count from the matrix.
  GpuNodeRequirements two = Req();
  two.device_count = 2;
  Result r = Audit(WithAffinity(Term({drv, mem, maj9})), two);
  EXPECT_TRUE(r.Has("k8s.gpu-request")) << r.Dump();
}

TEST(K8sAudit, KustomizeImagesAndDirectories) {
  std::string unpinned = Replace(GoodDeployment(), "truegreen" + kDigest, "truegreen");
  EXPECT_TRUE(Audit(unpinned).Has("k8s.image-digest"));
  std::vector<KustomizeImage> images = {{"truegreen", "", "", "sha256:" + std::string(64, 'e')}};
  EXPECT_FALSE(Audit(unpinned, std::nullopt, images).Has("k8s.image-digest"));
  EXPECT_EQ(ApplyKustomizeImages("truegreen:1", {{"truegreen", "reg/truegreen", "2", ""}}),
            "reg/truegreen:2");
  EXPECT_EQ(ApplyKustomizeImages("other:1", images), "other:1");

  testing::TempDir dir;
  testing::WriteFile(dir / "base/deploy.yaml", unpinned);
  testing::WriteFile(dir / "base/kustomization.yaml", "resources: [deploy.yaml]\n");
  testing::WriteFile(dir / "overlay/kustomization.yaml",
                     "resources: [../base]\nimages:\n- name: truegreen\n  digest: sha256:" +
                         std::string(64, 'f') + "\n");
  K8sAuditReport base_rep;
  ASSERT_TRUE(AuditK8sPath(dir / "base", {}, &base_rep).ok());
  EXPECT_EQ(base_rep.findings.size(), 1u);
  K8sAuditReport overlay_rep;
  common::Status s = AuditK8sPath(dir / "overlay", {}, &overlay_rep);
  ASSERT_TRUE(s.ok()) << s.message();
  // The overlay's images transformer applies to its base's resources too.
  EXPECT_EQ(overlay_rep.workloads, 1);
  EXPECT_TRUE(overlay_rep.findings.empty()) << K8sReportToText(overlay_rep);

  K8sAuditReport none;
  common::Status missing = AuditK8sPath(dir / "nope.yaml", {}, &none);
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("nope.yaml"), std::string::npos);
  common::Status no_k = AuditK8sPath(dir.path(), {}, &none);
  EXPECT_FALSE(no_k.ok());
  EXPECT_NE(no_k.message().find("kustomization.yaml"), std::string::npos);
}

}  // namespace
}  // namespace tg::audit

namespace tg::audit {
namespace {

TEST(K8sAudit, HostileValuesAreSurvived) {
  std::string huge_image(200000, 'a');
  std::string yaml = Replace(GoodDeployment(), "truegreen" + kDigest, huge_image);
  Result r = Audit(yaml);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_TRUE(r.Has("k8s.image-digest"));
  GpuNodeRequirements req;
  req.driver_major_min = 580;
  Result big = Audit(WithAffinity(Term({"{key: nvidia.com/cuda.driver-version.major, operator: "
                                        "In, values: [\"9223372036854775807\", "
                                        "\"99999999999999999999999\", \"x\"]}"})),
                     req);
  ASSERT_TRUE(big.status.ok());
  EXPECT_FALSE(big.Has("k8s.node-affinity")) << big.Dump();
}

}  // namespace
}  // namespace tg::audit
