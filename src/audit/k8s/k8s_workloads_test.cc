// Pod templates of well-known custom resources are audited at their documented paths, unknown
// kinds with pods are k8s.not-audited (never a pass), a file without workloads says so, roles
// choose the rules (system components, the override annotation), and the env literal rules.
#include "audit/k8s/k8s_workloads.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "audit/k8s/k8s_audit.h"
#include "audit/k8s/k8s_test_outcome.h"
#include "audit/report/report_format.h"
#include "audit/report/secret_shape.h"

namespace tg::audit {
namespace {

const std::string kDigest = "@sha256:" + std::string(64, 'e');

// A container that passes every rule of an inference server; `extra` is more keys at its indent.
std::string Container(const std::string& indent, const std::string& name,
                      const std::string& extra = "") {
  const std::string& i = indent;
  return i + "- name: " + name + "\n" + i + "  image: nvcr.io/nvidia/tritonserver" + kDigest +
         "\n" + i + "  securityContext: {allowPrivilegeEscalation: false, runAsNonRoot: true}\n" +
         i + "  resources:\n" + i + "    requests: {cpu: \"2\", memory: 8Gi}\n" + i +
         "    limits: {memory: 8Gi, nvidia.com/gpu: 1}\n" + i +
         "  startupProbe: {httpGet: {path: /v2/health/ready, port: 8000}}\n" + i +
         "  readinessProbe: {httpGet: {path: /v2/health/ready, port: 8000}}\n" + i +
         "  livenessProbe: {httpGet: {path: /v2/health/live, port: 8000}}\n" + extra;
}

using Outcome = test::K8sOutcome;

Outcome Audit(const std::string& yaml) {
  Outcome r;
  r.status = AuditK8sText(yaml, "cr.yaml", {}, &r.report);
  if (r.status.ok()) AddCoverageFindings(&r.report);
  return r;
}

struct CrCase {
  const char* name;
  std::string yaml;
  std::vector<std::string> paths;  // pod spec paths that must be audited
};

std::vector<CrCase> CrCases() {
  const std::string c8 = Container("        ", "c");
  const std::string c10 = Container("          ", "c");
  const std::string c12 = Container("            ", "c");
  return {
      {"RayCluster",
       "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata: {name: r}\nspec:\n"
       "  headGroupSpec:\n    template:\n      spec:\n        containers:\n" +
           c8 +
           "  workerGroupSpecs:\n  - groupName: g\n    template:\n      spec:\n"
           "        containers:\n" +
           c8,
       {"spec.headGroupSpec.template.spec", "spec.workerGroupSpecs[0].template.spec"}},
      {"RayService",
       "apiVersion: ray.io/v1\nkind: RayService\nmetadata: {name: r}\nspec:\n"
       "  rayClusterConfig:\n    headGroupSpec:\n      template:\n        spec:\n"
       "          containers:\n" +
           c10,
       {"spec.rayClusterConfig.headGroupSpec.template.spec"}},
      {"InferenceService",
       "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata: {name: i}\n"
       "spec:\n  predictor:\n    containers:\n" +
           Container("      ", "kserve-container"),
       {"spec.predictor"}},
      {"Argo Rollout",
       "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: r}\nspec:\n"
       "  template:\n    spec:\n      containers:\n" +
           Container("        ", "c"),
       {"spec.template.spec"}},
      {"Knative Service",
       "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: k}\nspec:\n"
       "  template:\n    spec:\n      containers:\n" +
           Container("        ", "c"),
       {"spec.template.spec"}},
      {"PyTorchJob",
       "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: p}\nspec:\n"
       "  pytorchReplicaSpecs:\n    Master:\n      template:\n        spec:\n"
       "          containers:\n" +
           c10 + "    Worker:\n      template:\n        spec:\n          containers:\n" + c10,
       {"spec.pytorchReplicaSpecs.Master.template.spec",
        "spec.pytorchReplicaSpecs.Worker.template.spec"}},
      {"Volcano Job",
       "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: v}\nspec:\n"
       "  tasks:\n  - name: t\n    template:\n      spec:\n        containers:\n" +
           c8,
       {"spec.tasks[0].template.spec"}},
      {"JobSet",
       "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: j}\nspec:\n"
       "  replicatedJobs:\n  - name: w\n    template:\n      spec:\n        template:\n"
       "          spec:\n            containers:\n" +
           c12,
       {"spec.replicatedJobs[0].template.spec.template.spec"}},
      {"LeaderWorkerSet",
       "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {name: l}\n"
       "spec:\n  leaderWorkerTemplate:\n    leaderTemplate:\n      spec:\n        containers:\n" +
           c8 + "    workerTemplate:\n      spec:\n        containers:\n" + c8,
       {"spec.leaderWorkerTemplate.leaderTemplate.spec",
        "spec.leaderWorkerTemplate.workerTemplate.spec"}},
  };
}

TEST(K8sWorkloads, WellKnownCustomResourcesAreAuditedAtTheirPaths) {
  for (const CrCase& c : CrCases()) {
    SCOPED_TRACE(c.name);
    Outcome clean = Audit(c.yaml);
    ASSERT_TRUE(clean.status.ok()) << clean.Dump();
    std::vector<std::string> got;
    for (const auto& a : clean.report.audited) got.push_back(a.path);
    EXPECT_EQ(got, c.paths) << clean.Dump();
    EXPECT_FALSE(clean.Fails()) << clean.Dump();
    EXPECT_FALSE(clean.Has("k8s.not-audited"));
    // The same object with an unpinned image fails at the CR's own path: the pods were read.
    std::string bad = c.yaml;
    bad.replace(bad.find(kDigest), kDigest.size(), ":latest");
    Outcome b = Audit(bad);
    ASSERT_TRUE(b.status.ok()) << b.Dump();
    const K8sFinding* f = b.First("k8s.image-digest");
    ASSERT_NE(f, nullptr) << b.Dump();
    EXPECT_EQ(f->field, c.paths[0] + ".containers[0].image");
  }
}

TEST(K8sWorkloads, KServeModelIsAContainerWhoseImageTheRuntimeSupplies) {
  Outcome r = Audit(
      "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata: {name: sd}\n"
      "spec:\n  predictor:\n    model:\n      modelFormat: {name: onnx}\n"
      "      storageUri: pvc://models/sd\n      env:\n      - name: NVIDIA_VISIBLE_DEVICES\n"
      "        value: all\n");
  ASSERT_TRUE(r.status.ok()) << r.Dump();
  ASSERT_EQ(r.report.audited.size(), 1u);
  EXPECT_EQ(r.report.audited[0].path, "spec.predictor");
  EXPECT_FALSE(r.Has("k8s.image-digest")) << r.Dump();  // the ServingRuntime names the image
  const K8sFinding* f = r.First("k8s.gpu-request");
  ASSERT_NE(f, nullptr) << r.Dump();
  EXPECT_EQ(f->field, "spec.predictor.model.resources.limits");
  EXPECT_TRUE(r.Has("k8s.resources"));
}

TEST(K8sWorkloads, UnknownKindWithPodsIsNotAuditedAndFails) {
  Outcome r = Audit(
      "apiVersion: example.com/v1\nkind: GpuRunner\nmetadata: {name: g}\nspec:\n  runner:\n"
      "    template:\n      spec:\n        containers:\n        - name: x\n"
      "          image: nvcr.io/nvidia/tritonserver:24.05-py3\n");
  ASSERT_TRUE(r.status.ok()) << r.Dump();
  const K8sFinding* f = r.First("k8s.not-audited");
  ASSERT_NE(f, nullptr) << r.Dump();
  EXPECT_EQ(f->finding.severity, Severity::kError);
  EXPECT_NE(f->finding.message.find("spec.runner.template.spec"), std::string::npos);
  EXPECT_NE(f->finding.message.find("example.com/v1"), std::string::npos);
  EXPECT_TRUE(r.Fails());
  EXPECT_EQ(r.report.workloads, 0);
  ASSERT_EQ(r.report.not_audited.size(), 1u);
  EXPECT_FALSE(r.Has("k8s.no-workload"));  // not "nothing there": something was not read
}

TEST(K8sWorkloads, KnownKindsFromOtherGroupsAreNotTheCoreKinds) {
  // A core Service has no pods; a Volcano Job is not a batch/v1 Job (no spec.template).
  Outcome svc = Audit("apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: []}\n");
  ASSERT_TRUE(svc.status.ok()) << svc.Dump();
  EXPECT_EQ(svc.report.skipped.size(), 1u);
  Outcome bad_core =
      Audit("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  tasks: []\n");
  EXPECT_FALSE(bad_core.status.ok());
  EXPECT_NE(bad_core.status.message().find("spec.template.spec"), std::string::npos)
      << bad_core.status.message();
}

TEST(K8sWorkloads, RolloutWithWorkloadRefIsSkippedWithTheReason) {
  Outcome r = Audit(
      "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: r}\nspec:\n"
      "  workloadRef: {apiVersion: apps/v1, kind: Deployment, name: sd}\n");
  ASSERT_TRUE(r.status.ok()) << r.Dump();
  ASSERT_EQ(r.report.skipped.size(), 1u);
  EXPECT_NE(r.report.skipped[0].find("Deployment 'sd'"), std::string::npos);
}

TEST(K8sWorkloads, FileWithoutWorkloadSaysSo) {
  Outcome r = Audit(
      "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: []}\n---\n"
      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n");
  ASSERT_TRUE(r.status.ok()) << r.Dump();
  const K8sFinding* f = r.First("k8s.no-workload");
  ASSERT_NE(f, nullptr) << r.Dump();
  EXPECT_EQ(f->finding.severity, Severity::kInfo);
  EXPECT_NE(f->finding.message.find("2 object(s)"), std::string::npos);
}

std::string DevicePlugin(const std::string& annotations = "") {
  return "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: nvidia-device-plugin\n" +
         annotations +
         "spec:\n  template:\n    spec:\n      containers:\n"
         "      - name: ctr\n        image: nvcr.io/nvidia/k8s-device-plugin:v0.17.0\n"
         "        env:\n        - {name: NVIDIA_VISIBLE_DEVICES, value: all}\n"
         "        securityContext: {privileged: true}\n"
         "        volumeMounts: [{name: dp, mountPath: /var/lib/kubelet/device-plugins}]\n"
         "      volumes:\n      - name: dp\n"
         "        hostPath: {path: /var/lib/kubelet/device-plugins}\n";
}

TEST(K8sWorkloads, DevicePluginIsJudgedAsASystemComponent) {
  Outcome r = Audit(DevicePlugin());
  ASSERT_TRUE(r.status.ok()) << r.Dump();
  ASSERT_EQ(r.report.audited.size(), 1u);
  EXPECT_EQ(r.report.audited[0].role, "system");
  EXPECT_NE(r.report.audited[0].reason.find("device-plugin socket"), std::string::npos);
  for (const char* rule : {"k8s.gpu-request", "k8s.probes", "k8s.visible-devices-all"}) {
    EXPECT_FALSE(r.Has(rule)) << rule << "\n" << r.Dump();
  }
  for (const char* rule : {"k8s.host-path", "k8s.privileged"}) {
    const K8sFinding* f = r.First(rule);
    ASSERT_NE(f, nullptr) << rule;
    EXPECT_EQ(f->finding.severity, Severity::kInfo) << rule;
  }
  // Pinned and limited still hold.
  EXPECT_EQ(r.First("k8s.image-digest")->finding.severity, Severity::kError);
  EXPECT_EQ(r.First("k8s.resources")->finding.severity, Severity::kError);
}

TEST(K8sWorkloads, SystemImagesAreRecognisedWithoutTheSocket) {
  for (const char* image : {"nvcr.io/nvidia/gpu-feature-discovery:v0.8.2",
                            "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.0-ubuntu22.04",
                            "nvcr.io/nvidia/driver:550.54.15-ubuntu22.04",
                            "nvcr.io/nvidia/k8s/container-toolkit:v1.15.0"}) {
    SCOPED_TRACE(image);
    EXPECT_FALSE(SystemComponentOfImage(image).empty());
    Outcome r = Audit(
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: d}\nspec:\n"
        "  template:\n    spec:\n      containers:\n      - name: c\n        image: " +
        std::string(image) + "\n");
    ASSERT_TRUE(r.status.ok()) << r.Dump();
    EXPECT_EQ(r.report.audited.at(0).role, "system");
    EXPECT_FALSE(r.Has("k8s.gpu-request")) << r.Dump();
  }
  for (const char* image : {"nvcr.io/nvidia/tritonserver:24.05-py3", "nvidia/cuda:12.4.1-base",
                            "example.com/driver:1", "example.com/gpu-operator-demo:1"}) {
    EXPECT_EQ(SystemComponentOfImage(image), "") << image;
  }
}

TEST(K8sWorkloads, RoleAnnotationOverridesAndBadValuesAreRefused) {
  Outcome r = Audit(DevicePlugin("  annotations: {truegreen.dev/role: inference-server}\n"));
  ASSERT_TRUE(r.status.ok()) << r.Dump();
  EXPECT_EQ(r.report.audited.at(0).role, "inference-server");
  EXPECT_EQ(r.First("k8s.privileged")->finding.severity, Severity::kError);
  EXPECT_TRUE(r.Has("k8s.probes"));
  Outcome bad = Audit(DevicePlugin("  annotations: {truegreen.dev/role: daemon}\n"));
  ASSERT_FALSE(bad.status.ok());
  EXPECT_NE(bad.status.message().find("cr.yaml:5"), std::string::npos) << bad.status.message();
  EXPECT_NE(bad.status.message().find("inference-server, batch or system"), std::string::npos);
  // A plain GPU Deployment stays an inference server; a Job is batch (no probes).
  Outcome job = Audit(
      "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n"
      "    spec:\n      containers:\n" +
      Container("      ", "c").substr(0, Container("      ", "c").find("      startupProbe")));
  ASSERT_TRUE(job.status.ok()) << job.Dump();
  EXPECT_EQ(job.report.audited.at(0).role, "batch");
  EXPECT_FALSE(job.Has("k8s.probes"));
}

std::string WithEnv(const std::string& name, const std::string& value) {
  return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n" +
         Container("  ", "c",
                   "    env:\n    - name: " + name + "\n      value: \"" + value + "\"\n");
}

TEST(K8sWorkloads, LiteralSecretsInEnvByNameAndByShape) {
  struct Case {
    std::string name, value;
    bool expect;
  };
  std::vector<Case> cases = {
      {"HF_TOKEN", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", true},
      {"MODEL_SOURCE", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", true},  // shape, any name
      {"NGC_API_KEY", "nvapi-" + std::string(30, 'a') + std::string(30, '7'), true},
      {"DB_PASSWORD", "hunter2", true},
      {"AWS_X", "AKIAIOSFODNN7EXAMPLE", true},
      {"HF_TOKEN", "$(HF_TOKEN_FROM_SECRET)", false},
      {"HF_TOKEN", "", false},
      {"HF_TOKEN_FILE", "/var/run/secrets/hf", false},
      {"MODEL", "hf_your_token_here_your_token_here", false},  // placeholder: no digits
      {"CUDA_VISIBLE_DEVICES", "0", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name + "=" + c.value);
    Outcome r = Audit(WithEnv(c.name, c.value));
    ASSERT_TRUE(r.status.ok()) << r.Dump();
    EXPECT_EQ(r.Has("k8s.secret-env"), c.expect) << r.Dump();
    if (c.expect) {
      const K8sFinding* f = r.First("k8s.secret-env");
      EXPECT_EQ(f->field, "spec.containers[0].env[0].value");
      EXPECT_EQ(f->finding.message.find(c.value), std::string::npos) << "the value is quoted";
    }
  }
  // valueFrom is the fix: no literal, no finding.
  Outcome ok = Audit("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n" +
                     Container("  ", "c",
                               "    env:\n    - name: HF_TOKEN\n      valueFrom: {secretKeyRef: "
                               "{name: hf, key: token}}\n"));
  EXPECT_FALSE(ok.Has("k8s.secret-env")) << ok.Dump();
}

TEST(K8sWorkloads, CudaStubsOnLdLibraryPath) {
  Outcome bad = Audit(WithEnv("LD_LIBRARY_PATH", "/usr/local/cuda/lib64/stubs:/usr/lib"));
  ASSERT_TRUE(bad.status.ok()) << bad.Dump();
  EXPECT_TRUE(bad.Has("k8s.cuda-stubs")) << bad.Dump();
  Outcome good = Audit(WithEnv("LD_LIBRARY_PATH", "/usr/local/cuda/lib64:/opt/stubsmith/lib"));
  EXPECT_FALSE(good.Has("k8s.cuda-stubs")) << good.Dump();
}

TEST(SecretShape, NamesAndValues) {
  EXPECT_TRUE(LooksSecretName("HF_TOKEN"));
  EXPECT_TRUE(LooksSecretName("NGC_API_KEY"));
  EXPECT_FALSE(LooksSecretName("PUBLIC_KEY"));
  EXPECT_FALSE(LooksSecretName("TOKENIZER"));
  EXPECT_NE(SecretValueShape("ghp_" + std::string(20, 'a') + "0123456789"), "");
  EXPECT_NE(SecretValueShape("-----BEGIN RSA PRIVATE KEY-----\nMIIE"), "");
  EXPECT_NE(SecretValueShape("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijkl"), "");
  EXPECT_EQ(SecretValueShape("sha256:" + std::string(64, 'a')), "");
  EXPECT_EQ(SecretValueShape("hf_xxx"), "");
  EXPECT_TRUE(IsVariableReference("${TOKEN}"));
  EXPECT_TRUE(IsVariableReference("$(TOKEN)"));
  EXPECT_FALSE(IsVariableReference("${A}b"));
}

}  // namespace
}  // namespace tg::audit
