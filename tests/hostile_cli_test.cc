// Hostile input to the CLI, model and bench side, round three: option ranges, duplicate list
// entries, Stable Diffusion component configs, tensor dimensions and .npy headers, path lengths,
// caps on bench run files, memory bounded by the input, and ONNX external data. Table-driven
// through the real binary (tests/hostile_input_test.cc holds the earlier rounds; it is near the
// file-size limit): each case states its exit code, a message fragment, a peak-RSS ceiling and a
// time limit. Fixtures are made once per process in a temporary folder.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/workload.h"
#include "common/json_writer.h"
#include "policy/snapshot_diff.h"
#include "runtime/engines.h"
#include "tests/support/hostile_bounds.h"
#include "tests/support/hostile_fixtures.h"
#include "tests/support/measured_run.h"
#include "tests/support/test_util.h"

namespace tg {
namespace {

// Peak RSS of a command that loads no ONNX Runtime (diff, admit, bench, compare, probe), and of
// one that does (run, generate: the GPU-flavor core with its provider libraries mapped, about
// 330 MB here before any input is read).
constexpr long kPlainRssMb = 120;
constexpr long kOrtRssMb = 420;

struct Case {
  std::string name;               // test name suffix
  std::vector<std::string> args;  // "@/x" is replaced by "<fixture dir>/x"
  int exit_code;
  std::string fragment;  // expected in stderr + stdout
  long max_rss_mb = kPlainRssMb;
  int time_limit_s = 20;
  std::map<std::string, std::string> env = {};
  long asan_rss_mb = 0;  // see HostileBounds::asan_rss_mib
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::string g_dir;

std::string Model() { return testing::BinaryDir() + "/models/runtime/add_int64.onnx"; }

std::string Expand(const std::string& a) { return testing::ExpandFixtureDir(a, g_dir); }

void W(const std::string& rel, const std::string& content) {
  testing::WriteFile(g_dir + "/" + rel, content);
}

// A version-1 .npy of int64 data with `shape_text` as the header's shape (data: `bytes` zeros).
std::string Npy(const std::string& shape_text, std::size_t bytes) {
  std::string dict = "{'descr': '<i8', 'fortran_order': False, 'shape': " + shape_text + ", }";
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>(dict.size() >> 8);
  return out + dict + std::string(bytes, '\0');
}

// Snapshot texts of a given size: one huge list, one huge map, and 0.75 MB of small lists.
std::string SnapshotWithDevices(int n) {
  std::string s = R"({"schema_version": "truegreen.snapshot/v1", "nvml": {"devices": [)";
  for (int i = 0; i < n; ++i) s += std::string(i ? "," : "") + R"({"index": 0, "name": "G"})";
  return s + "]}}";
}

// A valid snapshot of many lists under the 4096 cap (0.66 MB): 4000 GPUs seen by NVML and by the
// CUDA driver, 4000 library folders. `tag` makes the two sides of a diff differ in every element.
std::string SnapshotOfManyLists(const std::string& tag) {
  std::string nvml, cuda, dirs;
  for (int i = 0; i < 4000; ++i) {
    const std::string n = std::to_string(i), sep = i ? "," : "";
    nvml += sep + R"({"index": )" + n + R"(, "name": "NVIDIA H100 )" + tag + " " + n +
            R"(", "uuid": "GPU-)" + tag + n + R"(", "memory_total_bytes": 85520809984})";
    cuda += sep + R"({"index": )" + n + R"(, "name": "NVIDIA H100 )" + tag + " " + n + R"("})";
    dirs += sep + "\"/opt/lib/" + tag + "/" + n + "\"";
  }
  return R"({"schema_version": "truegreen.snapshot/v1", "nvml": {"devices": [)" + nvml +
         R"(]}, "cuda_driver": {"devices": [)" + cuda + R"(]}, "lib_search_dirs": [)" + dirs + "]}";
}

std::string SnapshotWithEnv(int n) {
  std::string s = R"({"schema_version": "truegreen.snapshot/v1", "env": {)";
  for (int i = 0; i < n; ++i)
    s += std::string(i ? "," : "") + "\"K" + std::to_string(i) + "\":\"v\"";
  return s + "}}";
}

void MakeSdFixtures() {
  const std::string index = R"({"_class_name": "StableDiffusionPipeline"})";
  const std::vector<std::pair<std::string, std::string>> configs = {
      {"sd_unet_sample_size/unet", R"({"sample_size": 1e8, "in_channels": 4})"},
      // The key also appears inside a string and in a nested object: the line named is the
      // top-level member's.
      {"sd_unet_in_channels/unet",
       "{\"_note\": \"\\\"in_channels\\\": 1\",\n \"nested\": {\"in_channels\": 2},\n"
       " \"sample_size\": 64,\n \"in_channels\": -4}"},
      {"sd_unet_head_dim/unet", R"({"attention_head_dim": [8, 8, -1]})"},
      {"sd_text_hidden/text_encoder", R"({"hidden_size": 7.5})"},
      {"sd_vae_latent/vae_decoder", R"({"latent_channels": "4"})"},
  };
  for (const auto& [dir, cfg] : configs) {
    const std::string root = dir.substr(0, dir.find('/'));
    W(root + "/model_index.json", index);
    W(dir + "/config.json", cfg);
  }
}

void MakeFixtures() {
  W("snap.json", R"({"schema_version": "truegreen.snapshot/v1"})");
  W("dup_providers.yaml",
    "profile: dev\nallow_cpu: true\nproviders: [CUDA, CUDAExecutionProvider]\n");
  MakeSdFixtures();
  W("npy_expr.npy", Npy("(1+2,)", 24));
  W("npy_negative.npy", Npy("(-5,)", 0));
  W("npy_overflow.npy", Npy("(4294967296, 4294967296, 4294967296)", 0));
  W("npy_float.npy", Npy("(3.0,)", 24));
  W("npy_ok.npy", Npy("(3,)", 24));
  W("run_a.json", testing::BenchRunFile(1, 3));
  W("run_windows_1001.json", testing::BenchRunFile(1, 1001));
  W("run_points_1025.json", testing::BenchRunFile(1025, 1));
  W("run_windows_million.json", testing::BenchRunFile(1, 1000000));
  W("snap_16MB.json", SnapshotWithDevices(600000));  // 15.6 MB, under the 16 MiB read limit
  W("snap_env_big.json", SnapshotWithEnv(60000));
  W("snap_075MB.json", SnapshotWithDevices(30000));
  W("snap_lists_a.json", SnapshotOfManyLists("a"));
  W("snap_lists_b.json", SnapshotOfManyLists("b"));
  // A 2 MB KServe v2 body: one tensor of 10^6 small numbers.
  {
    std::string data;
    for (int i = 0; i < 1000000; ++i) data += i ? ",0" : "0";
    W("body_2MB.json", R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1000000], )"
                       R"("data": [)" +
                           data + "]}]}");
  }
  // compare with a file name that is not valid UTF-8: the JSON array output must say so.
  W("run_\xff\xfe.json", testing::BenchRunFile(1, 3));
  // ONNX external data of length 2^63-1 (python3-onnx writes the model; small files only).
  ::mkdir((g_dir + "/ext").c_str(), 0755);
  const std::string script =
      "import sys, onnx\n"
      "from onnx import helper, TensorProto\n"
      "d, length = sys.argv[1], sys.argv[2]\n"
      "w = TensorProto(); w.name = 'w'; w.data_type = TensorProto.UINT8; w.dims.append(12)\n"
      "w.data_location = TensorProto.EXTERNAL\n"
      "for k, v in (('location', 'w.bin'), ('offset', '0'), ('length', length)):\n"
      "    e = w.external_data.add(); e.key = k; e.value = v\n"
      "open(d + '/w.bin', 'wb').write(b'\\0' * 12)\n"
      "g = helper.make_graph([helper.make_node('Identity', ['w'], ['y'])], 'g', [],\n"
      "    [helper.make_tensor_value_info('y', TensorProto.UINT8, [12])], [w])\n"
      "m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)])\n"
      "m.ir_version = 8\n"
      "open(d + '/' + sys.argv[3], 'wb').write(m.SerializeToString())\n";
  W("ext/gen.py", script);
  for (const auto& [length, file] :
       std::vector<std::pair<std::string, std::string>>{{"9223372036854775807", "max.onnx"},
                                                        {"99999999999999999999", "past64.onnx"},
                                                        {"12", "ok.onnx"}}) {
    testing::RunProcess(
        {testing::SystemPython(), g_dir + "/ext/gen.py", g_dir + "/ext", length, file});
  }
}

const ::testing::Environment* const kEnv =
    ::testing::AddGlobalTestEnvironment(new testing::FixtureDirEnvironment(&g_dir, MakeFixtures));

// ---- the table ------------------------------------------------------------------------------

std::vector<std::string> Bench(std::vector<std::string> extra) {
  std::vector<std::string> a = {"bench", "--url", "http://127.0.0.1:9"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

std::vector<std::string> DevRun(std::vector<std::string> extra) {
  std::vector<std::string> a = {"--policy", "dev", "run",        "--model", Model(),
                                "--runs",   "1",   "--min-time", "0"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

void AddOptionCases(std::vector<Case>* t) {
  // The clearest message wins: the flag, the value as given, the option's own range.
  t->push_back({"bench_warmup_inf", Bench({"--warmup", "inf"}), 2,
                "--warmup: 'inf' is infinite; allowed: 0..3600 seconds"});
  t->push_back({"bench_window_zero", Bench({"--window", "0"}), 2,
                "--window: '0' is outside the range of this option; allowed: more than 0"});
  t->push_back({"bench_stability_huge", Bench({"--stability", "1e6"}), 2,
                "allowed: more than 0, at most 100 percent"});
  t->push_back({"bench_rate_negative", Bench({"--rate", "-1"}), 2, "--rate: '-1'"});
  t->push_back(
      {"bench_metrics_interval_nan", Bench({"--metrics-interval", "nan"}), 2, "NaN is refused"});
  t->push_back({"serve_port_70000",
                {"serve", "--models", "@/adir", "--port", "70000"},
                2,
                "--port: '70000' is outside the range of this option; allowed: 0..65535"});
  t->push_back({"serve_drift_tolerance_nan",
                {"serve", "--models", "@/adir", "--canary-drift-tolerance", "nan"},
                2,
                "--canary-drift-tolerance: 'nan' is not a number"});
  t->push_back({"serve_canary_p95_huge",
                {"serve", "--models", "@/adir", "--canary-p95-ms", "1e300"},
                2,
                "allowed: 0..3600000 ms"});
  // Negative ceilings are refused by the range (the command has no check of its own).
  t->push_back(
      {"serve_canary_p50_negative",
       {"serve", "--models", "@/adir", "--canary-p50-ms", "-1"},
       2,
       "--canary-p50-ms: '-1' is outside the range of this option; allowed: 0..3600000 ms"});
  Case p95_env{"serve_canary_p95_negative_env",
               {"serve", "--models", "@/adir"},
               2,
               "--canary-p95-ms: '-0.5' is outside the range of this option; allowed: 0..3600000 "
               "ms (0 = not gated) (the value comes from the environment variable "
               "TRUEGREEN_CANARY_P95_MS)"};
  p95_env.env = {{"TRUEGREEN_CANARY_P95_MS", "-0.5"}};
  t->push_back(p95_env);
  Case env{"serve_queue_size_env_overflow",
           {"serve", "--models", "@/adir"},
           2,
           "overflows a 64-bit integer; allowed: 1..100000"};
  env.env = {{"TRUEGREEN_QUEUE_SIZE", "99999999999999999999"}};
  t->push_back(env);
  t->push_back({"wait_ready_interval_inf",
                {"k8s", "wait-ready", "--deployment", "x", "--interval-s", "inf"},
                2,
                "--interval-s: 'inf' is infinite; allowed: 0.05..600 seconds"});
  t->push_back({"run_max_p99_minus_inf", DevRun({"--max-p99-ms", "-inf"}), 2,
                "--max-p99-ms: '-inf' is infinite"});
  t->push_back({"generate_guidance_inf",
                {"generate", "--model", "@/adir", "--guidance", "inf"},
                2,
                "--guidance: 'inf' is infinite; allowed: 0..100"});
  t->push_back({"tokenize_max_length_overflow",
                {"tokenize", "--tokenizer", "@/adir", "--max-length", "99999999999999999999", "x"},
                2,
                "overflows a 64-bit integer; allowed: 2..4096"});
  // A custom type name (SIZE) is held to the same rules.
  t->push_back({"audit_image_budget_nan",
                {"audit", "image", "@/adir", "--budget", "nanGiB"},
                2,
                "--budget: 'nanGiB' is not a size"});
  t->push_back({"audit_image_budget_huge",
                {"audit", "image", "@/adir", "--budget", "99999TiB"},
                2,
                "--budget: '99999TiB' is outside the range"});
}

void AddDuplicateCases(std::vector<Case>* t) {
  t->push_back({"run_input_twice", DevRun({"--input", "a=random", "--input", "a=random"}), 2,
                "--input names input 'a' twice"});
  t->push_back(
      {"run_shape_list_twice", DevRun({"--shape", "a:3,a:3"}), 2, "names input 'a' a second time"});
  t->push_back({"policy_providers_twice",
                {"--policy", "@/dup_providers.yaml", "run", "--model", Model()},
                2,
                "'CUDAExecutionProvider' names CUDAExecutionProvider a second time",
                kOrtRssMb});
  t->push_back({"bench_concurrency_twice", Bench({"--concurrency", "1,8,1"}), 2,
                "--concurrency \"1,8,1\": \"1\" is listed twice"});
  t->push_back({"bench_scheduler_twice", Bench({"--scheduler", "euler", "--scheduler", "euler"}), 2,
                "--scheduler: 'euler' is listed twice"});
  t->push_back({"bench_sweep_too_large",
                Bench({"--concurrency", "1,2,3,4,5,6,7,8,9,10,11", "--batch",
                       "1,2,3,4,5,6,7,8,9,10,11", "--steps", "1,2,3,4,5,6,7,8,9,10,11"}),
                2, "the sweep has more than 1024 points"});
  t->push_back({"diff_ignore_twice",
                {"diff", "--ignore", "env", "--ignore", "env", "@/snap.json", "@/snap.json"},
                2,
                "--ignore: 'env' is given twice"});
}

void AddModelCases(std::vector<Case>* t) {
  auto gen = [](const std::string& dir) {
    return std::vector<std::string>{"--policy", "dev",      "generate", "--model",
                                    "@/" + dir, "--prompt", "x"};
  };
  // Refused when the component config is read, before any session is opened.
  t->push_back({"sd_unet_sample_size_1e8", gen("sd_unet_sample_size"), 2,
                "unet/config.json:1: field 'sample_size': found 100000000.0, required an integer "
                "1..512",
                kOrtRssMb});
  t->push_back({"sd_unet_in_channels_negative", gen("sd_unet_in_channels"), 2,
                "unet/config.json:4: field 'in_channels': found -4, required an integer 1..16",
                kOrtRssMb});
  t->push_back({"sd_unet_head_dim_element", gen("sd_unet_head_dim"), 2,
                "field 'attention_head_dim[2]': found -1", kOrtRssMb});
  t->push_back({"sd_text_hidden_not_integer", gen("sd_text_hidden"), 2,
                "text_encoder/config.json:1: field 'hidden_size': found 7.5", kOrtRssMb});
  t->push_back({"sd_vae_latent_string", gen("sd_vae_latent"), 2,
                "vae_decoder/config.json:1: field 'latent_channels': found string", kOrtRssMb});
  // Dimensions as the user gives them.
  t->push_back(
      {"run_shape_minus_5", DevRun({"--shape", "a:-5"}), 2, "has a negative dimension -5"});
  t->push_back({"run_shape_zero_dimension", DevRun({"--shape", "a:1x0"}), 2,
                "has a dimension 0 (dimensions are integers 1..16777216; a 0 dimension makes an "
                "empty tensor)"});
  t->push_back({"run_shape_dimension_over_limit", DevRun({"--shape", "a:99999999999"}), 2,
                "above the limit of 16777216"});
  t->push_back({"npy_shape_expression", DevRun({"--input", "a=@/npy_expr.npy"}), 2,
                "shape (1+2,): element 0 is not an integer literal", kOrtRssMb});
  t->push_back({"npy_shape_float", DevRun({"--input", "a=@/npy_float.npy"}), 2,
                "is not an integer literal", kOrtRssMb});
  t->push_back({"npy_dimension_minus_5", DevRun({"--input", "a=@/npy_negative.npy"}), 2,
                "dimension -5 is negative", kOrtRssMb});
  t->push_back({"npy_dimension_overflow", DevRun({"--input", "a=@/npy_overflow.npy"}), 2,
                "overflows a 64-bit element count", kOrtRssMb});
  t->push_back({"npy_control", DevRun({"--input", "a=@/npy_ok.npy"}), 0, "checksum", kOrtRssMb});
  // ONNX external data: offset + length past the file, and a length past 64 bits.
  t->push_back(
      {"onnx_external_length_2_63",
       {"--policy", "dev", "run", "--model", "@/ext/max.onnx", "--runs", "1", "--min-time", "0"},
       2,
       "initializer 'w': external data offset 0 + length 9223372036854775807 lies "
       "outside w.bin (12 bytes)",
       kOrtRssMb});
  t->push_back(
      {"onnx_external_length_past_64_bits",
       {"--policy", "dev", "run", "--model", "@/ext/past64.onnx", "--runs", "1", "--min-time", "0"},
       2,
       "external data length '99999999999999999999' is not an integer",
       kOrtRssMb});
  t->push_back(
      {"onnx_external_control",
       {"--policy", "dev", "run", "--model", "@/ext/ok.onnx", "--runs", "1", "--min-time", "0"},
       0,
       "checksum",
       kOrtRssMb});
}

void AddPathAndCapCases(std::vector<Case>* t) {
  const std::string long_path = "/" + std::string(60 << 10, 'p');
  t->push_back({"probe_root_60KB",
                {"probe", "--root", long_path},
                2,
                "--root: a path of 61441 bytes is longer than the system allows (4095 bytes"});
  t->push_back({"admit_snapshot_path_over_path_max",
                {"admit", "--snapshot", "/" + std::string(5000, 's')},
                2,
                "PATH_MAX"});
  t->push_back({"diff_positional_path_over_path_max",
                {"diff", "/" + std::string(5000, 'd'), "@/snap.json"},
                2,
                "PATH_MAX"});
  // compare: windows and points per run file, checked before any is read.
  t->push_back({"compare_windows_1001",
                {"compare", "@/run_a.json", "@/run_windows_1001.json"},
                2,
                "points[0].windows: 1001 windows; a point has at most 1000"});
  t->push_back({"compare_points_1025",
                {"compare", "@/run_a.json", "@/run_points_1025.json"},
                2,
                "points: 1025 points; a run has at most 1024"});
  t->push_back({"compare_million_windows",
                {"compare", "@/run_a.json", "@/run_windows_million.json"},
                2,
                "more than 131072 elements (the limit per list in a bench run file)",
                kPlainRssMb,
                10});
  t->push_back({"compare_invalid_utf8_name_noticed",
                {"compare", "@/run_a.json", "@/run_\xff\xfe.json", "--out", "@/cmp.json"},
                0,
                "@/cmp.json held bytes that are not valid UTF-8; they were replaced by U+FFFD"});
  // Memory: ceilings far below what these inputs took before (781, 759 and 517 MB).
  t->push_back({"diff_snapshot_16MB",
                {"diff", "@/snap_16MB.json", "@/snap.json"},
                2,
                "the limit per list in a snapshot",
                kPlainRssMb,
                10});
  t->push_back({"diff_snapshot_env_60k",
                {"diff", "@/snap_env_big.json", "@/snap.json"},
                2,
                "the limit per list in a snapshot",
                kPlainRssMb,
                10});
  t->push_back({"diff_snapshot_0_75MB",
                {"diff", "@/snap_075MB.json", "@/snap.json"},
                2,
                "the limit per list in a snapshot",
                kPlainRssMb,
                10});
  // 20 000 differences written one at a time, pointing into the two normalised documents (no
  // copy of a value is held): 33 MB measured (95 MB as one document, 54 MB with copied values).
  // The ceiling is 20 x the 1.3 MB input plus the 12 MB a plain command costs.
  t->push_back({"diff_json_many_lists_streamed",
                {"--json", "diff", "@/snap_lists_a.json", "@/snap_lists_b.json"},
                4,
                "\"added\": 8000",
                38,
                20,
                {},
                1100});  // ASan: 770 MB measured before the values were no longer copied
  // The text is written one line at a time (it was built whole first): 33 MB measured.
  t->push_back({"diff_text_many_lists_streamed",
                {"diff", "@/snap_lists_a.json", "@/snap_lists_b.json"},
                4,
                "20000 difference(s)",
                38,
                20,
                {},
                1100});
  t->push_back({"bench_body_2MB",
                Bench({"--api", "kserve", "--model", "m", "--body", "@/body_2MB.json", "--warmup",
                       "0", "--window", "0.2", "--max-trials", "1", "--no-nvml"}),
                3, "", kPlainRssMb});
}

std::vector<Case> AllCases() {
  std::vector<Case> t;
  AddOptionCases(&t);
  AddDuplicateCases(&t);
  AddModelCases(&t);
  AddPathAndCapCases(&t);
  return t;
}

class HostileCli : public ::testing::TestWithParam<Case> {};

TEST_P(HostileCli, ExitCodeMessageAndBounds) {
  const Case& c = GetParam();
  std::vector<std::string> args;
  for (const auto& a : c.args) args.push_back(Expand(a));
  const auto started = std::chrono::steady_clock::now();
  testing::MeasuredOutcome r =
      testing::RunMeasured(args, testing::TimeLimitS(c.time_limit_s) + 5, c.env);
  const double took_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  testing::ExpectWithinBounds(
      r, {c.exit_code, Expand(c.fragment), "", c.max_rss_mb, c.time_limit_s, c.asan_rss_mb},
      took_s);
}

INSTANTIATE_TEST_SUITE_P(Table, HostileCli, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

// Every number option of every command states its own range in its help (kRanges in
// src/cli/option_checks.cc), not only the generic bound.
TEST(HostileCliOptions, EveryNumberOptionDocumentsItsRange) {
  const common::Json tree = testing::CliTree();
  auto str = [](const common::Json& j, const char* key) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
  };
  std::vector<const common::Json*> todo = {&tree};
  int numbers = 0;
  while (!todo.empty()) {
    const common::Json* c = todo.back();
    todo.pop_back();
    if (!c->is_object()) continue;
    if (c->contains("subcommands") && (*c)["subcommands"].is_array()) {
      for (const auto& s : (*c)["subcommands"]) todo.push_back(&s);
    }
    if (!c->contains("options") || !(*c)["options"].is_array()) continue;
    for (const auto& o : (*c)["options"]) {
      const std::string type = str(o, "type_name");
      const std::string base = type.substr(0, type.find(':'));
      static const std::vector<std::string> kNumbers = {"FLOAT",   "INT", "UINT",     "N",
                                                        "SECONDS", "MS",  "FRACTION", "SIZE"};
      if (std::find(kNumbers.begin(), kNumbers.end(), base) == kNumbers.end()) continue;
      ++numbers;
      EXPECT_NE(str(o, "description").find("(range "), std::string::npos)
          << str(*c, "path") << " " << str(o, "name") << " has no documented range";
    }
  }
  EXPECT_GE(numbers, 50);  // the walk really saw the options
}

// `diff --json` writes its differences one at a time; the text must be exactly what the whole
// document would print (the diff's own JSON, with "a" and "b"), for a diff with every kind of
// difference and nested values.
TEST(HostileCliOptions, StreamedDiffJsonIsTheWholeDocument) {
  testing::TempDir d;
  const std::string a = d / "a.json", b = d / "b.json";
  testing::WriteFile(a, R"({"schema_version": "truegreen.snapshot/v1", "env": {"A": "x"},
    "nvml": {"devices": [{"index": 0, "name": "G"}, {"index": 1, "name": "H"}]}})");
  testing::WriteFile(b, R"({"schema_version": "truegreen.snapshot/v1", "env": {"A": "y", "B": "z"},
    "nvml": {"devices": [{"index": 1, "name": "H2"}]}, "lib_search_dirs": ["/x", "/y"]})");
  auto diff = policy::DiffSnapshotFiles(a, b, {});
  ASSERT_TRUE(diff.ok()) << diff.status().message();
  ASSERT_GE(diff->entries.size(), 4u);
  common::Json whole = policy::DiffToJson(diff->entries);
  whole["a"] = a;
  whole["b"] = b;
  testing::ProcessResult r = testing::RunTruegreen({"--json", "diff", a, b});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_EQ(r.out, common::WriteJson(whole, 2) + "\n");
  r = testing::RunTruegreen({"--json", "diff", a, a});
  common::Json same = policy::DiffToJson({});
  same["a"] = a;
  same["b"] = a;
  EXPECT_EQ(r.out, common::WriteJson(same, 2) + "\n");
  // The text is written one line at a time: the same lines as the whole text.
  r = testing::RunTruegreen({"diff", a, b});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_EQ(r.out, "DIFFERENT: " + std::to_string(diff->entries.size()) + " difference(s)\n--- " +
                       a + "\n+++ " + b + "\n" + policy::DiffToText(diff->entries));
}

// List options typed TEXT show the range of their elements in --help, and that range is the one
// their parser enforces: the bound is accepted and one past it is refused, naming it.
TEST(HostileCliOptions, ListOptionsDocumentTheRangeTheirParserEnforces) {
  struct ListCase {
    std::vector<std::string> help;  // the command's help
    std::string flag, range;
  };
  const std::vector<ListCase> cases = {
      {{"bench", "--help"}, "--concurrency", "(range each 1..100000 connections, no value twice)"},
      {{"bench", "--help"}, "--batch", "(range each 1..100000 images, no value twice)"},
      {{"bench", "--help"}, "--steps", "(range each 1..100000 steps, no value twice)"},
      {{"bench", "--help"}, "--size", "(range each side 1..16384 pixels, no size twice)"},
      {{"run", "--help"}, "--shape", "(range each dimension 1..16777216, no name twice)"},
      {{"engines", "build", "--help"},
       "--shapes",
       "(range each dimension 1..16777216, no name twice)"},
  };
  for (const ListCase& c : cases) {
    testing::ProcessResult r = testing::RunTruegreen(c.help);
    ASSERT_EQ(r.exit_code, 0) << c.flag;
    const std::size_t at = r.out.find(c.flag + " ");
    ASSERT_NE(at, std::string::npos) << c.flag;
    // CLI11 wraps long descriptions; compare with the whitespace folded.
    std::string folded;
    for (char ch : r.out.substr(at, 600)) {
      if (std::isspace(static_cast<unsigned char>(ch))) {
        if (folded.empty() || folded.back() != ' ') folded += ' ';
      } else {
        folded += ch;
      }
    }
    EXPECT_NE(folded.find(c.range), std::string::npos) << c.flag << ":\n" << folded;
  }
  for (const char* flag : {"--concurrency", "--batch", "--steps"}) {
    EXPECT_TRUE(bench::ParseIntList(flag, "1,100000").ok()) << flag;
    auto past = bench::ParseIntList(flag, "100001");
    ASSERT_FALSE(past.ok()) << flag;
    EXPECT_NE(past.status().message().find("1..100000"), std::string::npos);
    EXPECT_NE(bench::ParseIntList(flag, "4,4").status().message().find("listed twice"),
              std::string::npos);
  }
  EXPECT_TRUE(bench::ParseSizeList("--size", "1x16384").ok());
  EXPECT_NE(bench::ParseSizeList("--size", "16385x8").status().message().find("1..16384"),
            std::string::npos);
  EXPECT_TRUE(runtime::ParseShapeList("a:1x16777216").ok());
  auto past = runtime::ParseShapeList("a:16777217");
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find("16777216"), std::string::npos) << past.status().message();
  EXPECT_FALSE(runtime::ParseShapeList("a:1,a:2").ok());
  // The lower bound: 0 (an empty tensor) is refused, naming the range the help states.
  for (const char* zero : {"a:0", "a:1x0x4", "a:00"}) {
    auto empty = runtime::ParseShapeList(zero);
    ASSERT_FALSE(empty.ok()) << zero;
    EXPECT_NE(empty.status().message().find("1..16777216"), std::string::npos)
        << empty.status().message();
    EXPECT_NE(empty.status().message().find("empty tensor"), std::string::npos);
  }
}

}  // namespace
}  // namespace tg
