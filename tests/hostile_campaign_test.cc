// Hostile input, round four: what a campaign over every command, flag and input kind still found
// once the earlier rounds (tests/hostile_input_test.cc, tests/hostile_cli_test.cc) passed. SLO and
// gate values (NaN, infinity, overflow, a metric bounded twice), URL hosts no resolver could
// answer, empty and space-padded numbers, values that come from TRUEGREEN_* variables named as
// the variable, flags named in shape errors, an explicitly empty provider list, a build argument
// given twice, and counts that cost memory before any field is checked (Dockerfile stages, YAML
// nodes of a configuration file, component config sizes). Table-driven through the real binary:
// each case states its exit code, a message fragment, a peak-RSS ceiling and a time limit.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/onnx_builder.h"
#include "tests/support/hostile_bounds.h"
#include "tests/support/hostile_fixtures.h"
#include "tests/support/measured_run.h"
#include "tests/support/test_util.h"

namespace tg {
namespace {

// Peak RSS of a command that loads no ONNX Runtime, and of one that does.
constexpr long kPlainRssMb = 60;
constexpr long kOrtRssMb = 420;

struct Case {
  std::string name;
  std::vector<std::string> args;  // "@/x" is replaced by "<fixture dir>/x"
  int exit_code;
  std::string fragment;
  long max_rss_mb = kPlainRssMb;
  int time_limit_s = 20;
  std::map<std::string, std::string> env = {};
};

std::string g_dir;

std::string Expand(const std::string& a) { return testing::ExpandFixtureDir(a, g_dir); }

void W(const std::string& rel, const std::string& content) {
  testing::WriteFile(g_dir + "/" + rel, content);
}

std::string Model() { return testing::BinaryDir() + "/models/runtime/add_int64.onnx"; }

void MakeFixtures() {
  W("snap.json", R"({"schema_version": "truegreen.snapshot/v1", "env": {}})");
  W("run.json", testing::BenchRunFile());
  W("bench_nan.yaml", "slo: [\"p95<nans\"]\n");
  W("Dockerfile_arg", "ARG BASE=debian:12\nFROM $BASE\n");
  W("clean.log", "all good\n");
  W("supp_unknown.yaml", "suppressions:\n  - {rule: no.such.rule, reason: r}\n");
  W("scheduler_config.json", R"({"_class_name": "PNDMScheduler", "num_train_timesteps": 1000})");
  W("policy_no_providers.yaml", "profile: dev\nallow_cpu: true\nproviders: []\n");
  std::string stages;
  for (int i = 0; i < 1001; ++i) stages += "FROM debian:12 AS s" + std::to_string(i) + "\nRUN x\n";
  W("Dockerfile_stages", stages);
  // A generic model whose config lists 200 000 warm-up runs: 1.4 million YAML nodes (a gigabyte
  // of yaml-cpp tree before any field was checked).
  W("warm/m.onnx", testing::ReadFile(Model()));
  std::string warm = "warmup:\n";
  for (int i = 0; i < 200000; ++i) warm += "  - {a: [3], b: [3]}\n";
  W("warm/m.yaml", warm);
  W("ok_models/m.onnx", testing::ReadFile(Model()));
  W("ok_models/m.yaml", "warmup: []\n");
  std::string matrix =
      "schema: 1\nname: dev\nrequire_gpu: false\nonnxruntime:\n  version: \"1.29\"\n"
      "  providers: [CPUExecutionProvider]\ndevices:\n  count: 0\nextra:\n";
  for (int i = 0; i < 300000; ++i) matrix += "  - {}\n";
  W("matrix_300k.yaml", matrix);
  std::string objs = "[";
  for (int i = 0; i < 1000000; ++i) objs += i ? ",{}" : "{}";
  W("objs_1M.json", objs + "]");
  ::mkdir((g_dir + "/adir").c_str(), 0755);
  ::mkdir((g_dir + "/pipe_fifo").c_str(), 0755);
  ::mkfifo((g_dir + "/pipe_fifo/model_index.json").c_str(), 0600);
  // A model whose inputs declare a dimension of -5 (ONNX Runtime takes it as symbolic and runs).
  namespace onnx = runtime::onnx;
  onnx::Graph g;
  g.nodes.push_back({"Add", {"a", "b"}, {"c"}, {}});
  g.inputs = {{"a", onnx::ElemType::kFloat, {1, -5}}, {"b", onnx::ElemType::kFloat, {1, -5}}};
  g.outputs = {{"c", onnx::ElemType::kFloat, {1, -5}}};
  W("neg_dim.onnx", onnx::SerializeModel(g));
  // Run files a bench never writes: 2^40 connections, a fractional request count.
  std::string run = testing::BenchRunFile();
  std::string huge = run, frac = run;
  huge.replace(huge.find("\"concurrency\": 1"), 16, "\"concurrency\": 1099511627776");
  frac.replace(frac.find("\"ok\": 10"), 8, "\"ok\": 10.5");
  W("run_concurrency_2e40.json", huge);
  W("run_ok_fraction.json", frac);
  // engines verify configs whose shapes are bad: checked before the GPU identity is asked for.
  for (const auto& [name, shapes] : std::map<std::string, std::string>{
           {"minus1", "a:-1"}, {"1e11", "a:1e11"}, {"colons", ":::"}}) {
    W("verify_" + name + ".yaml",
      "models:\n  - model: " + Model() + "\n    shapes: [\"" + shapes + "\"]\n");
  }
  W("bench_body_1e999.yaml", "api: kserve\nmodel: m\nbody: {inputs: [{data: [1e999]}]}\n");
  W("bench_body_nan.yaml", "api: kserve\nmodel: m\nbody: {inputs: [{data: [.nan]}]}\n");
  W("supp_typo.yaml", "suppressions:\n  - {rule: k8s.imag-digest, reason: r}\n");
  W("supp_twice.yaml",
    "suppressions:\n  - {rule: k8s.image-digest, reason: r}\n"
    "  - {rule: k8s.image-digest, reason: again}\n");
  W("pod.yaml", "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n");
}

const ::testing::Environment* const kEnv =
    ::testing::AddGlobalTestEnvironment(new testing::FixtureDirEnvironment(&g_dir, MakeFixtures));

std::vector<std::string> Bench(std::vector<std::string> extra) {
  std::vector<std::string> a = {"bench", "--url", "http://127.0.0.1:9", "--no-nvml"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::vector<std::string> Compare(const std::vector<std::string>& gates) {
  std::vector<std::string> a = {"compare", "@/run.json", "@/run.json"};
  for (const auto& g : gates) a.insert(a.end(), {"--fail-on", g});
  return a;
}

void AddGateCases(std::vector<Case>* t) {
  // Thresholds and gates: refused before any request is sent (a NaN bound fails every point).
  t->push_back({"slo_nan", Bench({"--slo", "p95<nans"}), 2,
                "--slo: threshold \"p95<nans\": expected a finite non-negative number"});
  t->push_back({"slo_inf", Bench({"--slo", "p95<infs"}), 2, "(NaN and infinity are refused)"});
  t->push_back({"slo_rate_nan", Bench({"--slo", "images_per_min>nan"}), 2,
                "threshold \"images_per_min>nan\""});
  t->push_back({"slo_latency_huge", Bench({"--slo", "p95<99999999999999999999s"}), 2,
                "is outside the range 0..86400 s"});
  t->push_back({"slo_same_bound_twice", Bench({"--slo", "p95<8s", "--slo", "p95<9s"}), 2,
                "p95 < is given twice"});
  t->push_back({"bench_file_slo_nan", Bench({"--bench-file", "@/bench_nan.yaml"}), 2,
                "@/bench_nan.yaml:1:6: field slo: threshold \"p95<nans\""});
  t->push_back({"compare_gate_nan", Compare({"p95 +nan%"}), 2,
                "--fail-on \"p95 +nan%\": \"nan\" is not a finite non-negative number"});
  t->push_back({"compare_gate_minus_inf", Compare({"p95 -inf%"}), 2, "not a finite"});
  t->push_back({"compare_gate_overflow", Compare({"p95 +99999999999999999999%"}), 2,
                "is outside the range 0..1000%"});
  t->push_back({"compare_gate_twice", Compare({"p95 +10%", "p95 +5%"}), 2,
                "--fail-on \"p95 +5%\": a gate on p95 in this direction is given twice"});
  t->push_back({"render_gate_twice",
                {"k8s", "render", "--matrix", testing::SourceDir() + "/deploy/matrix.dev.yaml",
                 "--rollout", "blue-green", "--fail-on", "p95 +10%", "--fail-on", "p95 +20%"},
                2,
                "a gate on p95 in this direction is given twice"});
  // A host no resolver could answer is a usage error, not an unreachable server (exit 3).
  t->push_back({"bench_url_host_with_space",
                {"bench", "--url", "http://a b:80"},
                2,
                "--url \"http://a b:80\": host \"a b\" is not a host name"});
  t->push_back({"promote_api_server_port_99999",
                {"k8s", "promote", "--service", "s", "--color", "green", "--api-server",
                 "http://127.0.0.1:99999", "--namespace", "ns"},
                2,
                "--api-server 'http://127.0.0.1:99999': port 99999 is outside 1..65535"});
  t->push_back({"bench_url_ipv6_not_hex",
                {"bench", "--url", "http://[zz]:80"},
                2,
                "is not a host name or an IPv6 address"});
}

void AddNumberAndEnvCases(std::vector<Case>* t) {
  // An empty number became 0 or the default; a padded one was read as if it were not.
  t->push_back({"run_warmup_empty",
                {"--policy", "dev", "run", "--model", Model(), "--warmup", ""},
                2,
                "--warmup: an empty value is not a number; allowed: 0..1000000 runs"});
  t->push_back({"serve_port_empty",
                {"serve", "--models", "@/ok_models", "--port", ""},
                2,
                "--port: an empty value is not a number"});
  t->push_back({"generate_steps_empty",
                {"generate", "--model", "@/adir", "--prompt", "x", "--steps", ""},
                2,
                "--steps: an empty value is not a number; allowed: 1..1000 steps"});
  t->push_back({"render_port_space_padded",
                {"k8s", "render", "--matrix", testing::SourceDir() + "/deploy/matrix.dev.yaml",
                 "--port", " 5"},
                2,
                "--port: ' 5' has spaces around the number"});
  // CLI11 reads any integer as a boolean and "" as false: a typo would flip the exit gate.
  t->push_back({"serve_exit_on_fail_two",
                {"serve", "--models", "@/ok_models", "--port", "0", "--exit-on-fail", "2"},
                2,
                "--exit-on-fail: '2' is not a boolean; allowed: true, false, 1, 0, yes, no"});
  t->push_back({"serve_exit_on_fail_env_empty_word",
                {"serve", "--models", "@/ok_models", "--port", "0"},
                2,
                "'maybe' is not a boolean; allowed: true, false, 1, 0, yes, no, on, off (the value "
                "comes from the environment variable TRUEGREEN_EXIT_ON_FAIL)",
                kPlainRssMb,
                20,
                {{"TRUEGREEN_EXIT_ON_FAIL", "maybe"}}});
  // A kernel file is "regular" to stat: it was accepted at start and failed (or changed a
  // setting) later.
  t->push_back(
      {"serve_port_file_proc",
       {"serve", "--models", "@/ok_models", "--port", "0", "--port-file", "/proc/self/status"},
       2,
       "--port-file: /proc/self/status: is on the kernel's /proc or /sys file system"});
  t->push_back({"serve_access_log_proc_sys",
                {"serve", "--models", "@/ok_models", "--port", "0", "--access-log",
                 "/proc/sys/kernel/hostname"},
                2,
                "refusing to write there"});
  t->push_back({"serve_port_file_empty",
                {"serve", "--models", "@/ok_models", "--port", "0", "--port-file", ""},
                2,
                "--port-file: an empty value names nothing"});
  t->push_back({"schedule_scheduler_unknown_named",
                {"schedule", "--config", "@/scheduler_config.json", "--scheduler", "euler,euler"},
                2,
                "--scheduler: unknown scheduler 'euler,euler'"});
  t->push_back({"generate_scheduler_unknown_named",
                {"generate", "--model", "@/adir", "--prompt", "x", "--scheduler", "eulr"},
                2,
                "--scheduler: unknown scheduler 'eulr'"});
  t->push_back({"bench_scheduler_blank", Bench({"--scheduler", " "}), 2,
                "--scheduler: an empty value names nothing"});
  // Checked after parsing, and still named as the variable that gave the value.
  t->push_back({"serve_port_file_env_device",
                {"serve", "--models", "@/ok_models", "--port", "0"},
                2,
                "(the value comes from the environment variable TRUEGREEN_PORT_FILE)",
                kPlainRssMb,
                20,
                {{"TRUEGREEN_PORT_FILE", "/dev/null"}}});
  t->push_back({"serve_access_log_env_directory",
                {"serve", "--models", "@/ok_models", "--port", "0"},
                2,
                "--access-log: @/adir: is a directory, not a regular file; refusing to write over "
                "it (the value comes from the environment variable TRUEGREEN_ACCESS_LOG)",
                kPlainRssMb,
                20,
                {{"TRUEGREEN_ACCESS_LOG", "@/adir"}}});
  t->push_back({"serve_models_env_missing",
                {"serve"},
                2,
                "(the value comes from the environment variable TRUEGREEN_MODELS)",
                kPlainRssMb,
                20,
                {{"TRUEGREEN_MODELS", "@/no_such_folder"}}});
}

void AddListAndCapCases(std::vector<Case>* t) {
  t->push_back({"engines_shapes_negative",
                {"engines", "build", "--model", Model(), "--shapes", "a:-5"},
                2,
                "--shapes: shape entry 'a:-5' has a negative dimension -5"});
  t->push_back({"engines_max_shapes_named",
                {"engines", "build", "--model", Model(), "--min-shapes", "a:1", "--opt-shapes",
                 "a:1", "--max-shapes", "a:nan"},
                2,
                "--max-shapes: shape entry 'a:nan'"});
  // A pipeline index that is a FIFO was reported as missing.
  t->push_back({"generate_model_index_fifo",
                {"--policy", "dev", "generate", "--model", "@/pipe_fifo", "--prompt", "x"},
                2,
                "@/pipe_fifo/model_index.json: is a FIFO (named pipe) with no writer",
                kOrtRssMb});
  t->push_back({"policy_providers_empty",
                {"--policy", "@/policy_no_providers.yaml", "admit", "--snapshot", "@/snap.json"},
                2,
                "field 'providers': an empty list names no provider"});
  t->push_back({"logscan_suppression_unknown_rule",
                {"logscan", "@/clean.log", "--suppressions", "@/supp_unknown.yaml"},
                0,
                "@/supp_unknown.yaml:2: unknown rule id 'no.such.rule': no logscan pattern"});
  t->push_back({"dockerfile_build_arg_twice",
                {"audit", "dockerfile", "@/Dockerfile_arg", "--build-arg", "BASE=debian:12",
                 "--build-arg", "BASE=debian:11"},
                2,
                "--build-arg 'BASE=debian:11': BASE is given twice"});
  // 100 000 stages took 10 s (every FROM looked up the stages before it) and 378 MB.
  t->push_back({"dockerfile_1001_stages",
                {"audit", "dockerfile", "@/Dockerfile_stages"},
                2,
                "@/Dockerfile_stages:2001: FROM: more than 1000 stages",
                kPlainRssMb,
                10});
  // 4.4 MB of warm-up entries took 1 GB before any was checked; refused in the event pass.
  t->push_back({"serve_warmup_200k_entries",
                {"serve", "--models", "@/warm", "--port", "0"},
                2,
                "more than 100000 YAML nodes in one document",
                kPlainRssMb + 40,
                20});
  t->push_back({"matrix_300k_nodes",
                {"admit", "--matrix", "@/matrix_300k.yaml", "--snapshot", "@/snap.json"},
                2,
                "more than 100000 YAML nodes in one document",
                kPlainRssMb,
                20});
  // A 3 MB scheduler config of a million `{}` cost 107 MB as a document.
  t->push_back({"scheduler_config_3MB",
                {"schedule", "--config", "@/objs_1M.json"},
                2,
                "1048576",
                kPlainRssMb,
                10});
}

// Round five: inputs that were taken as valid, each refused with exit 2 naming the
// field, what was found and what is required, before anything that depends on the machine.
void AddRoundFiveCases(std::vector<Case>* t) {
  t->push_back({"run_input_dimension_minus5",
                {"run", "--model", "@/neg_dim.onnx"},
                2,
                "--model: @/neg_dim.onnx: input 'a' dimension 1: found -5; required a size >= 0 "
                "or a symbolic name"});
  t->push_back({"compare_concurrency_2e40",
                {"compare", "@/run.json", "@/run_concurrency_2e40.json"},
                2,
                "points[0].concurrency: found 1099511627776; required an integer in 1..100000"});
  t->push_back({"compare_ok_fraction",
                {"compare", "@/run_ok_fraction.json", "@/run.json"},
                2,
                "points[0].ok: found 10.5; required an integer in 0..9007199254740992"});
  for (const auto& [name, shapes] : std::vector<std::pair<std::string, std::string>>{
           {"minus1", "shape entry 'a:-1' has a negative dimension -1"},
           {"1e11", "shape entry 'a:1e11'"},
           {"colons", "shape entry ':::'"}}) {
    t->push_back({"engines_verify_shapes_" + name,
                  {"engines", "verify", "--config", "@/verify_" + name + ".yaml"},
                  2,
                  shapes});
  }
  t->push_back({"bench_file_body_1e999", Bench({"--bench-file", "@/bench_body_1e999.yaml"}), 2,
                "@/bench_body_1e999.yaml:3:25: field body.inputs[0].data[0]: found 1e999; "
                "required a finite number"});
  t->push_back({"bench_file_body_nan", Bench({"--bench-file", "@/bench_body_nan.yaml"}), 2,
                "field body.inputs[0].data[0]: found .nan; required a finite number"});
  t->push_back({"suppression_typo_warns_nearest",
                {"audit", "k8s", "@/pod.yaml", "--suppressions", "@/supp_typo.yaml"},
                6,
                "@/supp_typo.yaml:2: unknown rule id 'k8s.imag-digest': no audit reports it, so "
                "this suppression matches nothing (did you mean 'k8s.image-digest'?)"});
  t->push_back({"suppression_typo_strict_refused",
                {"audit", "k8s", "@/pod.yaml", "--suppressions", "@/supp_typo.yaml", "--strict"},
                2,
                "(did you mean 'k8s.image-digest'?) (refused under --strict)"});
  t->push_back({"suppression_same_rule_twice",
                {"audit", "k8s", "@/pod.yaml", "--suppressions", "@/supp_twice.yaml"},
                2,
                "@/supp_twice.yaml:3: field 'rule': found 'k8s.image-digest' again (first at line "
                "2); required at most one entry per rule and path"});
}

std::vector<Case> AllCases() {
  std::vector<Case> t;
  AddGateCases(&t);
  AddNumberAndEnvCases(&t);
  AddListAndCapCases(&t);
  AddRoundFiveCases(&t);
  return t;
}

class HostileCampaign : public ::testing::TestWithParam<Case> {};

TEST_P(HostileCampaign, ExitCodeMessageAndBounds) {
  const Case& c = GetParam();
  std::vector<std::string> args;
  for (const auto& a : c.args) args.push_back(Expand(a));
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : c.env) env[k] = Expand(v);
  const auto started = std::chrono::steady_clock::now();
  testing::MeasuredOutcome r =
      testing::RunMeasured(args, testing::TimeLimitS(c.time_limit_s) + 5, env);
  const double took_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  testing::ExpectWithinBounds(
      r, {c.exit_code, Expand(c.fragment), "", c.max_rss_mb, c.time_limit_s}, took_s);
}

INSTANTIATE_TEST_SUITE_P(Table, HostileCampaign, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

}  // namespace
}  // namespace tg
