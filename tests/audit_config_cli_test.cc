// `truegreen audit dockerfile`, `audit k8s` and `k8s render` through the real binary: exit codes,
// text and JSON output, truegreen's own deploy/ files, and bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "policy/matrix.h"
#include "tests/support/test_util.h"

namespace tg::testing {
namespace {

const std::string kPin = "@sha256:" + std::string(64, 'a');

std::string Src(const std::string& rel) { return SourceDir() + "/" + rel; }

TEST(AuditConfigCli, DeployDockerfilePassesWithRootContext) {
  ProcessResult r =
      RunTruegreen({"audit", "dockerfile", Src("deploy/Dockerfile"), "--context", SourceDir()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("PASS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(".dockerignore"), std::string::npos) << r.out;
}

TEST(AuditConfigCli, DeployDockerfileJson) {
  ProcessResult r = RunTruegreen(
      {"--json", "audit", "dockerfile", Src("deploy/Dockerfile"), "--context", SourceDir()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "pass");
  ASSERT_EQ(j["stages"].size(), 2u);
  EXPECT_EQ(j["stages"][1]["base"], "scratch");
  EXPECT_NE(j["stages"][0]["base"].get<std::string>().find("@sha256:"), std::string::npos);
}

TEST(AuditConfigCli, DeployDockerfileFailsWithoutItsIgnoreFile) {
  // The same Dockerfile audited against a context without the allowlist fails the ignore rule:
  // the pass above is due to the real .dockerignore, not to a rule that never fires.
  TempDir ctx;
  ProcessResult r =
      RunTruegreen({"audit", "dockerfile", Src("deploy/Dockerfile"), "--context", ctx.path()});
  EXPECT_EQ(r.exit_code, 6) << r.out << r.err;
  EXPECT_NE(r.out.find("dockerfile.dockerignore"), std::string::npos) << r.out;
}

TEST(AuditConfigCli, BadDockerfileExitsSixWithFileAndLine) {
  TempDir dir;
  WriteFile(dir / "Dockerfile",
            "FROM python:3.12\nRUN pip install torch\nCOPY . /app\nCMD [\"python\", \"app.py\"]\n");
  ProcessResult r = RunTruegreen({"audit", "dockerfile", dir / "Dockerfile"});
  EXPECT_EQ(r.exit_code, 6) << r.out << r.err;
  for (const char* rule : {"dockerfile.multi-stage", "dockerfile.base-digest",
                           "dockerfile.package-cache", "dockerfile.dockerignore"}) {
    EXPECT_NE(r.out.find(rule), std::string::npos) << rule << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("(line 2)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fix:"), std::string::npos) << r.out;
}

TEST(AuditConfigCli, DockerfileBadInputExitsTwo) {
  TempDir dir;
  WriteFile(dir / "Dockerfile", "FROM scratch\nNOPE x\n");
  ProcessResult bad = RunTruegreen({"audit", "dockerfile", dir / "Dockerfile"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find(dir / "Dockerfile:2"), std::string::npos) << bad.err;
  ProcessResult missing = RunTruegreen({"audit", "dockerfile", dir / "absent"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("absent"), std::string::npos) << missing.err;
  ProcessResult ctx =
      RunTruegreen({"audit", "dockerfile", Src("deploy/Dockerfile"), "--context", dir / "nodir"});
  EXPECT_EQ(ctx.exit_code, 2);
  EXPECT_NE(ctx.err.find("--context " + (dir / "nodir") + ": no such file or directory"),
            std::string::npos)
      << ctx.err;
  ProcessResult arg =
      RunTruegreen({"audit", "dockerfile", Src("deploy/Dockerfile"), "--build-arg", "novalue"});
  EXPECT_EQ(arg.exit_code, 2);
}

TEST(AuditConfigCli, DeployKustomizeBasePasses) {
  ProcessResult r = RunTruegreen(
      {"audit", "k8s", Src("deploy/k8s"), "--matrix", Src("deploy/matrix.production.yaml")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("2 workload(s)"), std::string::npos) << r.out;
}

TEST(AuditConfigCli, DeployK8sIsTheRenderOutput) {
  // deploy/k8s/*.yaml are `k8s render` for the production matrix, one object per file.
  ProcessResult r = RunTruegreen({"--json", "k8s", "render", "--matrix",
                                  Src("deploy/matrix.production.yaml"), "--image", "truegreen"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto docs = nlohmann::json::parse(r.out);
  const char* files[] = {"configmap.yaml",
                         "deployment.yaml",
                         "service.yaml",
                         "podmonitor.yaml",
                         "node-admission-job.yaml",
                         "hpa.yaml",
                         "prometheus-adapter-rules.yaml",
                         "prometheusrule.yaml"};
  constexpr std::size_t kFiles = sizeof(files) / sizeof(files[0]);
  ASSERT_EQ(docs.size(), kFiles);
  for (std::size_t i = 0; i < kFiles; ++i) {
    // Compare through the binary's own YAML reading: render each file back to JSON via audit
    // would lose fields, so compare kind/name and key content instead.
    std::string text = ReadFile(Src(std::string("deploy/k8s/") + files[i]));
    EXPECT_NE(text.find("kind: " + docs[i]["kind"].get<std::string>()), std::string::npos)
        << files[i];
    EXPECT_NE(text.find("name: " + docs[i]["metadata"]["name"].get<std::string>()),
              std::string::npos)
        << files[i];
  }
  // The ConfigMap carries the production matrix verbatim.
  EXPECT_EQ(docs[0]["data"]["matrix.yaml"], ReadFile(Src("deploy/matrix.production.yaml")));
  // The rendered YAML equals the committed files, object by object.
  ProcessResult y = RunTruegreen(
      {"k8s", "render", "--matrix", Src("deploy/matrix.production.yaml"), "--image", "truegreen"});
  ASSERT_EQ(y.exit_code, 0);
  std::string joined;
  for (std::size_t i = 0; i < kFiles; ++i) {
    std::string text = ReadFile(Src(std::string("deploy/k8s/") + files[i]));
    // Drop the leading comment block of each file.
    std::size_t body = text.find("apiVersion:");
    ASSERT_NE(body, std::string::npos) << files[i];
    joined += (i > 0 ? "---\n" : "") + text.substr(body);
  }
  EXPECT_EQ(joined, y.out) << "deploy/k8s is out of date: regenerate it from `truegreen k8s "
                              "render --matrix deploy/matrix.production.yaml --image truegreen`";
}

// `k8s render` without --matrix renders for the embedded production matrix: the same
// requirements as deploy/matrix.production.yaml and the ConfigMap deploy/k8s mounts
// (policy/matrix_test.cc holds those two equal), and the same objects but for the matrix text.
TEST(AuditConfigCli, RenderDefaultsToTheProductionMatrix) {
  ProcessResult d = RunTruegreen({"--json", "k8s", "render", "--image", "truegreen"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  ProcessResult f = RunTruegreen({"--json", "k8s", "render", "--matrix",
                                  Src("deploy/matrix.production.yaml"), "--image", "truegreen"});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  auto dj = nlohmann::json::parse(d.out), fj = nlohmann::json::parse(f.out);
  ASSERT_EQ(dj.size(), fj.size());
  auto embedded = policy::ParseMatrix(dj[0]["data"]["matrix.yaml"].get<std::string>(), "render");
  ASSERT_TRUE(embedded.ok()) << embedded.status().message();
  EXPECT_EQ(embedded->Fingerprint(), policy::ProductionMatrix().Fingerprint());
  dj[0]["data"]["matrix.yaml"] = fj[0]["data"]["matrix.yaml"];
  EXPECT_EQ(dj, fj);
}

TEST(AuditConfigCli, RenderPassesAuditAndCarriesMatrixAffinity) {
  TempDir dir;
  ProcessResult r = RunTruegreen({"k8s", "render", "--matrix", Src("deploy/matrix.example.yaml"),
                                  "--image", "reg.example/truegreen" + kPin, "--name", "tg-a100"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  for (const char* s : {"kind: Deployment", "kind: Service", "kind: PodMonitor", "kind: Job",
                        "path: /readyz", "path: /healthz", "startupProbe:", "nvidia.com/gpu: \"1\"",
                        "nvidia.com/cuda.driver-version.major", "- \"580\"",
                        "nvidia.com/gpu.compute.major", "- \"7\"", "nvidia.com/gpu.memory",
                        "- \"16383\"", "path: /metrics", "- admit", "name: tg-a100"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  }
  WriteFile(dir / "rendered.yaml", r.out);
  ProcessResult a = RunTruegreen(
      {"audit", "k8s", dir / "rendered.yaml", "--matrix", Src("deploy/matrix.example.yaml")});
  EXPECT_EQ(a.exit_code, 0) << a.out << a.err;
  ProcessResult unpinned =
      RunTruegreen({"k8s", "render", "--matrix", Src("deploy/matrix.example.yaml")});
  EXPECT_EQ(unpinned.exit_code, 0);
  EXPECT_NE(unpinned.err.find("not pinned by digest"), std::string::npos) << unpinned.err;
}

TEST(AuditConfigCli, K8sTableThroughTheCli) {
  TempDir dir;
  WriteFile(dir / "bad.yaml",
            "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n---\n"
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: gpu}\nspec:\n  template:\n"
            "    spec:\n      containers:\n      - name: infer\n        image: truegreen:latest\n"
            "        env: [{name: NVIDIA_VISIBLE_DEVICES, value: all}]\n");
  ProcessResult r = RunTruegreen({"--json", "audit", "k8s", dir / "bad.yaml"});
  EXPECT_EQ(r.exit_code, 6) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  std::set<std::string> rules;
  for (const auto& f : j["findings"]) {
    rules.insert(f["rule"].get<std::string>());
    EXPECT_EQ(f["path"], dir / "bad.yaml");
    EXPECT_EQ(f["document"], 2);
    EXPECT_GT(f["line"].get<int>(), 4);
  }
  for (const char* rule : {"k8s.gpu-request", "k8s.visible-devices-all", "k8s.probes",
                           "k8s.resources", "k8s.image-digest"}) {
    EXPECT_EQ(rules.count(rule), 1u) << rule << "\n" << r.out;
  }
  EXPECT_EQ(j["skipped"].size(), 1u);
}

TEST(AuditConfigCli, K8sBadInputExitsTwo) {
  TempDir dir;
  WriteFile(dir / "broken.yaml", "kind: Deployment\nspec:\n  template: [\n");
  ProcessResult r = RunTruegreen({"audit", "k8s", dir / "broken.yaml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir / "broken.yaml:"), std::string::npos) << r.err;
  ProcessResult missing = RunTruegreen({"audit", "k8s", dir / "none.yaml"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("none.yaml"), std::string::npos) << missing.err;
  WriteFile(dir / "bad_matrix.yaml", "schema: 1\ndevices: {count: many}\n");
  WriteFile(dir / "ok.yaml", "kind: Service\nmetadata: {name: s}\n");
  ProcessResult m =
      RunTruegreen({"audit", "k8s", dir / "ok.yaml", "--matrix", dir / "bad_matrix.yaml"});
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_NE(m.err.find("bad_matrix.yaml"), std::string::npos) << m.err;
  ProcessResult unknown_only = RunTruegreen({"audit", "k8s", dir / "ok.yaml"});
  EXPECT_EQ(unknown_only.exit_code, 0) << unknown_only.out << unknown_only.err;
  ProcessResult render = RunTruegreen({"k8s", "render", "--matrix", dir / "bad_matrix.yaml"});
  EXPECT_EQ(render.exit_code, 2);
  ProcessResult name = RunTruegreen(
      {"k8s", "render", "--matrix", Src("deploy/matrix.example.yaml"), "--name", "Bad_Name"});
  EXPECT_EQ(name.exit_code, 2);
}

}  // namespace
}  // namespace tg::testing
