// `truegreen k8s render` beyond the single Deployment, through the real binary: the model volume
// and serve's command line, the HPA on queue depth and its adapter rule, the alerts, and
// `--rollout blue-green` (two colours, the live Service, least-privilege RBAC, the gate Job).
// Both renderings pass `truegreen audit k8s`, and every `truegreen ...` the manifests run is
// checked against the CLI definition (`__cli-tree`).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "tests/support/test_util.h"

namespace tg::testing {
namespace {

using ::testing::HasSubstr;
using Json = common::Json;

const std::string kPin = "@sha256:" + std::string(64, 'c');

std::string Src(const std::string& rel) { return SourceDir() + "/" + rel; }

Json RenderJson(const std::vector<std::string>& extra, int* exit_code = nullptr,
                const std::string& matrix = "deploy/matrix.production.yaml") {
  std::vector<std::string> args = {"--json",
                                   "k8s",
                                   "render",
                                   "--matrix",
                                   Src(matrix),
                                   "--image",
                                   "reg.example/truegreen" + kPin};
  args.insert(args.end(), extra.begin(), extra.end());
  ProcessResult r = RunTruegreen(args);
  if (exit_code != nullptr) *exit_code = r.exit_code;
  if (r.exit_code != 0) return Json::object();
  auto j = common::ParseJson(r.out, "render");
  EXPECT_TRUE(j.ok()) << r.out;
  return j.ok() ? *j : Json::array();
}

std::vector<Json> Kind(const Json& docs, const std::string& kind) {
  std::vector<Json> out;
  for (const auto& d : docs) {
    if (d["kind"] == kind) out.push_back(d);
  }
  return out;
}

const Json* Named(const Json& docs, const std::string& kind, const std::string& name) {
  for (const auto& d : docs) {
    if (d["kind"] == kind && d["metadata"]["name"] == name) return &d;
  }
  return nullptr;
}

// Every container (init or not) of every pod template in the rendering.
std::vector<Json> Containers(const Json& docs) {
  std::vector<Json> out;
  for (const auto& d : docs) {
    if (d["kind"] != "Deployment" && d["kind"] != "Job") continue;
    const Json& pod = d["spec"]["template"]["spec"];
    for (const char* key : {"initContainers", "containers"}) {
      if (!pod.contains(key)) continue;
      for (const auto& c : pod[key]) out.push_back(c);
    }
  }
  return out;
}

// Each call writes a new file (cases are built before any of them runs).
std::string BenchFile(const TempDir& d, const std::string& text = "slo: [\"p95<8s\"]\n") {
  static int n = 0;
  const std::string p = d / ("bench" + std::to_string(++n) + ".yaml");
  WriteFile(p, text);
  return p;
}

int AuditRendering(const TempDir& d, const std::vector<std::string>& extra, std::string* out) {
  std::vector<std::string> args = {"k8s",      "render",
                                   "--matrix", Src("deploy/matrix.production.yaml"),
                                   "--image",  "reg.example/truegreen" + kPin};
  args.insert(args.end(), extra.begin(), extra.end());
  ProcessResult r = RunTruegreen(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  WriteFile(d / "rendered.yaml", r.out);
  ProcessResult a = RunTruegreen(
      {"audit", "k8s", d / "rendered.yaml", "--matrix", Src("deploy/matrix.production.yaml")});
  *out = a.out + a.err;
  return a.exit_code;
}

TEST(AuditK8sRollout, ServerMountsTheModelRepositoryAndRunsServe) {
  Json docs = RenderJson({"--models-pvc", "sd-models"});
  const Json* dep = Named(docs, "Deployment", "truegreen");
  ASSERT_NE(dep, nullptr) << docs.dump(2);
  const Json& pod = (*dep)["spec"]["template"]["spec"];
  bool claim = false;
  for (const auto& v : pod["volumes"]) {
    if (v.value("name", "") != "models") continue;
    claim = v["persistentVolumeClaim"]["claimName"] == "sd-models" &&
            v["persistentVolumeClaim"]["readOnly"] == true;
  }
  EXPECT_TRUE(claim) << pod["volumes"].dump();
  const Json& c = pod["containers"][0];
  bool mounted = false;
  for (const auto& m : c["volumeMounts"]) {
    if (m["name"] == "models") mounted = m["mountPath"] == "/models" && m["readOnly"] == true;
  }
  EXPECT_TRUE(mounted) << c["volumeMounts"].dump();
  const std::vector<std::string> args = c["args"];
  EXPECT_EQ(args, (std::vector<std::string>{"serve", "--models", "/models", "--matrix",
                                            "/etc/truegreen/matrix.yaml", "--host", "0.0.0.0",
                                            "--port", "8000"}));
  // No fixed replica count: the HPA owns it.
  EXPECT_FALSE((*dep)["spec"].contains("replicas"));
  // Without the flag the claim is <name>-models (documented in docs/DEPLOY.md).
  Json def = RenderJson({"--name", "tg-a"});
  const Json* d2 = Named(def, "Deployment", "tg-a");
  ASSERT_NE(d2, nullptr);
  EXPECT_THAT((*d2)["spec"]["template"]["spec"]["volumes"].dump(), HasSubstr("\"tg-a-models\""));
}

TEST(AuditK8sRollout, HpaScalesOnTheServersQueueDepthThroughTheAdapterRule) {
  Json docs =
      RenderJson({"--min-replicas", "2", "--max-replicas", "9", "--target-queue-depth", "6"});
  std::vector<Json> hpas = Kind(docs, "HorizontalPodAutoscaler");
  ASSERT_EQ(hpas.size(), 1u);
  const Json& spec = hpas[0]["spec"];
  EXPECT_EQ(hpas[0]["apiVersion"], "autoscaling/v2");
  EXPECT_EQ(spec["scaleTargetRef"]["kind"], "Deployment");
  EXPECT_EQ(spec["scaleTargetRef"]["name"], "truegreen");
  EXPECT_EQ(spec["minReplicas"], 2);
  EXPECT_EQ(spec["maxReplicas"], 9);
  const Json& m = spec["metrics"][0];
  EXPECT_EQ(m["type"], "Pods");
  EXPECT_EQ(m["pods"]["metric"]["name"], "nv_inference_pending_request_count");
  EXPECT_EQ(m["pods"]["target"]["averageValue"], "6");
  // The metric is the one the server declares (not a name made up here).
  EXPECT_THAT(ReadFile(Src("src/server/serve_metrics.cc")),
              HasSubstr("\"nv_inference_pending_request_count\""));
  const Json* rules = Named(docs, "ConfigMap", "truegreen-prometheus-adapter");
  ASSERT_NE(rules, nullptr);
  auto y = common::ParseYaml((*rules)["data"]["config.yaml"].get<std::string>(), "adapter");
  ASSERT_TRUE(y.ok()) << y.status().message();
  const YAML::Node rule = (*y)["rules"][0];
  EXPECT_EQ(rule["name"]["as"].as<std::string>(), "nv_inference_pending_request_count");
  EXPECT_EQ(rule["resources"]["overrides"]["pod"]["resource"].as<std::string>(), "pod");
  EXPECT_THAT(rule["seriesQuery"].as<std::string>(),
              HasSubstr("nv_inference_pending_request_count{"));
  int code = -1;
  RenderJson({"--min-replicas", "5", "--max-replicas", "2"}, &code);
  EXPECT_EQ(code, 2);
}

TEST(AuditK8sRollout, AlertsUseTheMetricsTheServerExports) {
  Json docs = RenderJson({"--gpu-util-floor", "0.7"});
  std::vector<Json> pr = Kind(docs, "PrometheusRule");
  ASSERT_EQ(pr.size(), 1u);
  std::map<std::string, std::string> expr;
  for (const auto& r : pr[0]["spec"]["groups"][0]["rules"]) expr[r["alert"]] = r["expr"];
  ASSERT_EQ(expr.count("TruegreenGateDown"), 1u);
  EXPECT_THAT(expr["TruegreenGateDown"], HasSubstr("truegreen_gate_status) == 0"));
  // The production matrix requires a GPU: CPU nodes are alerted on.
  EXPECT_THAT(expr["TruegreenCpuNodeShare"],
              HasSubstr("truegreen_session_nodes{provider=\"CPUExecutionProvider\"}"));
  EXPECT_THAT(expr["TruegreenCanaryOutsideWindow"], HasSubstr("truegreen_canary_ok"));
  EXPECT_THAT(expr["TruegreenGpuUnderutilised"], HasSubstr("nv_gpu_utilization) < 0.7"));
  EXPECT_THAT(expr["TruegreenGpuUnderutilised"], HasSubstr("nv_inference_pending_request_count"));
  const std::string server = ReadFile(Src("src/server/serve_metrics.cc"));
  for (const char* m : {"truegreen_gate_status", "truegreen_session_nodes", "truegreen_canary_ok",
                        "truegreen_degraded", "nv_inference_pending_request_count"}) {
    EXPECT_THAT(server, HasSubstr(std::string("\"") + m + "\"")) << m;
  }
  // A development matrix allows the CPU: no CPU-share alert there.
  Json dev = RenderJson({}, nullptr, "deploy/matrix.dev.yaml");
  ASSERT_FALSE(dev.empty());
  EXPECT_EQ(dev.dump().find("TruegreenCpuNodeShare"), std::string::npos);
  EXPECT_NE(dev.dump().find("TruegreenGateDown"), std::string::npos);
}

// A gate for a generic KServe model: the bench file names the API, the model and the request; the
// rendering carries it verbatim in the gate's ConfigMap (the Job's bench line reads it there).
TEST(AuditK8sRollout, AKserveGateTakesItsApiModelAndBodyFromTheBenchFile) {
  TempDir d;
  const std::string text =
      "slo: [\"p95<50ms\"]\napi: kserve\nmodel: mm\n"
      "body: {inputs: [{name: x, datatype: FP32, shape: [1, 8], data: [1, 2, 3, 4, 5, 6, 7, "
      "8]}]}\n";
  Json docs = RenderJson({"--rollout", "blue-green", "--bench-file", BenchFile(d, text)});
  const Json* bench = Named(docs, "ConfigMap", "truegreen-bench");
  ASSERT_NE(bench, nullptr) << docs.dump(2);
  EXPECT_EQ((*bench)["data"]["bench.yaml"], text);
}

TEST(AuditK8sRollout, BlueGreenRendersTwoColoursALiveServiceAndAGate) {
  TempDir d;
  Json docs = RenderJson({"--rollout", "blue-green", "--bench-file", BenchFile(d), "--live", "blue",
                          "--live-image", "reg.example/truegreen@sha256:" + std::string(64, 'b')});
  ASSERT_FALSE(docs.empty());
  const Json* blue = Named(docs, "Deployment", "truegreen-blue");
  const Json* green = Named(docs, "Deployment", "truegreen-green");
  ASSERT_TRUE(blue && green) << docs.dump(2);
  EXPECT_EQ((*blue)["spec"]["template"]["metadata"]["labels"]["truegreen.dev/color"], "blue");
  EXPECT_EQ((*green)["spec"]["selector"]["matchLabels"]["truegreen.dev/color"], "green");
  // The live colour keeps its image; the candidate runs the new one.
  EXPECT_THAT((*blue)["spec"]["template"]["spec"]["containers"][0]["image"].get<std::string>(),
              HasSubstr(std::string(64, 'b')));
  EXPECT_THAT((*green)["spec"]["template"]["spec"]["containers"][0]["image"].get<std::string>(),
              HasSubstr(std::string(64, 'c')));
  const Json* svc = Named(docs, "Service", "truegreen");
  ASSERT_NE(svc, nullptr);
  EXPECT_EQ((*svc)["spec"]["selector"]["truegreen.dev/color"], "blue");
  ASSERT_NE(Named(docs, "Service", "truegreen-green"), nullptr);
  EXPECT_EQ(Kind(docs, "HorizontalPodAutoscaler").size(), 2u);
  const Json* bench = Named(docs, "ConfigMap", "truegreen-bench");
  ASSERT_NE(bench, nullptr);
  EXPECT_EQ((*bench)["data"]["bench.yaml"], "slo: [\"p95<8s\"]\n");

  // RBAC: one Role, every rule limited by resourceNames, no create/list/watch/delete.
  const Json* role = Named(docs, "Role", "truegreen-gate");
  ASSERT_NE(role, nullptr);
  std::map<std::string, std::set<std::string>> verbs;
  for (const auto& r : (*role)["rules"]) {
    ASSERT_TRUE(r.contains("resourceNames")) << r.dump();
    for (const auto& res : r["resources"]) {
      for (const auto& v : r["verbs"]) verbs[res.get<std::string>()].insert(v);
    }
  }
  EXPECT_EQ(verbs["services"], (std::set<std::string>{"get", "patch"}));
  EXPECT_EQ(verbs["configmaps"], (std::set<std::string>{"get", "update"}));
  EXPECT_EQ(verbs["deployments"], (std::set<std::string>{"get"}));
  EXPECT_EQ(verbs.size(), 3u);
  EXPECT_THAT((*role)["rules"].dump(), HasSubstr("\"truegreen-baseline\""));
  ASSERT_NE(Named(docs, "RoleBinding", "truegreen-gate"), nullptr);
  ASSERT_NE(Named(docs, "ServiceAccount", "truegreen-gate"), nullptr);

  // The gate: wait-ready, bench, compare in order, then promote to the candidate colour.
  const Json* job = Named(docs, "Job", "truegreen-gate-to-green");
  ASSERT_NE(job, nullptr);
  const Json& pod = (*job)["spec"]["template"]["spec"];
  EXPECT_EQ(pod["serviceAccountName"], "truegreen-gate");
  EXPECT_EQ((*job)["spec"]["backoffLimit"], 0);
  std::vector<std::string> steps;
  for (const auto& c : pod["initContainers"]) steps.push_back(c["args"][0]);
  EXPECT_EQ(steps, (std::vector<std::string>{"k8s", "bench", "compare"}));
  EXPECT_EQ(pod["initContainers"][0]["args"][1], "wait-ready");
  EXPECT_THAT(pod["initContainers"][1]["args"].dump(), HasSubstr("http://truegreen-green:8000"));
  EXPECT_THAT(pod["initContainers"][2]["args"].dump(), HasSubstr("\"p95 +10%\""));
  const std::vector<std::string> promote = pod["containers"][0]["args"];
  EXPECT_EQ(promote,
            (std::vector<std::string>{"k8s", "promote", "--service", "truegreen", "--color",
                                      "green", "--baseline-configmap", "truegreen-baseline",
                                      "--baseline-file", "/gate/candidate.json"}));
  // --live green promotes blue.
  Json flipped = RenderJson({"--rollout", "blue-green", "--bench-file", BenchFile(d), "--live",
                             "green", "--fail-on", "p99 +5%"});
  const Json* job2 = Named(flipped, "Job", "truegreen-gate-to-blue");
  ASSERT_NE(job2, nullptr);
  EXPECT_THAT((*job2)["spec"]["template"]["spec"]["initContainers"][2]["args"].dump(),
              HasSubstr("\"p99 +5%\""));
  EXPECT_EQ((*Named(flipped, "Service", "truegreen"))["spec"]["selector"]["truegreen.dev/color"],
            "green");
}

TEST(AuditK8sRollout, BothRenderingsAndDeployK8sPassTheAudit) {
  TempDir d;
  std::string out;
  EXPECT_EQ(AuditRendering(d, {}, &out), 0) << out;
  EXPECT_EQ(AuditRendering(d, {"--rollout", "blue-green", "--bench-file", BenchFile(d)}, &out), 0)
      << out;
  EXPECT_THAT(out, HasSubstr("4 workload(s)"));
  ProcessResult k = RunTruegreen(
      {"audit", "k8s", Src("deploy/k8s"), "--matrix", Src("deploy/matrix.production.yaml")});
  EXPECT_EQ(k.exit_code, 0) << k.out << k.err;
  // The kustomization lists every object file of deploy/k8s.
  const std::string kust = ReadFile(Src("deploy/k8s/kustomization.yaml"));
  for (const auto& e : std::filesystem::directory_iterator(Src("deploy/k8s"))) {
    const std::string f = e.path().filename().string();
    if (f == "kustomization.yaml" || !f.ends_with(".yaml")) continue;
    EXPECT_THAT(kust, HasSubstr("  - " + f + "\n")) << f;
  }
}

TEST(AuditK8sRollout, EveryTruegreenCommandInTheManifestsExists) {
  TempDir d;
  const Json tree = CliTree();
  int checked = 0;
  for (const auto& extra : std::vector<std::vector<std::string>>{
           {},
           {"--rollout", "blue-green", "--bench-file", BenchFile(d), "--fail-on", "errors +1%"}}) {
    for (const Json& c : Containers(RenderJson(extra))) {
      std::vector<std::string> words = {"truegreen"};
      for (const auto& a : c["args"]) words.push_back(a);
      EXPECT_EQ(CheckCommandWords(tree, words), "") << c["name"] << ": " << c["args"].dump();
      ++checked;
    }
  }
  // serve, admit | serve x2, admit, wait-ready, bench, compare, promote.
  EXPECT_EQ(checked, 2 + 7);
  // The checker does catch a wrong flag and a missing subcommand.
  EXPECT_NE(CheckCommandWords(tree, {"truegreen", "bench", "--no-such-flag"}), "");
  EXPECT_NE(CheckCommandWords(tree, {"truegreen", "k8s"}), "");
  EXPECT_NE(CheckCommandWords(tree, {"truegreen", "k8s", "promote", "--service"}), "");
}

TEST(AuditK8sRollout, BadRolloutOptionsAreUsageErrors) {
  TempDir d;
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--rollout", "blue-green"}, "needs --bench-file"},
      {{"--bench-file", BenchFile(d)}, "only with --rollout blue-green"},
      {{"--rollout", "blue-green", "--bench-file", BenchFile(d, "slo: []\n")},
       "at least one threshold"},
      {{"--rollout", "blue-green", "--bench-file", BenchFile(d, "slo: [\"p95<<8s\"]\n")},
       "p95<<8s"},
      {{"--rollout", "blue-green", "--bench-file", d / "missing.yaml"}, "missing.yaml"},
      {{"--rollout", "blue-green", "--bench-file",
        BenchFile(d, "slo: [\"p95<8s\"]\napi: kserve\n")},
       "api: kserve needs model: NAME"},
      {{"--rollout", "blue-green", "--bench-file", BenchFile(d, "slo: [\"p95<8s\"]\nmodle: mm\n")},
       "unknown field 'modle'"},
      {{"--rollout", "blue-green", "--bench-file", BenchFile(d), "--fail-on", "p95 10"}, "p95 10"},
      {{"--models-pvc", "Bad_Claim"}, "--models-pvc"},
      {{"--rollout", "canary"}, "--rollout"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"k8s", "render", "--matrix",
                                     Src("deploy/matrix.production.yaml")};
    args.insert(args.end(), c.args.begin(), c.args.end());
    ProcessResult r = RunTruegreen(args);
    EXPECT_EQ(r.exit_code, 2) << c.says << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.says));
    EXPECT_EQ(r.out, "") << c.says;
  }
}

}  // namespace
}  // namespace tg::testing
