// `k8s render`: YAML quoting, the rendering passing `audit k8s` for the same matrix (single and
// blue-green), and node affinity derived from the matrix.
#include "deploy/k8s_render.h"

#include <gtest/gtest.h>

#include "audit/k8s/k8s_test_outcome.h"
#include "policy/matrix.h"
#include "tests/support/test_util.h"

namespace tg::deploy {
namespace {

using audit::GpuNodeRequirements;
using audit::NodeRequirementsFromMatrix;
using Result = audit::test::K8sOutcome;

const std::string kDigest = "@sha256:" + std::string(64, 'd');

Result Audit(const std::string& yaml, std::optional<GpuNodeRequirements> req) {
  Result r;
  audit::K8sAuditOptions opts;
  opts.requirements = req;
  r.status = audit::AuditK8sText(yaml, "m.yaml", opts, &r.report);
  return r;
}

TEST(K8sRender, YamlQuotesStringsYamlWouldRetype) {
  RenderJson j = {{"a", "579"},  {"b", "true"},           {"c", ""},
                  {"d", "x: y"}, {"e", "--flag"},         {"f", "plain"},
                  {"g", 3},      {"h", "line1\nline2\n"}, {"i", RenderJson::array()}};
  std::string y = JsonToYaml(j);
  auto node = common::ParseYaml(y, "render");
  ASSERT_TRUE(node.ok()) << y;
  for (const char* k : {"a", "b", "c", "d", "e", "f", "h"}) {
    EXPECT_EQ((*node)[k].as<std::string>(), j[k].get<std::string>()) << k << "\n" << y;
  }
  EXPECT_NE(y.find("a: \"579\""), std::string::npos) << y;
  EXPECT_NE(y.find("f: plain"), std::string::npos) << y;
  EXPECT_EQ((*node)["g"].as<int>(), 3);
  EXPECT_TRUE((*node)["i"].IsSequence());
}

policy::Matrix LoadDeployMatrix(const std::string& name) {
  auto m = policy::LoadMatrix(testing::SourceDir() + "/deploy/" + name);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *m : policy::Matrix{};
}

TEST(K8sRender, OutputPassesItsOwnAudit) {
  for (const char* file : {"matrix.production.yaml", "matrix.example.yaml"}) {
    policy::Matrix m = LoadDeployMatrix(file);
    K8sRenderOptions o;
    o.image = "truegreen" + kDigest;
    o.matrix_text = "schema: 1\n";
    std::string yaml = JsonToYamlDocuments(RenderK8sObjects(m, o));
    Result r = Audit(yaml, NodeRequirementsFromMatrix(m));
    ASSERT_TRUE(r.status.ok()) << file << r.Dump() << yaml;
    EXPECT_TRUE(r.report.findings.empty()) << file << r.Dump();
    EXPECT_EQ(r.report.documents, 8);
    EXPECT_EQ(r.report.workloads, 2);  // Deployment + node-admission Job
    // ConfigMap, Service, PodMonitor, HPA, adapter ConfigMap, PrometheusRule.
    EXPECT_EQ(r.report.skipped.size(), 6u);
    // Blue-green: two colour Deployments, the admission Job and the gate Job (which needs no
    // GPU and opts out with NVIDIA_VISIBLE_DEVICES=void).
    o.rollout = Rollout::kBlueGreen;
    o.bench_text = "slo: [\"p95<8s\"]\n";
    yaml = JsonToYamlDocuments(RenderK8sObjects(m, o));
    Result bg = Audit(yaml, NodeRequirementsFromMatrix(m));
    ASSERT_TRUE(bg.status.ok()) << file << bg.Dump();
    EXPECT_TRUE(bg.report.findings.empty()) << file << bg.Dump();
    EXPECT_EQ(bg.report.workloads, 4);
  }
}

TEST(K8sRender, AffinityComesFromTheMatrix) {
  policy::Matrix m = LoadDeployMatrix("matrix.production.yaml");
  GpuNodeRequirements req = NodeRequirementsFromMatrix(m);
  ASSERT_TRUE(req.compute_major.has_value());
  RenderJson aff = RenderNodeAffinity(req);
  std::string dumped = aff.dump();
  EXPECT_NE(dumped.find(std::to_string(*req.driver_major_min - 1)), std::string::npos) << dumped;
  EXPECT_NE(dumped.find(std::to_string(*req.memory_mib_min - 1)), std::string::npos) << dumped;
  EXPECT_EQ(aff["nodeSelectorTerms"].size(), *req.compute_minor > 0 ? 2u : 1u);

  // A stricter matrix: the production rendering no longer satisfies it.
  policy::Matrix strict = LoadDeployMatrix("matrix.example.yaml");
  K8sRenderOptions o;
  o.image = "truegreen" + kDigest;
  std::string prod = JsonToYamlDocuments(RenderK8sObjects(m, o));
  Result r = Audit(prod, NodeRequirementsFromMatrix(strict));
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(r.Has("k8s.node-affinity")) << r.Dump();

  // Changing the matrix changes the rendering.
  auto cc9 = policy::ParseMatrix("schema: 1\ndevices:\n  min_compute_capability: \"9.0\"\n", "m");
  ASSERT_TRUE(cc9.ok()) << cc9.status().message();
  RenderJson a9 = RenderNodeAffinity(NodeRequirementsFromMatrix(*cc9));
  ASSERT_EQ(a9["nodeSelectorTerms"].size(), 1u);
  EXPECT_EQ(a9["nodeSelectorTerms"][0]["matchExpressions"].back()["values"][0], "8");
}

}  // namespace
}  // namespace tg::deploy
