// The CLI contract every command keeps (README "Output and errors", "Exit codes"):
//   - one error path: message on stderr, with --json exactly one {"error":{code,message,exit_code}}
//     object on stdout, for every subcommand (one table, checked against the CLI definition);
//   - exit codes: diff, logscan categories, the run performance gate;
//   - --policy is a runtime policy (which may name its matrix), --matrix takes matrices, with the
//     shipped deploy/ files; --policy on a command that reads none is an error;
//   - --version, --color, --log-format json.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "common/config.h"
#include "tests/bench_stub_server.h"
#include "tests/support/test_util.h"

namespace tg {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ProcessResult;
using testing::RunTruegreen;
using testing::StubServer;
using testing::TempDir;

std::string Deploy(const std::string& f) { return testing::SourceDir() + "/deploy/" + f; }

// Asserts the error contract on one run and returns the error object.
common::Json ExpectErrorObject(const ProcessResult& r, int exit_code, const std::string& what) {
  EXPECT_EQ(r.exit_code, exit_code) << what << "\nstdout: " << r.out << "\nstderr: " << r.err;
  // Exactly one JSON value on stdout (parsing the whole text fails on trailing output).
  auto j = common::ParseJson(r.out, "stdout");
  EXPECT_TRUE(j.ok()) << what << ": stdout is not one JSON document: " << r.out;
  if (!j.ok()) return common::Json::object();
  EXPECT_TRUE(j->is_object()) << what;
  EXPECT_TRUE(j->contains("error")) << what << ": " << r.out;
  const common::Json e = j->value("error", common::Json::object());
  EXPECT_TRUE(e.contains("code") && e["code"].is_string()) << what << ": " << r.out;
  EXPECT_TRUE(e.contains("message") && e["message"].is_string()) << what << ": " << r.out;
  EXPECT_EQ(e.value("exit_code", -1), r.exit_code) << what << ": " << r.out;
  // The same message is on stderr.
  const std::string msg = e.value("message", std::string("\x01"));
  EXPECT_THAT(r.err, HasSubstr(msg.substr(0, 60))) << what;
  return e;
}

struct BadInput {
  std::string command;  // command path, as __cli-tree names it
  std::vector<std::string> args;
  int exit_code;
  std::string code;  // Status code name
};

// One bad input per command. A new command without a row here fails EveryCommandHasARow.
std::vector<BadInput> BadInputs(const std::string& tmp) {
  const std::string missing = tmp + "/missing";
  return {
      {"probe", {"probe", "--no-such-flag"}, 2, "INVALID_ARG"},
      {"admit", {"admit", "--snapshot", missing + ".json"}, 2, "NOT_FOUND"},
      {"doctor", {"doctor", "--snapshot", missing + ".json"}, 2, "NOT_FOUND"},
      {"diff", {"diff", missing + "-a.json", missing + "-b.json"}, 2, "NOT_FOUND"},
      {"logscan", {"logscan", missing + ".log"}, 2, "NOT_FOUND"},
      {"run", {"run", "--model", missing + ".onnx", "--runs", "0"}, 2, "INVALID_ARG"},
      {"engines build",
       {"engines", "build", "--model", missing + ".onnx", "--min-shapes", "x:1"},
       2,
       "INVALID_ARG"},
      {"engines verify", {"engines", "verify", "--config", missing + ".yaml"}, 2, "NOT_FOUND"},
      {"tokenize", {"tokenize", "--tokenizer", missing, "a cat"}, 2, "NOT_FOUND"},
      {"schedule", {"schedule", "--config", missing + ".json"}, 2, "NOT_FOUND"},
      {"generate", {"generate", "--model", missing, "--prompt", "a cat"}, 2, "NOT_FOUND"},
      {"audit image", {"audit", "image", missing + ".tar"}, 2, "NOT_FOUND"},
      {"audit dockerfile", {"audit", "dockerfile", missing + "/Dockerfile"}, 2, "NOT_FOUND"},
      {"audit k8s", {"audit", "k8s", missing + ".yaml"}, 2, "NOT_FOUND"},
      {"k8s render", {"k8s", "render", "--matrix", missing + ".yaml"}, 2, "NOT_FOUND"},
      {"k8s promote",
       {"k8s", "promote", "--service", "tg", "--color", "green", "--api-server",
        "http://127.0.0.1:1", "--namespace", "ns", "--token-file", missing + "-token"},
       2,
       "NOT_FOUND"},
      {"k8s wait-ready",
       {"k8s", "wait-ready", "--deployment", "Bad_Name", "--api-server", "http://127.0.0.1:1"},
       2,
       "INVALID_ARG"},
      {"serve", {"serve", "--models", missing}, 2, "NOT_FOUND"},
      {"bench", {"bench", "--url", "http://127.0.0.1:1", "--slo", "p95<<8s"}, 2, "INVALID_ARG"},
      {"compare", {"compare", missing + "-a.json", missing + "-b.json"}, 2, "NOT_FOUND"},
      {"help", {"help", "no-such-command"}, 2, "INVALID_ARG"},
  };
}

void CollectLeaves(const common::Json& node, std::set<std::string>* out) {
  if (node.value("hidden", false)) return;
  if (node["subcommands"].empty()) {
    out->insert(node["path"].get<std::string>());
    return;
  }
  for (const auto& c : node["subcommands"]) CollectLeaves(c, out);
}

TEST(CliContract, EveryCommandHasARowInTheErrorTable) {
  ProcessResult t = RunTruegreen({"__cli-tree"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  auto tree = common::ParseJson(t.out, "__cli-tree");
  ASSERT_TRUE(tree.ok()) << t.out;
  std::set<std::string> leaves;
  CollectLeaves(*tree, &leaves);
  std::set<std::string> rows;
  for (const BadInput& b : BadInputs("/tmp")) rows.insert(b.command);
  EXPECT_EQ(leaves, rows);
}

TEST(CliContract, EveryCommandReportsErrorsWithOneSchema) {
  TempDir tmp;
  for (const BadInput& b : BadInputs(tmp.path())) {
    std::vector<std::string> args = {"--json"};
    args.insert(args.end(), b.args.begin(), b.args.end());
    common::Json e = ExpectErrorObject(RunTruegreen(args), b.exit_code, b.command);
    EXPECT_EQ(e.value("code", std::string()), b.code) << b.command;
    // Without --json: nothing on stdout, the message on stderr, the same exit code.
    ProcessResult plain = RunTruegreen(b.args);
    EXPECT_EQ(plain.exit_code, b.exit_code) << b.command;
    EXPECT_EQ(plain.out, "") << b.command;
    EXPECT_THAT(plain.err, HasSubstr("truegreen")) << b.command;
  }
}

TEST(CliContract, ParseErrorsAndUnknownCommandsUseTheSameSchema) {
  ExpectErrorObject(RunTruegreen({"--json", "doctr"}), 2, "unknown command");
  ExpectErrorObject(RunTruegreen({"doctor", "--json", "--no-such-flag"}), 2, "unknown flag");
  ExpectErrorObject(RunTruegreen({"--json"}), 2, "no command");
  ExpectErrorObject(RunTruegreen({"--json", "--color", "sometimes", "probe"}), 2, "bad --color");
}

// Every stderr line of `r` is one JSON object with "level" and "msg" (--log-format json).
void ExpectJsonStderr(const ProcessResult& r, const std::string& what) {
  std::size_t start = 0;
  while (start < r.err.size()) {
    std::size_t nl = r.err.find('\n', start);
    if (nl == std::string::npos) nl = r.err.size();
    const std::string line = r.err.substr(start, nl - start);
    auto j = common::ParseJson(line, "stderr line");
    EXPECT_TRUE(j.ok() && j->is_object() && j->contains("level") && j->contains("msg"))
        << what << ": " << line;
    start = nl + 1;
  }
}

// The failure path of every command (the error table) and the deeper failures that print more
// than the error line (the startup steps of run and generate refused on this GPU-less node, a
// benchmark in which no request succeeded) keep --log-format json on every stderr line.
TEST(CliContract, EveryCommandsFailurePathsKeepStderrJson) {
  TempDir tmp;
  std::vector<std::pair<std::string, std::vector<std::string>>> runs;
  for (const BadInput& b : BadInputs(tmp.path())) runs.push_back({b.command, b.args});
  const std::string model = testing::BinaryDir() + "/models/runtime/matmul_softmax.onnx";
  const std::string sd = testing::BinaryDir() + "/models/sd-tiny/sd15-legacy";
  if (std::filesystem::exists(model)) {
    runs.push_back({"run (production refuses the node)", {"run", "--model", model}});
  }
  if (std::filesystem::exists(sd)) {
    runs.push_back({"generate (production refuses the node)",
                    {"generate", "--model", sd, "--prompt", "a cat", "-o", tmp / "x.png"}});
  }
  runs.push_back({"bench (no request succeeded)",
                  {"bench", "--url", "http://127.0.0.1:9", "--warmup", "0", "--window", "0.2",
                   "--max-trials", "1"}});
  for (const auto& [what, args] : runs) {
    std::vector<std::string> a = {"--log-format", "json"};
    a.insert(a.end(), args.begin(), args.end());
    ProcessResult r = RunTruegreen(a);
    EXPECT_NE(r.exit_code, 0) << what;
    ASSERT_FALSE(r.err.empty()) << what;
    ExpectJsonStderr(r, what);
  }
}

// A missing input is a usage error on every node, before any startup step (production on this
// GPU-less node would otherwise refuse first, exit 3).
TEST(CliContract, MissingInputFilesExitTwoBeforeTheStartupChain) {
  TempDir tmp;
  const std::string model = testing::BinaryDir() + "/models/runtime/matmul_softmax.onnx";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--json", "run", "--model", tmp / "missing.onnx"},
        std::vector<std::string>{"--json", "run", "--model", tmp.path()},
        std::vector<std::string>{"--json", "run", "--model", model, "--input",
                                 "x=" + (tmp / "missing.npy")},
        // A folder that is no pipeline (no model_index.json) and a missing prompt file.
        std::vector<std::string>{"--json", "generate", "--prompt", "a cat", "--model", tmp.path()},
        std::vector<std::string>{"--json", "generate", "--model", tmp.path(), "--prompt-file",
                                 tmp / "missing.txt"},
        // engines build checks its model before ONNX Runtime and the TensorRT provider.
        std::vector<std::string>{"--json", "engines", "build", "--min-shapes", "x:1",
                                 "--opt-shapes", "x:1", "--max-shapes", "x:1", "--model",
                                 tmp / "missing.onnx"}}) {
    ProcessResult r = RunTruegreen(args);
    common::Json e = ExpectErrorObject(r, 2, args.back());
    EXPECT_THAT(e.value("message", std::string()), HasSubstr(tmp.path())) << r.out;
    EXPECT_THAT(r.out, Not(HasSubstr("\"startup\""))) << "the chain ran first: " << r.out;
  }
}

// The failures that are results, not errors (no GPU path 3, drift 4, a performance gate 5, an
// audit 6), each run to its exit code, keep --log-format json on every stderr line too.
TEST(CliContract, EveryResultFailureKeepsStderrJson) {
  TempDir tmp;
  ProcessResult probe = RunTruegreen({"probe", "--json"});
  ASSERT_EQ(probe.exit_code, 0) << probe.err;
  auto snap = common::ParseJson(probe.out, "probe");
  ASSERT_TRUE(snap.ok()) << probe.out;
  testing::WriteFile(tmp / "a.json", probe.out);
  (*snap)["onnxruntime"]["library"]["version"] = "1.1.0";
  testing::WriteFile(tmp / "b.json", snap->dump());
  testing::WriteFile(tmp / "fallback.log", "Force fallback to CPU execution for node: n1\n");
  testing::WriteFile(tmp / "Dockerfile", "FROM ubuntu:latest\nRUN apt-get install -y curl\n");
  testing::WriteFile(tmp / "d.yaml",
                     "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n"
                     "  selector: {matchLabels: {a: b}}\n  template:\n"
                     "    metadata: {labels: {a: b}}\n    spec:\n      containers:\n"
                     "      - name: c\n        image: nginx:latest\n");
  struct Case {
    std::string what;
    std::vector<std::string> args;
    int exit_code;
  };
  std::vector<Case> cases = {
      {"doctor on this GPU-less node", {"doctor"}, 3},
      {"admit on this GPU-less node", {"admit"}, 3},
      {"diff of drifted snapshots", {"diff", tmp / "a.json", tmp / "b.json"}, 4},
      {"logscan with a CPU fallback", {"logscan", tmp / "fallback.log"}, 3},
      {"audit dockerfile with findings", {"audit", "dockerfile", tmp / "Dockerfile"}, 6},
      {"audit k8s with findings", {"audit", "k8s", tmp / "d.yaml"}, 6},
  };
  const std::string model = testing::BinaryDir() + "/models/runtime/matmul_softmax.onnx";
  if (std::filesystem::exists(model)) {
    cases.push_back({"run over its --max-p99-ms gate",
                     {"--policy", "dev", "run", "--model", model, "--runs", "2", "--warmup", "0",
                      "--max-p99-ms", "0.000001"},
                     5});
  }
  for (const Case& c : cases) {
    std::vector<std::string> a = {"--log-format", "json"};
    a.insert(a.end(), c.args.begin(), c.args.end());
    ProcessResult r = RunTruegreen(a);
    EXPECT_EQ(r.exit_code, c.exit_code) << c.what << "\n" << r.out << r.err;
    ExpectJsonStderr(r, c.what);
  }
  // bench over an SLO it cannot meet (p95 under 1 us), then compare against a run on a server
  // ten times slower through a p95 gate.
  StubServer server(/*delay_ms=*/2);
  auto bench = [&](const std::string& out) {
    return std::vector<std::string>{
        "--log-format", "json",         "bench", "--url", server.url(), "--warmup", "0", "--window",
        "0.5",          "--max-trials", "1",     "--slo", "p95<1us",    "--out",    out};
  };
  ProcessResult slo = RunTruegreen(bench(tmp / "run1.json"));
  EXPECT_EQ(slo.exit_code, 5) << slo.out << slo.err;
  ExpectJsonStderr(slo, "bench over its SLO");
  server.set_delay_ms(20);
  ProcessResult slower = RunTruegreen(bench(tmp / "run2.json"));
  EXPECT_EQ(slower.exit_code, 5) << slower.out << slower.err;
  ProcessResult gate = RunTruegreen({"--log-format", "json", "compare", tmp / "run1.json",
                                     tmp / "run2.json", "--fail-on", "p95 +10%"});
  EXPECT_EQ(gate.exit_code, 5) << gate.out << gate.err;
  ExpectJsonStderr(gate, "compare over its gate");
}

TEST(CliContract, LogFormatJsonMakesEveryStderrLineJson) {
  TempDir tmp;
  const std::vector<std::vector<std::string>> runs = {
      {"--log-format", "json", "admit", "--snapshot", tmp / "missing.json"},
      {"--log-format=json", "doctor", "--no-such-flag"},
      {"--log-format", "json", "doctr"},
      {"--log-format", "json", "--policy", Deploy("matrix.production.yaml"), "doctor"},
      {"--log-format", "json", "k8s", "render", "--matrix", Deploy("matrix.production.yaml"),
       "--image", "unpinned:latest"},
  };
  for (const auto& args : runs) {
    ProcessResult r = RunTruegreen(args);
    ASSERT_FALSE(r.err.empty()) << args.back();
    ExpectJsonStderr(r, args.back());
  }
}

// --- exit codes ------------------------------------------------------------------------------

TEST(CliContract, DiffOfDifferentSnapshotsIsDriftNotABug) {
  TempDir t;
  ProcessResult p = RunTruegreen({"probe", "--json"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  testing::WriteFile(t / "a.json", p.out);
  auto j = common::ParseJson(p.out, "probe");
  ASSERT_TRUE(j.ok());
  (*j)["nvml"]["driver_version"] = "999.1.1";
  testing::WriteFile(t / "b.json", j->dump());
  EXPECT_EQ(RunTruegreen({"diff", t / "a.json", t / "a.json"}).exit_code, 0);
  ProcessResult d = RunTruegreen({"--json", "diff", t / "a.json", t / "b.json"});
  EXPECT_EQ(d.exit_code, 4) << d.out << d.err;
  auto dj = common::ParseJson(d.out, "diff");
  ASSERT_TRUE(dj.ok()) << d.out;
  EXPECT_FALSE(dj->value("equal", true));
}

TEST(CliContract, LogscanExitCodeFollowsTheMostSevereCategory) {
  const std::string memcpy =
      "2 Memcpy nodes are added to the graph main_graph for CUDAExecutionProvider\n";
  const std::string drift = "CUDA driver version is insufficient for CUDA runtime version\n";
  const std::string fallback =
      "EP Error when using ['CUDAExecutionProvider'] Falling back to ['CPUExecutionProvider'] "
      "and retrying.\n";
  EXPECT_EQ(RunTruegreen({"logscan"}, {}, "all good\n").exit_code, 0);
  EXPECT_EQ(RunTruegreen({"logscan"}, {}, memcpy).exit_code, 5);
  EXPECT_EQ(RunTruegreen({"logscan"}, {}, memcpy + drift).exit_code, 4);
  ProcessResult all = RunTruegreen({"--json", "logscan", "-"}, {}, drift + fallback + memcpy);
  EXPECT_EQ(all.exit_code, 3);
  auto j = common::ParseJson(all.out, "logscan");
  ASSERT_TRUE(j.ok()) << all.out;
  EXPECT_EQ((*j)["exit_code"], 3);
  EXPECT_EQ((*j)["verdict"], "NOT ACCELERATED");
  // Verdict first in text.
  ProcessResult text = RunTruegreen({"logscan"}, {}, memcpy);
  EXPECT_EQ(text.out.rfind("SLOW PATH", 0), 0u) << text.out;
}

TEST(CliContract, RunPerformanceGateExitsFive) {
  const std::string model = testing::BinaryDir() + "/models/runtime/unet_tiny.onnx";
  if (!std::filesystem::exists(model)) {
    GTEST_SKIP() << model << " not generated (target runtime_models, built by `make build`)";
  }
  ProcessResult r = RunTruegreen({"--policy", "dev", "--json", "run", "--model", model, "--runs",
                                  "2", "--min-time", "0", "--max-p99-ms", "0.000001"});
  EXPECT_EQ(r.exit_code, 5) << r.out << r.err;
  auto j = common::ParseJson(r.out, "run");
  ASSERT_TRUE(j.ok()) << r.out;
  EXPECT_FALSE((*j)["gate"]["passed"].get<bool>());
  ProcessResult ok = RunTruegreen({"--policy", "dev", "run", "--model", model, "--runs", "2",
                                   "--min-time", "0", "--max-p99-ms", "100000"});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("passed"));
}

// --- --policy and --matrix with the shipped files --------------------------------------------

class ShippedPolicy : public ::testing::Test {
 protected:
  void SetUp() override {
    ProcessResult p = RunTruegreen({"probe", "--json"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    testing::WriteFile(dir_ / "node.json", p.out);
    snapshot_ = dir_ / "node.json";
  }
  TempDir dir_;
  std::string snapshot_;
};

TEST_F(ShippedPolicy, ProductionPolicyFileIsReadAsARuntimePolicy) {
  ProcessResult r = RunTruegreen(
      {"--json", "--policy", Deploy("policy.production.yaml"), "doctor", "--snapshot", snapshot_});
  EXPECT_NE(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("device_id")));
  auto j = common::ParseJson(r.out, "doctor");
  ASSERT_TRUE(j.ok()) << r.out;
  EXPECT_EQ((*j)["matrix"]["name"], "production");  // the policy names no matrix: its profile's
  ProcessResult builtin = RunTruegreen({"--json", "doctor", "--snapshot", snapshot_});
  EXPECT_EQ(r.exit_code, builtin.exit_code);
}

TEST_F(ShippedPolicy, DevPolicyFileAllowsTheCpu) {
  ProcessResult r = RunTruegreen(
      {"--json", "--policy", Deploy("policy.dev.yaml"), "doctor", "--snapshot", snapshot_});
  EXPECT_NE(r.exit_code, 2) << r.err;
  EXPECT_NE(r.exit_code, 3) << r.out;  // dev: a missing GPU path is never "not accelerated"
  auto j = common::ParseJson(r.out, "doctor");
  ASSERT_TRUE(j.ok()) << r.out;
  EXPECT_EQ((*j)["matrix"]["name"], "dev");
}

TEST_F(ShippedPolicy, APolicyNamesItsMatrix) {
  // The shipped dev matrix beside the policy, named relative to the policy file's folder.
  testing::WriteFile(dir_ / "matrix.dev.yaml", testing::ReadFile(Deploy("matrix.dev.yaml")));
  testing::WriteFile(dir_ / "policy.yaml", "profile: production\nmatrix: matrix.dev.yaml\n");
  ProcessResult r =
      RunTruegreen({"--json", "--policy", dir_ / "policy.yaml", "admit", "--snapshot", snapshot_});
  auto j = common::ParseJson(r.out, "admit");
  ASSERT_TRUE(j.ok()) << r.out << r.err;
  EXPECT_EQ((*j)["matrix"]["name"], "dev");
  EXPECT_THAT((*j)["matrix"]["source"].get<std::string>(), HasSubstr("matrix.dev.yaml"));
}

TEST_F(ShippedPolicy, MatrixFlagTakesTheShippedMatrices) {
  for (const char* m : {"matrix.production.yaml", "matrix.dev.yaml", "matrix.example.yaml"}) {
    ProcessResult r =
        RunTruegreen({"--json", "admit", "--matrix", Deploy(m), "--snapshot", snapshot_});
    EXPECT_NE(r.exit_code, 2) << m << ": " << r.err;
    EXPECT_TRUE(common::ParseJson(r.out, m).ok()) << m;
  }
  ProcessResult k8s =
      RunTruegreen({"audit", "k8s", Deploy("k8s"), "--matrix", Deploy("matrix.production.yaml")});
  EXPECT_NE(k8s.exit_code, 2) << k8s.err;
}

TEST_F(ShippedPolicy, AMatrixIsNotAPolicyAndSaysWhatToDo) {
  ProcessResult r = RunTruegreen(
      {"--json", "--policy", Deploy("matrix.production.yaml"), "doctor", "--snapshot", snapshot_});
  common::Json e = ExpectErrorObject(r, 2, "matrix as --policy");
  EXPECT_THAT(e.value("message", std::string()), HasSubstr("--matrix"));
}

TEST_F(ShippedPolicy, PolicyOnACommandThatReadsNoneIsAnError) {
  ProcessResult r = RunTruegreen({"--json", "--policy", Deploy("policy.production.yaml"), "audit",
                                  "dockerfile", Deploy("Dockerfile")});
  common::Json e = ExpectErrorObject(r, 2, "--policy on audit dockerfile");
  EXPECT_THAT(e.value("message", std::string()), HasSubstr("does not apply"));
  // Without --policy the same audit runs (pass or fail, never a usage error).
  EXPECT_NE(RunTruegreen({"audit", "dockerfile", Deploy("Dockerfile")}).exit_code, 2);
  // audit k8s reads the matrix the policy names.
  ProcessResult k8s = RunTruegreen(
      {"--json", "--policy", Deploy("policy.production.yaml"), "audit", "k8s", Deploy("k8s")});
  EXPECT_NE(k8s.exit_code, 2) << k8s.err;
  auto j = common::ParseJson(k8s.out, "audit k8s");
  ASSERT_TRUE(j.ok()) << k8s.out;
  EXPECT_THAT((*j)["matrix"].get<std::string>(), HasSubstr("policy.production.yaml"));
}

// --- version and colour -----------------------------------------------------------------------

TEST(CliContract, VersionNamesTruegreenItsCommitAndTheBundledOrt) {
  const std::string setup = testing::ReadFile(testing::SourceDir() + "/scripts/setup.sh");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(setup, m, std::regex("ORT_VERSION=\"([0-9.]+)\"")));
  const std::string ort = m[1];
  ProcessResult r = RunTruegreen({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex(R"(^truegreen \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}|unknown)\))")))
      << r.out;
  EXPECT_THAT(r.out, HasSubstr("ONNX Runtime " + ort));
  // A version line claims nothing about what sits beside the binary (an image may ship the core
  // without the GPU provider plugins): the release it was built against, and where to look.
  EXPECT_THAT(r.out, HasSubstr("the release built against")) << r.out;
  ProcessResult j = RunTruegreen({"--json", "--version"});
  auto v = common::ParseJson(j.out, "version");
  ASSERT_TRUE(v.ok()) << j.out;
  EXPECT_EQ((*v)["onnxruntime"], ort);
  EXPECT_TRUE((*v).contains("commit") && (*v).contains("truegreen"));
  // It also names the pair setup installs, as setup.sh pins it, and why it is a pair.
  std::smatch core, gpu;
  ASSERT_TRUE(std::regex_search(setup, core, std::regex("ORT_CORE_PKG=\"([^\"]+)\"")));
  ASSERT_TRUE(std::regex_search(setup, gpu, std::regex("ORT_GPU_PKG=\"([^\"]+)\"")));
  EXPECT_THAT(r.out, HasSubstr("GPU-flavor core of " + core[1].str())) << r.out;
  EXPECT_THAT(r.out, HasSubstr("providers of " + gpu[1].str())) << r.out;
  EXPECT_THAT(r.out, HasSubstr("GPU providers need a core built with CUDA")) << r.out;
  EXPECT_EQ((*v)["onnxruntime_setup"]["core"], core[1].str());
  EXPECT_EQ((*v)["onnxruntime_setup"]["providers"], gpu[1].str());
}

TEST(CliContract, ColourOnlyWhenAskedOrOnATerminal) {
  const std::vector<std::string> doctor = {"--policy", "dev", "doctor"};
  auto with = [&](std::vector<std::string> pre, const std::map<std::string, std::string>& env) {
    pre.insert(pre.end(), doctor.begin(), doctor.end());
    return RunTruegreen(pre, env);
  };
  // stdout is a pipe here: auto means no colour.
  EXPECT_THAT(with({}, {{"NO_COLOR", testing::kUnset}}).out, Not(HasSubstr("\033[")));
  EXPECT_THAT(with({"--color", "auto"}, {{"NO_COLOR", testing::kUnset}}).out,
              Not(HasSubstr("\033[")));
  EXPECT_THAT(with({"--color", "always"}, {}).out, HasSubstr("\033["));
  EXPECT_THAT(with({"--color", "always"}, {{"NO_COLOR", "1"}}).out, HasSubstr("\033["));
  EXPECT_THAT(with({"--color", "never"}, {}).out, Not(HasSubstr("\033[")));
}

}  // namespace
}  // namespace tg
