// `truegreen audit k8s DIR` on kustomize overlays through the real binary: the features that change
// what runs are applied before the rules (an overlay that patches away the GPU limit and the
// liveness probe fails), and a feature the reader does not apply is exit 2 naming it. These run
// the built-in reader (--kustomize builtin); the default renders with kubectl when it is on PATH.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/test_util.h"

namespace tg::testing {
namespace {

const std::string kPin = "@sha256:" + std::string(64, 'e');

// A base that passes every rule.
void WriteBase(const TempDir& d) {
  WriteFile(d / "base/kustomization.yaml", "resources:\n  - deployment.yaml\n");
  WriteFile(d / "base/deployment.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: tg\n"
            "spec:\n  replicas: 1\n  selector: {matchLabels: {app: tg}}\n"
            "  template:\n    metadata: {labels: {app: tg}}\n    spec:\n"
            "      securityContext: {runAsNonRoot: true, runAsUser: 65532}\n"
            "      containers:\n        - name: server\n          image: truegreen" +
                kPin +
                "\n          args: [serve]\n"
                "          securityContext: {allowPrivilegeEscalation: false}\n"
                "          resources:\n            requests: {cpu: \"2\", memory: 8Gi}\n"
                "            limits: {memory: 8Gi, nvidia.com/gpu: \"1\"}\n"
                "          startupProbe: {httpGet: {path: /readyz, port: http}}\n"
                "          readinessProbe: {httpGet: {path: /readyz, port: http}}\n"
                "          livenessProbe: {httpGet: {path: /healthz, port: http}}\n");
}

nlohmann::json AuditJson(const std::string& dir, int* exit_code) {
  ProcessResult r = RunTruegreen({"--json", "audit", "k8s", "--kustomize", "builtin", dir});
  *exit_code = r.exit_code;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
  return j;
}

bool HasRule(const nlohmann::json& j, const std::string& rule) {
  if (!j.contains("findings")) return false;
  for (const auto& f : j["findings"]) {
    if (f["rule"] == rule && f["severity"] == "error") return true;
  }
  return false;
}

TEST(AuditK8sKustomize, RealKustomizeIsUsedWhenOnPathAndNamed) {
  TempDir d;
  WriteBase(d);
  WriteFile(d / "ov/kustomization.yaml", "resources: [../base]\nnamePrefix: p-\n");
  ProcessResult r = RunTruegreen({"--json", "audit", "k8s", "--kustomize", "builtin", d / "ov"});
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
  EXPECT_NE(j["renderers"].dump().find("built-in kustomize reader"), std::string::npos) << r.out;
  r = RunTruegreen({"audit", "k8s", "--kustomize", "no-such-kustomize build", d / "ov"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("not an executable on PATH"), std::string::npos) << r.err;
  if (RunProcess({"/bin/sh", "-c", "command -v kubectl"}).exit_code != 0) {
    GTEST_SKIP() << "kubectl is not on PATH: the default renderer falls back to the built-in one";
  }
  r = RunTruegreen({"--json", "audit", "k8s", d / "ov"});
  j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(j["renderers"].dump().find(": kubectl kustomize"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Deployment/p-tg"), std::string::npos) << r.out;
  r = RunTruegreen({"audit", "k8s", "--kustomize", "kubectl kustomize", d / "ov"});
  EXPECT_NE(r.out.find("rendered " + (d / "ov") + ": kubectl kustomize"), std::string::npos)
      << r.out;
}

TEST(AuditK8sKustomize, BasePasses) {
  TempDir d;
  WriteBase(d);
  int code = -1;
  nlohmann::json j = AuditJson(d / "base", &code);
  EXPECT_EQ(code, 0) << j.dump(2);
  EXPECT_EQ(j["workloads"], 1);
}

TEST(AuditK8sKustomize, JsonPatchOverlayRemovingGpuAndLivenessFails) {
  TempDir d;
  WriteBase(d);
  WriteFile(d / "ov/kustomization.yaml",
            "resources: [../base]\nnamePrefix: prod-\npatches:\n"
            "  - target: {kind: Deployment, name: tg}\n    patch: |-\n"
            "      - op: remove\n        path: /spec/template/spec/containers/0/resources/limits/"
            "nvidia.com~1gpu\n"
            "      - op: remove\n        path: /spec/template/spec/containers/0/livenessProbe\n");
  int code = -1;
  nlohmann::json j = AuditJson(d / "ov", &code);
  EXPECT_EQ(code, 6) << j.dump(2);
  EXPECT_TRUE(HasRule(j, "k8s.gpu-request")) << j.dump(2);
  EXPECT_TRUE(HasRule(j, "k8s.probes")) << j.dump(2);
  // namePrefix applied: the findings name the rendered object.
  EXPECT_NE(j.dump().find("Deployment/prod-tg"), std::string::npos) << j.dump(2);
}

TEST(AuditK8sKustomize, StrategicMergeOverlayFails) {
  TempDir d;
  WriteBase(d);
  WriteFile(d / "ov/kustomization.yaml",
            "resources: [../base]\npatchesStrategicMerge: [patch.yaml]\n");
  WriteFile(d / "ov/patch.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: tg}\nspec:\n  template:\n"
            "    spec:\n      containers:\n        - name: server\n          livenessProbe: null\n"
            "          securityContext: {privileged: true}\n");
  int code = -1;
  nlohmann::json j = AuditJson(d / "ov", &code);
  EXPECT_EQ(code, 6) << j.dump(2);
  EXPECT_TRUE(HasRule(j, "k8s.probes")) << j.dump(2);
  EXPECT_TRUE(HasRule(j, "k8s.privileged")) << j.dump(2);
}

TEST(AuditK8sKustomize, ImagesComponentsAndReplicas) {
  TempDir d;
  WriteBase(d);
  WriteFile(d / "comp/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n"
            "  - patch: |-\n      kind: Deployment\n      metadata: {name: tg}\n"
            "      spec:\n        template:\n          spec:\n            hostNetwork: true\n");
  WriteFile(d / "ov/kustomization.yaml",
            "resources: [../base]\ncomponents: [../comp]\nimages:\n  - name: truegreen\n"
            "    newTag: latest\nreplicas:\n  - {name: tg, count: 3}\n"
            "commonLabels: {team: ml}\n");
  int code = -1;
  nlohmann::json j = AuditJson(d / "ov", &code);
  EXPECT_EQ(code, 6) << j.dump(2);
  EXPECT_TRUE(HasRule(j, "k8s.host-namespaces")) << "component not applied\n" << j.dump(2);
  EXPECT_TRUE(HasRule(j, "k8s.image-digest")) << "images not applied\n" << j.dump(2);
}

TEST(AuditK8sKustomize, UnsupportedFeatureAndUnmatchedPatchAreExitTwo) {
  TempDir d;
  WriteBase(d);
  WriteFile(d / "ov/kustomization.yaml", "resources: [../base]\nreplacements: []\n");
  ProcessResult r = RunTruegreen({"audit", "k8s", "--kustomize", "builtin", d / "ov"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("'replacements'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("kubectl kustomize"), std::string::npos) << r.err;

  WriteFile(d / "ov2/kustomization.yaml",
            "resources: [../base]\npatches:\n  - target: {kind: Deployment, name: nope}\n"
            "    patch: '[{op: remove, path: /spec/replicas}]'\n");
  r = RunTruegreen({"audit", "k8s", "--kustomize", "builtin", d / "ov2"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("matches no resource"), std::string::npos) << r.err;

  WriteFile(d / "ov3/kustomization.yaml",
            "resources: [../base]\npatches:\n  - target: {kind: Deployment, labelSelector: a=b}\n"
            "    patch: '[]'\n");
  r = RunTruegreen({"audit", "k8s", "--kustomize", "builtin", d / "ov3"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("labelSelector"), std::string::npos) << r.err;
}

TEST(AuditK8sKustomize, StdinReadsRenderedOutput) {
  TempDir d;
  WriteBase(d);
  std::string text = ReadFile(d / "base/deployment.yaml");
  ProcessResult r = RunTruegreen({"audit", "k8s", "-"}, {}, text);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

}  // namespace
}  // namespace tg::testing
