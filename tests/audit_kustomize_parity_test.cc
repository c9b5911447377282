// The built-in kustomize reader against the reference renderer, object by object: every overlay
// below is rendered by BuildKustomization and by `kubectl kustomize` (kubectl 1.32 ships kustomize
// 5.5) and the two object sets must be equal. Overlays using a feature the reader refuses must be
// refused by name (exit 2 with the hint) while kubectl renders them: refused, never rendered wrong.
// Skips, saying why, where kubectl is not on PATH.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "audit/k8s/kustomize.h"
#include "tests/support/test_util.h"

namespace tg::testing {
namespace {

// Scalars compare as text: kubectl prints `replicas: 3` where the reader may hold 3 or "3".
nlohmann::json ToJson(const YAML::Node& n) {
  if (n.IsMap()) {
    nlohmann::json o = nlohmann::json::object();
    for (auto it = n.begin(); it != n.end(); ++it) o[it->first.Scalar()] = ToJson(it->second);
    return o;
  }
  if (n.IsSequence()) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& e : n) a.push_back(ToJson(e));
    return a;
  }
  if (n.IsScalar()) return n.Scalar();
  return nullptr;
}

using Rendered = std::map<std::string, nlohmann::json>;  // "Kind ns/name" -> object

Rendered Index(const std::vector<audit::KustomizeObject>& objs) {
  Rendered r;
  for (const auto& o : objs) {
    nlohmann::json j = ToJson(o.node);
    std::string key = j.value("kind", "?") + " " + j["metadata"].value("namespace", "") + "/" +
                      j["metadata"].value("name", "");
    r[key] = j;
  }
  return r;
}

const char* kBase =
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: sd\n  labels: {app: sd}\n"
    "spec:\n  replicas: 1\n  selector:\n    matchLabels: {app: sd}\n  template:\n"
    "    metadata:\n      labels: {app: sd}\n    spec:\n      serviceAccountName: sd\n"
    "      containers:\n      - name: server\n        image: truegreen:1.0\n"
    "        args: [serve, --models, /models]\n        ports:\n        - {name: http, "
    "containerPort: 8000}\n        env:\n        - {name: MODE, value: prod}\n"
    "        - name: CFG\n          valueFrom: {configMapKeyRef: {name: sd-config, key: mode}}\n"
    "        envFrom:\n        - secretRef: {name: sd-secret}\n"
    "        volumeMounts:\n        - {name: cfg, mountPath: /etc/sd}\n"
    "        - {name: models, mountPath: /models}\n        resources:\n"
    "          limits: {nvidia.com/gpu: \"1\", memory: 8Gi}\n      - name: sidecar\n"
    "        image: busybox:1.36\n        args: [sleep, infinity]\n      volumes:\n"
    "      - name: cfg\n        configMap: {name: sd-config}\n      - name: models\n"
    "        persistentVolumeClaim: {claimName: sd-models}\n"
    "---\napiVersion: v1\nkind: Service\nmetadata: {name: sd}\nspec:\n  selector: {app: sd}\n"
    "  ports:\n  - {name: http, port: 80, targetPort: http}\n"
    "---\napiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: sd}\n"
    "spec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: sd}\n"
    "  minReplicas: 1\n  maxReplicas: 4\n"
    "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: sd-config}\ndata: {mode: fast}\n"
    "---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: sd}\n"
    "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: sd-reader}\n"
    "rules:\n- {apiGroups: [\"\"], resources: [pods], verbs: [get]}\n"
    "---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: sd}\n"
    "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: sd-reader}\n"
    "subjects:\n- {kind: ServiceAccount, name: sd}\n"
    "---\napiVersion: monitoring.coreos.com/v1\nkind: PodMonitor\nmetadata: {name: sd}\n"
    "spec:\n  selector:\n    matchLabels: {app: sd}\n  podMetricsEndpoints:\n  - {port: http}\n";

// Kinds with their own label, annotation and reference paths.
const char* kBase2 =
    "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: cache}\nspec:\n"
    "  serviceName: cache\n  replicas: 1\n  selector: {matchLabels: {app: cache}}\n"
    "  template:\n    metadata: {labels: {app: cache}}\n    spec:\n      containers:\n"
    "      - {name: c, image: redis:7}\n  volumeClaimTemplates:\n  - metadata: {name: data}\n"
    "    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n"
    "---\napiVersion: v1\nkind: Service\nmetadata: {name: cache}\nspec:\n"
    "  clusterIP: None\n  selector: {app: cache}\n  ports: [{port: 6379}]\n"
    "---\napiVersion: batch/v1\nkind: CronJob\nmetadata: {name: warm}\nspec:\n"
    "  schedule: \"*/5 * * * *\"\n  jobTemplate:\n    spec:\n      template:\n        spec:\n"
    "          restartPolicy: Never\n          containers:\n"
    "          - {name: w, image: curl:8, args: [http://cache]}\n"
    "---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: admit}\nspec:\n  template:\n"
    "    spec:\n      restartPolicy: Never\n      containers: [{name: a, image: tg:1}]\n"
    "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: cache}\n"
    "spec:\n  minAvailable: 1\n  selector: {matchLabels: {app: cache}}\n"
    "---\napiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: cache}\n"
    "spec:\n  podSelector: {matchLabels: {app: cache}}\n  policyTypes: [Ingress]\n"
    "---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web}\nspec:\n"
    "  tls: [{hosts: [a.example], secretName: web-tls}]\n  rules:\n  - host: a.example\n"
    "    http:\n      paths:\n      - path: /\n        pathType: Prefix\n"
    "        backend: {service: {name: cache, port: {number: 6379}}}\n"
    "---\napiVersion: v1\nkind: Secret\nmetadata: {name: web-tls}\ntype: Opaque\n"
    "data: {a: YQ==}\n";

struct Case {
  const char* name;
  std::string kustomization;                      // the overlay's kustomization.yaml
  std::map<std::string, std::string> files = {};  // more files of the overlay
  const char* refused = nullptr;                  // the built-in reader must refuse, naming this
};

std::vector<Case> Cases() {
  return {
      {"plain", "resources: [../base]\n"},
      {"namePrefix rewrites references", "resources: [../base]\nnamePrefix: prod-\n"},
      {"nameSuffix rewrites references", "resources: [../base]\nnameSuffix: -v2\n"},
      {"prefix and suffix", "resources: [../base]\nnamePrefix: a-\nnameSuffix: -b\n"},
      {"namespace", "resources: [../base]\nnamespace: inference\n"},
      {"namespace and prefix", "resources: [../base]\nnamespace: inf\nnamePrefix: p-\n"},
      {"commonLabels", "resources: [../base]\ncommonLabels: {team: gpu}\n"},
      {"labels without selectors", "resources: [../base]\nlabels:\n- pairs: {team: gpu}\n"},
      {"labels includeSelectors",
       "resources: [../base]\nlabels:\n- pairs: {team: gpu}\n  includeSelectors: true\n"},
      {"labels includeTemplates",
       "resources: [../base]\nlabels:\n- pairs: {team: gpu}\n  includeTemplates: true\n"},
      {"commonAnnotations", "resources: [../base]\ncommonAnnotations: {owner: ml}\n"},
      {"replicas", "resources: [../base]\nreplicas:\n- {name: sd, count: 3}\n"},
      {"images digest", "resources: [../base]\nimages:\n- name: truegreen\n  digest: sha256:" +
                            std::string(64, 'a') + "\n"},
      {"images newName newTag",
       "resources: [../base]\nimages:\n- {name: busybox, newName: example.org/bb, newTag: "
       "\"2\"}\n"},
      {"smp patch file",
       "resources: [../base]\npatches:\n- path: p.yaml\n",
       {{"p.yaml",
         "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: sd}\nspec:\n  template:\n"
         "    spec:\n      containers:\n      - name: server\n        env:\n"
         "        - {name: MODE, value: dev}\n"}}},
      {"smp patch with target keeps names",
       "resources: [../base]\npatches:\n- target: {kind: Deployment}\n  patch: |-\n"
       "    apiVersion: apps/v1\n    kind: Deployment\n    metadata: {name: whatever}\n"
       "    spec: {replicas: 2}\n"},
      {"smp list without merge key is replaced",
       "resources: [../base]\npatches:\n- patch: |-\n    apiVersion: apps/v1\n"
       "    kind: Deployment\n    metadata: {name: sd}\n    spec:\n      template:\n"
       "        spec:\n          containers:\n          - name: server\n"
       "            args: [serve, --port, \"9000\"]\n"},
      {"smp $patch delete container",
       "resources: [../base]\npatches:\n- patch: |-\n    apiVersion: apps/v1\n"
       "    kind: Deployment\n    metadata: {name: sd}\n    spec:\n      template:\n"
       "        spec:\n          containers:\n          - name: sidecar\n"
       "            $patch: delete\n"},
      {"smp null deletes a key",
       "resources: [../base]\npatches:\n- patch: |-\n    apiVersion: apps/v1\n"
       "    kind: Deployment\n    metadata: {name: sd}\n    spec:\n      template:\n"
       "        spec:\n          serviceAccountName: null\n"},
      {"smp delete object",
       "resources: [../base]\npatches:\n- patch: |-\n    $patch: delete\n    apiVersion: v1\n"
       "    kind: ConfigMap\n    metadata: {name: sd-config}\n"},
      {"json6902 inline",
       "resources: [../base]\npatches:\n- target: {kind: Deployment, name: sd}\n  patch: |-\n"
       "    - {op: replace, path: /spec/replicas, value: 5}\n"
       "    - {op: add, path: /metadata/labels/tier, value: gpu}\n"},
      {"patchesJson6902 after prefix",
       "resources: [../base]\nnamePrefix: x-\npatchesJson6902:\n"
       "- target: {group: apps, version: v1, kind: Deployment, name: sd}\n  path: j.yaml\n",
       {{"j.yaml", "- {op: replace, path: /spec/replicas, value: 2}\n"}}},
      {"patchesStrategicMerge",
       "resources: [../base]\npatchesStrategicMerge: [p.yaml]\n",
       {{"p.yaml",
         "apiVersion: v1\nkind: Service\nmetadata: {name: sd}\nspec:\n  type: ClusterIP\n"}}},
      {"regex name target",
       "resources: [../base]\npatches:\n- target: {kind: ConfigMap, name: \"sd-.*\"}\n"
       "  patch: |-\n    - {op: add, path: /data/extra, value: \"1\"}\n"},
      {"component", "resources: [../base]\ncomponents: [../comp]\n"},
      {"other kinds: prefix and references", "resources: [../base2]\nnamePrefix: p-\n"},
      {"other kinds: commonLabels", "resources: [../base2]\ncommonLabels: {team: gpu}\n"},
      {"other kinds: commonAnnotations", "resources: [../base2]\ncommonAnnotations: {o: ml}\n"},
      {"other kinds: labels includeTemplates",
       "resources: [../base2]\nlabels:\n- pairs: {t: x}\n  includeTemplates: true\n"},
      {"other kinds: replicas", "resources: [../base2]\nreplicas:\n- {name: cache, count: 2}\n"},
      {"nested prefixes", "resources: [../mid]\nnamePrefix: top-\n"},
      {"patch by current name after a base prefix",
       "resources: [../mid]\npatches:\n- target: {kind: Deployment, name: mid-sd}\n"
       "  patch: |-\n    - {op: replace, path: /spec/replicas, value: 7}\n"},
      {"smp $patch replace",
       "resources: [../base]\npatches:\n- patch: |-\n    apiVersion: apps/v1\n"
       "    kind: Deployment\n    metadata: {name: sd}\n    spec:\n      template:\n"
       "        spec:\n          volumes:\n          - $patch: replace\n"
       "          - name: cfg\n            emptyDir: {}\n"},
      {"configMapGenerator refused",
       "resources: [../base]\nconfigMapGenerator:\n- name: gen\n  literals: [a=b]\n",
       {},
       "configMapGenerator"},
      {"webhook configuration under a namePrefix refused",
       "resources: [../base, hook.yaml]\nnamePrefix: p-\n",
       {{"hook.yaml",
         "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\n"
         "metadata: {name: check}\nwebhooks:\n- name: check.example.org\n"
         "  admissionReviewVersions: [v1]\n  sideEffects: None\n"
         "  clientConfig:\n    service: {name: sd, namespace: default, path: /validate}\n"}},
       "ValidatingWebhookConfiguration"},
      {"replacements refused",
       "resources: [../base]\nreplacements:\n- source: {kind: Service, name: sd}\n"
       "  targets:\n  - select: {kind: Deployment}\n"
       "    fieldPaths: [spec.template.spec.serviceAccountName]\n",
       {},
       "replacements"},
  };
}

void WriteTree(const TempDir& d, const Case& c) {
  WriteFile(d / "base/kustomization.yaml", "resources: [all.yaml]\n");
  WriteFile(d / "base/all.yaml", kBase);
  WriteFile(d / "base2/kustomization.yaml", "resources: [all.yaml]\n");
  WriteFile(d / "base2/all.yaml", kBase2);
  WriteFile(d / "mid/kustomization.yaml", "resources: [../base]\nnamePrefix: mid-\n");
  WriteFile(d / "comp/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
            "commonAnnotations: {component: \"yes\"}\n");
  WriteFile(d / "ov/kustomization.yaml", c.kustomization);
  for (const auto& [rel, text] : c.files) WriteFile(d / ("ov/" + rel), text);
}

TEST(KustomizeParity, BuiltInRendersWhatKubectlRenders) {
  if (audit::FindOnPath("kubectl").empty()) {
    GTEST_SKIP() << "kubectl is not on PATH: the reference renderer (kubectl kustomize) is absent";
  }
  int compared = 0;
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    TempDir d;
    WriteTree(d, c);
    std::vector<audit::KustomizeObject> ref, mine;
    common::Status rs = audit::RenderWithKustomize("kubectl kustomize", d / "ov", &ref);
    ASSERT_TRUE(rs.ok()) << rs.message();
    common::Status ms = audit::BuildKustomization(d / "ov", &mine);
    if (c.refused != nullptr) {
      ASSERT_FALSE(ms.ok()) << "the reader accepted a feature it does not apply";
      EXPECT_NE(ms.message().find(c.refused), std::string::npos) << ms.message();
      EXPECT_NE(ms.message().find("kubectl kustomize"), std::string::npos) << ms.message();
      continue;
    }
    ASSERT_TRUE(ms.ok()) << ms.message();
    Rendered want = Index(ref), got = Index(mine);
    std::vector<std::string> want_keys, got_keys;
    for (const auto& [k, v] : want) want_keys.push_back(k);
    for (const auto& [k, v] : got) got_keys.push_back(k);
    EXPECT_EQ(got_keys, want_keys);
    for (const auto& [k, v] : want) {
      auto it = got.find(k);
      if (it == got.end()) continue;
      EXPECT_EQ(it->second, v) << k << "\nkubectl:  " << v.dump()
                               << "\nbuilt-in: " << it->second.dump()
                               << "\ndiff: " << nlohmann::json::diff(it->second, v).dump();
    }
    ++compared;
  }
  EXPECT_GE(compared, 20);
}

void ExpectSameUnderBoth(const std::string& dir) {
  std::vector<audit::KustomizeObject> ref, mine;
  common::Status rs = audit::RenderWithKustomize("kubectl kustomize", dir, &ref);
  ASSERT_TRUE(rs.ok()) << rs.message();
  common::Status ms = audit::BuildKustomization(dir, &mine);
  ASSERT_TRUE(ms.ok()) << ms.message();
  Rendered want = Index(ref), got = Index(mine);
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(got, want);
}

TEST(KustomizeParity, BundledDeployAndRenderOutputsAreIdenticalUnderBothRenderers) {
  if (audit::FindOnPath("kubectl").empty()) {
    GTEST_SKIP() << "kubectl is not on PATH: the reference renderer (kubectl kustomize) is absent";
  }
  ExpectSameUnderBoth(SourceDir() + "/deploy/k8s");
  TempDir b;
  WriteFile(b / "bench.yaml", "slo: [\"p95<8s\"]\n");
  for (std::vector<std::string> extra :
       {std::vector<std::string>{},
        std::vector<std::string>{"--rollout", "blue-green", "--bench-file", b / "bench.yaml"}}) {
    SCOPED_TRACE(extra.empty() ? "k8s render" : "k8s render --rollout blue-green");
    std::vector<std::string> args = {"k8s",      "render",
                                     "--matrix", SourceDir() + "/deploy/matrix.example.yaml",
                                     "--image",  "truegreen@sha256:" + std::string(64, 'a')};
    args.insert(args.end(), extra.begin(), extra.end());
    ProcessResult r = RunTruegreen(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    TempDir d;
    WriteFile(d / "render.yaml", r.out);
    WriteFile(d / "kustomization.yaml", "resources: [render.yaml]\nnamePrefix: prod-\n");
    ExpectSameUnderBoth(d.path());
  }
}

}  // namespace
}  // namespace tg::testing
