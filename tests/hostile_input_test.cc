// Hostile input, table-driven: every case runs the real binary on one bad input and states the
// exit code, a fragment of the message, and for the memory class a peak-RSS ceiling (the child's
// ru_maxrss from wait4). Classes: no crash, never hang, memory bounded by the input, no
// silent acceptance, right exit codes and clear messages, nothing read or echoed outside its root.
// The atomic writer's refusals (nothing destroyed) are held in src/common/file_util_test.cc and by
// the run --save-outputs cases here.
//
// Every child runs under a watchdog (kill after kTimeoutS): a hang fails its case instead of the
// suite. Fixtures (small files, a FIFO with no writer, a sparse 2 GiB file) are made once per
// process in a temporary folder.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/support/hostile_bounds.h"
#include "tests/support/measured_run.h"
#include "tests/support/test_util.h"

namespace tg {
namespace {

constexpr int kTimeoutS = 20;

// How the child's standard input is set up.
enum class In { kNull, kData, kClosed, kDirectory, kWriteOnly };

struct Case {
  std::string name;               // test name suffix (identifier characters only)
  std::vector<std::string> args;  // "@/x" is replaced by "<fixture dir>/x"
  int exit_code;                  // expected exit status
  std::string fragment;           // expected in stderr (or stdout with --json)
  long max_rss_mb = 0;            // memory class: ceiling on the child's peak RSS, 0 = none
  In in = In::kNull;
  std::string stdin_data;
  std::string must_not_contain;  // never echoed (file contents outside the root)
  bool via_shell = false;        // args[0] is a bash script ("@TG" = the binary) for <(...)

  Case(std::string n, std::vector<std::string> a, int code, std::string frag, long rss = 0,
       In input = In::kNull, std::string data = "")
      : name(std::move(n)),
        args(std::move(a)),
        exit_code(code),
        fragment(std::move(frag)),
        max_rss_mb(rss),
        in(input),
        stdin_data(std::move(data)) {}
};

// gtest prints parameters on failure: the name is enough (the bytes are not readable).
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

using Outcome = testing::MeasuredOutcome;

std::string g_dir;  // fixture folder, made once per process

// A small real model of the build tree: inputs a and b (int64 [3]), output c.
std::string Model() { return testing::BinaryDir() + "/models/runtime/add_int64.onnx"; }

std::string Expand(const std::string& a) {
  std::string s = a;
  for (std::size_t p; (p = s.find("@TG")) != std::string::npos;) {
    s.replace(p, 3, testing::TruegreenPath());
  }
  for (std::size_t p = 0; (p = s.find("@/", p)) != std::string::npos;) {
    s.replace(p, 1, g_dir);
    p += g_dir.size();
  }
  return s;
}

void SetUpStdin(const Case& c, const std::string& data_file) {
  int fd = -1;
  switch (c.in) {
    case In::kNull:
      fd = ::open("/dev/null", O_RDONLY);
      break;
    case In::kData:
      fd = ::open(data_file.c_str(), O_RDONLY);
      break;
    case In::kClosed:
      ::close(0);
      return;
    case In::kDirectory:
      fd = ::open(g_dir.c_str(), O_RDONLY | O_DIRECTORY);
      break;
    case In::kWriteOnly:
      fd = ::open(data_file.c_str(), O_WRONLY);
      break;
  }
  if (fd >= 0 && fd != 0) {
    ::dup2(fd, 0);
    ::close(fd);
  }
}

Outcome RunCase(const Case& c) {
  testing::TempDir io;
  const std::string out_file = io / "out", err_file = io / "err", in_file = io / "in";
  testing::WriteFile(in_file, c.stdin_data);
  std::vector<std::string> argv;
  if (c.via_shell) {
    argv = {"/bin/bash", "-c", Expand(c.args[0])};
  } else {
    argv.push_back(testing::TruegreenPath());
    for (const auto& a : c.args) argv.push_back(Expand(a));
  }
  testing::ChildIo child;
  child.out_file = out_file;
  child.err_file = err_file;
  child.setup_stdin = [&] { SetUpStdin(c, in_file); };  // after stdout/stderr, as SpawnChild does
  return testing::WaitMeasured(testing::SpawnChild(std::move(argv), child), kTimeoutS, out_file,
                               err_file);
}

// ---- fixtures -------------------------------------------------------------------------------

constexpr const char* kSnapshot = R"({
  "schema_version": "truegreen.snapshot/v1", "taken_at": "2025-01-01T00:00:00Z",
  "env": {"NVIDIA_VISIBLE_DEVICES": "all"},
  "nvml": {"driver_version": "580.65.06", "devices": [{"index": 0, "name": "NVIDIA H100"}]}
})";

constexpr const char* kMatrix =
    "schema: 1\nname: dev\nrequire_gpu: false\nonnxruntime:\n  version: \"1.29\"\n"
    "  providers: [CPUExecutionProvider]\ndevices:\n  count: 0\n";

constexpr const char* kSchedulerConfig =
    R"({"_class_name": "PNDMScheduler", "beta_start": 0.00085, "beta_end": 0.012,
        "beta_schedule": "scaled_linear", "num_train_timesteps": 1000})";

std::string Repeat(const std::string& s, int n) {
  std::string out;
  out.reserve(s.size() * static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

void W(const std::string& rel, const std::string& content) {
  testing::WriteFile(g_dir + "/" + rel, content);
}

void MakeFixtures() {
  W("snap.json", kSnapshot);
  W("matrix.yaml", kMatrix);
  W("sched.json", kSchedulerConfig);
  W("log.txt", "all good\n");
  W("Dockerfile", "FROM debian:12\n");
  ::mkfifo((g_dir + "/fifo").c_str(), 0600);
  ::mkdir((g_dir + "/adir").c_str(), 0755);
  // A folder with a pipeline index: generate's input checks pass and the startup chain runs.
  ::mkdir((g_dir + "/pipe").c_str(), 0755);
  W("pipe/model_index.json", "{}");
  ::mkdir((g_dir + "/out").c_str(), 0755);
  // A 2 GiB all-zero "model": sparse, so it costs no disk.
  {
    int fd = ::open((g_dir + "/zero.onnx").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      (void)::ftruncate(fd, 2LL << 30);
      ::close(fd);
    }
  }
  // YAML: duplicate keys, second documents, cycles, depth, alias expansion.
  W("dup_policy.yaml", "profile: dev\nallow_cpu: true\nprofile: production\n");
  W("dup_matrix.yaml", std::string(kMatrix) + "name: other\n");
  W("dup_nested.yaml", std::string(kMatrix) +
                           "container:\n  device_nodes: false\n"
                           "  device_nodes: true\n");
  W("dup_session.yaml",
    "profile: dev\nallow_cpu: true\nsession:\n  io_binding: true\n"
    "  io_binding: false\n");
  W("bad_provider.yaml", "profile: dev\nallow_cpu: true\nproviders: [CUDA, bogus]\n");
  W("two_docs_matrix.yaml", std::string(kMatrix) + "---\nschema: 1\n");
  W("two_docs_policy.yaml", "profile: dev\nallow_cpu: true\n---\nprofile: production\n");
  W("cycle.yaml", "a: &L [*L]\n");
  W("cycle_map.yaml", "a: &M {b: *M}\n");
  W("deep_flow.yaml", Repeat("[", 100000) + Repeat("]", 100000) + "\n");
  W("deep_block.yaml", [] {
    std::string s;
    for (int i = 0; i < 80; ++i) s += std::string(static_cast<std::size_t>(i) * 2, ' ') + "k:\n";
    return s;
  }());
  W("laughs.yaml", [] {
    std::string s = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
    for (int i = 1; i < 10; ++i) {
      std::string p = "*a" + std::to_string(i - 1);
      s += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + p + "," + p + "," + p +
           "," + p + "," + p + "," + p + "," + p + "," + p + "," + p + "," + p + "]\n";
    }
    return s;
  }());
  W("alias_chain.yaml", [] {
    std::string s = "a0: &a0 x\n";
    for (int i = 1; i < 30000; ++i) {
      s += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [*a" + std::to_string(i - 1) +
           "]\n";
    }
    return s;
  }());
  W("k8s_list_cycle.yaml", "apiVersion: v1\nkind: List\nitems: &L [{kind: List, items: *L}]\n");
  W("k8s_dup.yaml",
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  name: b\nspec:\n  containers: []\n");
  W("k8s_two_laughs.yaml", [] {
    std::string s = "apiVersion: v1\nkind: List\nx0: &x0 [{kind: Pod}, {kind: Pod}]\n";
    for (int i = 1; i < 20; ++i) {
      std::string p = "*x" + std::to_string(i - 1);
      s += "x" + std::to_string(i) + ": &x" + std::to_string(i) + " [" + p + "," + p + "]\n";
    }
    s += "items: *x19\n";
    return s;
  }());
  W("passwd_like", "root:x:0:0:root:/root:/bin/bash\n");
  W("sub/policy_escape.yaml", "profile: dev\nallow_cpu: true\nmatrix: ../../../../../etc/passwd\n");
  W("sub/policy_abs.yaml", "profile: dev\nallow_cpu: true\nmatrix: /etc/passwd\n");
  W("sub/policy_rel.yaml", "profile: dev\nallow_cpu: true\nmatrix: m.yaml\n");
  W("sub/m.yaml", kMatrix);
  // JSON: syntax the parser must explain, duplicates, depth.
  W("nan.json", R"({"schema_version": NaN})");
  W("inf.json", R"({"schema_version": Infinity})");
  W("comment.json", "{ // comment\n \"a\": 1}");
  W("utf8.json", "{\"a\": \"\xff\xfe\"}");
  W("trunc.json", R"({"schema_version": "truegreen.snapshot/v1", "env": {)");
  W("dup.json", R"({"schema_version": "truegreen.snapshot/v1", "env": {}, "env": {"A": "1"}})");
  W("deep.json", Repeat("[", 200000) + Repeat("]", 200000));
  W("deep_obj.json", Repeat("{\"a\":", 5000) + "1" + Repeat("}", 5000));
  W("empty.json", "");
  W("sched_unknown.json", R"({"_class_name": "BogusScheduler", "beta_start": 0.00085})");
  W("sched_dup.json", R"({"_class_name": "PNDMScheduler", "beta_end": 0.012, "beta_end": 0.02})");
  // diff: a 300 KB record id with 1 000 differences below it (each path repeated the id: 300 MB).
  for (const char* side : {"a", "b"}) {
    std::string needed;
    for (int i = 0; i < 1000; ++i) {
      needed += std::string(i ? "," : "") + "\"" + side + std::to_string(i) + "\"";
    }
    W(std::string("diff_long_id_") + side + ".json",
      R"({"schema_version": "truegreen.snapshot/v1", "onnxruntime": {"provider_libraries": )"
      R"([{"provider": ")" +
          std::string(300 << 10, 'P') + R"(", "needed": [)" + needed + "]}]}}");
  }
  // A real model with its IR version patched to 99 (byte 1 is ir_version's one-byte varint).
  {
    std::string model = testing::ReadFile(Model());
    if (model.size() > 2 && model[0] == '\x08') model[1] = 99;
    W("ir99.onnx", model);
  }
  // Tensors: an .npy far larger than the input it is for.
  W("big.npy", std::string(4u << 20, '\0'));
  // Tokenizer folders: one with a FIFO for vocab.json is made below.
  ::mkdir((g_dir + "/tok_fifo").c_str(), 0755);
  ::mkfifo((g_dir + "/tok_fifo/vocab.json").c_str(), 0600);
  W("tok_fifo/merges.txt", "#version: 0.2\n");
  W("long_prompt.txt", std::string(60 << 10, 'a'));
  // A --root whose driver version and os-release are FIFOs with no writer (the probe reads both).
  for (const char* d : {"/probe_root", "/probe_root/etc", "/probe_root/proc",
                        "/probe_root/proc/driver", "/probe_root/proc/driver/nvidia"}) {
    ::mkdir((g_dir + d).c_str(), 0755);
  }
  ::mkfifo((g_dir + "/probe_root/proc/driver/nvidia/version").c_str(), 0600);
  ::mkfifo((g_dir + "/probe_root/etc/os-release").c_str(), 0600);
}

// Round two: what the second campaign found, in cases of our own.
void MakeRoundTwoFixtures() {
  // A generic model whose config asks for a [65536, 65536] warm-up input (16 GiB of float).
  ::mkdir((g_dir + "/warm").c_str(), 0755);
  W("warm/m.onnx", testing::ReadFile(Model()));
  W("warm/m.yaml", "warmup:\n  - {a: [65536, 65536]}\n");
  ::mkdir((g_dir + "/warm_run").c_str(), 0755);
  W("warm_run/m.onnx", testing::ReadFile(Model()));
  W("warm_run/m.yaml", "warmup:\n  - {a: [4096, 4096], b: [4096, 4096], c: [4096, 4096]}\n");
  // A JSON array of 200k objects: the parser used to be quadratic in it.
  W("many_objects.json", [] {
    std::string s = "[";
    for (int i = 0; i < 200000; ++i) s += i ? ",{}" : "{}";
    return s + "]";
  }());
  W("supp_feb30.yaml",
    "suppressions:\n  - rule: dockerfile.base-tag\n    reason: later\n    expires: 2027-02-30\n");
  W("snap_many_devices.json", [] {
    std::string s =
        R"({"schema_version": "truegreen.snapshot/v1", "nvml": {"driver_version": "580.65.06", )"
        R"("devices": [)";
    for (int i = 0; i < 5000; ++i) s += std::string(i ? "," : "") + "{\"index\": 0}";
    return s + "]}}";
  }());
  // A tokenizer folder whose optional config is a FIFO with no writer.
  ::mkdir((g_dir + "/tok_cfg_fifo").c_str(), 0755);
  ::mkfifo((g_dir + "/tok_cfg_fifo/tokenizer_config.json").c_str(), 0600);
  // A complete byte-level vocabulary (CLIP's 256 byte symbols, each also with "</w>"), so the
  // load gets as far as the optional config.
  {
    common::Json vocab = common::Json::object();
    int n = 0;
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
      const int cp = printable ? b : next++;
      std::string sym;
      if (cp < 0x80) {
        sym.push_back(static_cast<char>(cp));
      } else {
        sym.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        sym.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
      }
      vocab[sym] = n++;
      vocab[sym + "</w>"] = n++;
    }
    vocab["ab"] = n++;
    vocab["ab</w>"] = n++;
    vocab["<|startoftext|>"] = n++;
    vocab["<|endoftext|>"] = n++;
    W("tok_cfg_fifo/vocab.json", vocab.dump());
  }
  W("tok_cfg_fifo/merges.txt", "#version: 0.2\na b\na b</w>\n");
}

void AddRoundTwoCases(std::vector<Case>* t) {
  // Bounded allocation: refused when the config is read, before ORT or any tensor.
  t->push_back({"serve_warmup_shape_over_limit",
                {"serve", "--models", "@/warm", "--port", "0"},
                2,
                "elements (the limit per warm-up input)",
                250});
  t->push_back({"serve_warmup_run_over_limit",
                {"serve", "--models", "@/warm_run", "--port", "0"},
                2,
                "(the limit per warm-up run)",
                250});
  // Linear parse: 200k objects in well under the watchdog, memory a small multiple of 1.2 MB.
  t->push_back({"diff_two_hundred_thousand_objects",
                {"diff", "@/many_objects.json", "@/many_objects.json"},
                2,
                "",
                300});
  // No blocking opens; unusable outputs refused at start with exit 2.
  t->push_back({"serve_access_log_fifo",
                {"serve", "--models", "@/warm", "--access-log", "@/fifo"},
                2,
                "--access-log"});
  t->push_back({"serve_access_log_directory",
                {"serve", "--models", "@/warm", "--access-log", "@/adir"},
                2,
                "--access-log"});
  t->push_back({"serve_port_file_fifo",
                {"serve", "--models", "@/warm", "--port-file", "@/fifo"},
                2,
                "--port-file"});
  t->push_back({"serve_port_file_char_device",
                {"serve", "--models", "@/warm", "--port-file", "/dev/null"},
                2,
                "--port-file"});
  t->push_back({"serve_port_file_missing_folder",
                {"serve", "--models", "@/warm", "--port-file", "@/nope/port"},
                2,
                "--port-file"});
  // Floating options: NaN, infinities and absurd magnitudes are refused by name.
  for (const auto& [flag, value, frag] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--window", "nan", "NaN is refused"},
           {"--window", "-nan", "NaN is refused"},
           {"--warmup", "inf", "--warmup"},
           {"--timeout", "-inf", "--timeout"},
           {"--rate", "1e999", "--rate"},
           {"--window", "1e308", "outside the range"},
       }) {
    std::string name = "bench" + flag + "_" + value;
    for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    t->push_back({name, {"bench", "--url", "http://127.0.0.1:9", flag, value}, 2, frag});
  }
  t->push_back({"serve_canary_p95_nan",
                {"serve", "--models", "@/warm", "--canary-p95-ms", "nan"},
                2,
                "NaN is refused"});
  Case env_nan{"serve_canary_p50_env_inf", {"serve", "--models", "@/warm"}, 2, "infinite"};
  env_nan.via_shell = true;
  env_nan.args = {"TRUEGREEN_CANARY_P50_MS=inf @TG serve --models @/warm"};
  t->push_back(env_nan);
  Case env_port{"serve_port_env_not_a_number", {"serve"}, 2, "environment variable TRUEGREEN_PORT"};
  env_port.via_shell = true;
  env_port.args = {"TRUEGREEN_PORT=abc @TG serve --models @/warm"};
  t->push_back(env_port);
  t->push_back({"policy_empty",
                {"--policy", "", "admit", "--snapshot", "@/snap.json"},
                2,
                "--policy: an empty value names nothing"});
  t->push_back({"bench_scheduler_empty",
                {"bench", "--url", "http://127.0.0.1:9", "--scheduler", ""},
                2,
                "--scheduler: an empty value names nothing"});
  // Integer options: past 2^64 is an overflow, named as one, never clamped.
  t->push_back(
      {"generate_seed_two_to_the_64",
       {"generate", "--model", "@/adir", "--prompt", "x", "--seed", "18446744073709551616"},
       2,
       "overflows a 64-bit integer"});
  t->push_back({"serve_port_overflow",
                {"serve", "--models", "@/warm", "--port", "99999999999999999999"},
                2,
                "overflows a 64-bit integer"});
  t->push_back({"snapshot_devices_over_cap",
                {"admit", "--snapshot", "@/snap_many_devices.json"},
                2,
                "the limit per list in a snapshot",
                200});
  // URLs, sizes and dates that are not what they claim.
  t->push_back({"bench_url_ipv6_unclosed", {"bench", "--url", "http://[::1"}, 2, "[ADDRESS]:PORT"});
  t->push_back({"bench_url_port_99999",
                {"bench", "--url", "http://127.0.0.1:99999"},
                2,
                "outside 1..65535"});
  t->push_back({"bench_size_zero",
                {"bench", "--url", "http://127.0.0.1:9", "--size", "0x0"},
                2,
                "sides 1..16384"});
  t->push_back({"bench_size_listed_twice",
                {"bench", "--url", "http://127.0.0.1:9", "--size", "512x512,512x512"},
                2,
                "listed twice"});
  t->push_back({"suppression_expires_february_30",
                {"audit", "dockerfile", "@/Dockerfile", "--suppressions", "@/supp_feb30.yaml"},
                2,
                "a real calendar date"});
  // A tokenizer config that is a FIFO is refused by the one reader, not waited on.
  t->push_back({"tokenize_config_fifo",
                {"tokenize", "--tokenizer", "@/tok_cfg_fifo", "x"},
                2,
                "tokenizer_config.json: is a FIFO"});
}

class Env : public ::testing::Environment {
 public:
  void SetUp() override {
    dir_ = std::make_unique<testing::TempDir>();
    g_dir = dir_->path();
    MakeFixtures();
    MakeRoundTwoFixtures();
  }
  void TearDown() override { dir_.reset(); }

 private:
  std::unique_ptr<testing::TempDir> dir_;
};
const ::testing::Environment* const kEnv = ::testing::AddGlobalTestEnvironment(new Env);

// ---- the table ------------------------------------------------------------------------------

void AddCrashCases(std::vector<Case>* t) {
  const std::string long_path = "/" + std::string(40 << 10, 'p');
  const std::string prompt(60 << 10, 'a');
  // ORT's telemetry parsed /proc/self/cmdline with a recursive regex: no argument may reach it.
  // (Since round three a path past PATH_MAX is refused before anything runs.)
  t->push_back({"probe_root_40KB", {"probe", "--root", long_path}, 2, "PATH_MAX"});
  // FIFOs planted under --root are refused by the one reader, never waited on.
  t->push_back({"probe_root_fifos",
                {"--json", "probe", "--root", "@/probe_root"},
                0,
                "truegreen.snapshot/v1"});
  t->push_back({"run_model_40KB_path", {"--policy", "dev", "run", "--model", long_path}, 2, ""});
  t->push_back({"run_input_40KB",
                {"--policy", "dev", "run", "--model", Model(), "--input", "a=" + long_path},
                2,
                "--input a"});
  t->push_back({"generate_prompt_60KB",
                {"generate", "--model", "@/pipe", "--prompt", prompt},
                3,
                "production policy"});  // refused after ORT's environment came up: no crash before
  t->push_back({"yaml_cycle_matrix",
                {"admit", "--matrix", "@/cycle.yaml", "--snapshot", "@/snap.json"},
                2,
                "cycle"});
  t->push_back({"yaml_cycle_map",
                {"admit", "--matrix", "@/cycle_map.yaml", "--snapshot", "@/snap.json"},
                2,
                "cycle"});
  t->push_back({"yaml_deep_flow",
                {"admit", "--matrix", "@/deep_flow.yaml", "--snapshot", "@/snap.json"},
                2,
                "nesting deeper than 64"});
  t->push_back({"yaml_deep_block",
                {"admit", "--matrix", "@/deep_block.yaml", "--snapshot", "@/snap.json"},
                2,
                "nesting deeper than 64"});
  t->push_back({"yaml_alias_chain",
                {"admit", "--matrix", "@/alias_chain.yaml", "--snapshot", "@/snap.json"},
                2,
                "nesting deeper than 64",
                400});
  t->push_back({"k8s_list_cycle", {"audit", "k8s", "@/k8s_list_cycle.yaml"}, 2, "cycle"});
  t->push_back({"json_deep_array",
                {"admit", "--matrix", "@/matrix.yaml", "--snapshot", "@/deep.json"},
                2,
                "nesting deeper than 128"});
  t->push_back({"json_deep_object",
                {"diff", "@/deep_obj.json", "@/snap.json"},
                2,
                "nesting deeper than 128"});
  t->push_back({"schedule_deep_json",
                {"schedule", "--config", "@/deep.json"},
                2,
                "nesting deeper than 128"});
}

// Every file input: a FIFO with no writer, a directory and a device are refused at once.
// `run` loads ONNX Runtime and its startup chain takes the node's snapshot with the GPU provider
// libraries mapped (about 330 MB resident here before any input is read): its ceiling is that
// fixed cost plus a margin, still far below the gigabytes these inputs reached unbounded.
constexpr int kRunRssMb = 420;

void AddFileTypeCases(std::vector<Case>* t) {
  struct Input {
    std::string name;
    std::function<std::vector<std::string>(const std::string&)> args;
  };
  const std::vector<Input> inputs = {
      {"admit_matrix",
       [](const std::string& f) {
         return std::vector<std::string>{"admit", "--matrix", f, "--snapshot", "@/snap.json"};
       }},
      {"admit_snapshot",
       [](const std::string& f) {
         return std::vector<std::string>{"admit", "--matrix", "@/matrix.yaml", "--snapshot", f};
       }},
      {"policy_file",
       [](const std::string& f) {
         return std::vector<std::string>{"--policy", f, "admit", "--snapshot", "@/snap.json"};
       }},
      {"diff_first",
       [](const std::string& f) {
         return std::vector<std::string>{"diff", f, "@/snap.json"};
       }},
      {"diff_second",
       [](const std::string& f) {
         return std::vector<std::string>{"diff", "@/snap.json", f};
       }},
      {"logscan",
       [](const std::string& f) {
         return std::vector<std::string>{"logscan", f};
       }},
      {"audit_dockerfile",
       [](const std::string& f) {
         return std::vector<std::string>{"audit", "dockerfile", f};
       }},
      {"audit_k8s",
       [](const std::string& f) {
         return std::vector<std::string>{"audit", "k8s", f};
       }},
      {"schedule_config",
       [](const std::string& f) {
         return std::vector<std::string>{"schedule", "--config", f};
       }},
      {"generate_prompt_file",
       [](const std::string& f) {
         return std::vector<std::string>{"generate", "--model", "@/adir", "--prompt-file", f};
       }},
      {"run_model",
       [](const std::string& f) {
         return std::vector<std::string>{"--policy", "dev", "run", "--model", f};
       }},
      {"run_input",
       [](const std::string& f) {
         return std::vector<std::string>{"--policy", "dev",     "run",   "--model",
                                         Model(),    "--input", "a=" + f};
       }},
  };
  for (const auto& in : inputs) {
    // run --model has its own check (the model file must be a regular file).
    const bool model = in.name == "run_model";
    t->push_back({in.name + "_fifo", in.args("@/fifo"), 2, model ? "is not a file" : "FIFO"});
    // logscan and audit k8s read folders on purpose; the rest refuse them.
    if (in.name != "audit_k8s" && in.name != "run_model") {
      t->push_back({in.name + "_directory", in.args("@/adir"), 2, "directory"});
    }
    t->push_back({in.name + "_device", in.args("/dev/zero"), 2, model ? "is not a file" : "device",
                  in.name.starts_with("run") ? kRunRssMb : 300});
  }
}

void AddMemoryCases(std::vector<Case>* t) {
  t->push_back({"run_input_dev_zero",
                {"--policy", "dev", "run", "--model", Model(), "--input", "a=/dev/zero"},
                2,
                "character device",
                kRunRssMb});
  t->push_back({"run_input_npy_larger_than_input",
                {"--policy", "dev", "run", "--model", Model(), "--input", "a=@/big.npy"},
                2,
                "larger than the limit",
                kRunRssMb});
  t->push_back({"zero_model_2GiB",
                {"--policy", "dev", "run", "--model", "@/zero.onnx"},
                2,
                "not a valid ONNX model",
                kRunRssMb});
  t->push_back({"yaml_billion_laughs_matrix",
                {"admit", "--matrix", "@/laughs.yaml", "--snapshot", "@/snap.json"},
                2,
                "limit on alias expansion",
                300});
  t->push_back({"k8s_alias_multiplied_items",
                {"audit", "k8s", "@/k8s_two_laughs.yaml"},
                2,
                "limit on alias expansion",
                300});
  t->push_back({"diff_long_record_id",
                {"diff", "@/diff_long_id_a.json", "@/diff_long_id_b.json"},
                4,  // the snapshots differ (README: diff exits 4)
                "PPP...]",
                120});
  t->push_back({"logscan_stdin_dev_zero_like",
                {"logscan", "-"},
                0,
                "",
                300,
                In::kData,
                std::string(8u << 20, 'z')});
}

void AddSilentAcceptanceCases(std::vector<Case>* t) {
  t->push_back({"policy_duplicate_profile",
                {"--policy", "@/dup_policy.yaml", "admit", "--snapshot", "@/snap.json"},
                2,
                "dup_policy.yaml:3:1: invalid YAML: duplicate key 'profile'"});
  t->push_back({"matrix_duplicate_key",
                {"admit", "--matrix", "@/dup_matrix.yaml", "--snapshot", "@/snap.json"},
                2,
                "duplicate key 'name'"});
  t->push_back({"matrix_duplicate_nested",
                {"admit", "--matrix", "@/dup_nested.yaml", "--snapshot", "@/snap.json"},
                2,
                "duplicate key 'device_nodes'"});
  t->push_back({"matrix_second_document",
                {"admit", "--matrix", "@/two_docs_matrix.yaml", "--snapshot", "@/snap.json"},
                2,
                "second YAML document"});
  t->push_back({"policy_second_document",
                {"--policy", "@/two_docs_policy.yaml", "admit", "--snapshot", "@/snap.json"},
                2,
                "second YAML document"});
  t->push_back({"policy_duplicate_nested",
                {"--policy", "@/dup_session.yaml", "admit", "--snapshot", "@/snap.json"},
                2,
                "duplicate key 'io_binding'"});
  t->push_back({"policy_deep",
                {"--policy", "@/deep_block.yaml", "admit", "--snapshot", "@/snap.json"},
                2,
                "nesting deeper than 64"});
  t->push_back({"policy_cycle",
                {"--policy", "@/cycle.yaml", "admit", "--snapshot", "@/snap.json"},
                2,
                "cycle"});
  t->push_back({"policy_billion_laughs",
                {"--policy", "@/laughs.yaml", "admit", "--snapshot", "@/snap.json"},
                2,
                "limit on alias expansion",
                300});
  t->push_back(
      {"k8s_deep_flow", {"audit", "k8s", "@/deep_flow.yaml"}, 2, "nesting deeper than 64"});
  t->push_back({"k8s_billion_laughs",
                {"audit", "k8s", "@/laughs.yaml"},
                2,
                "limit on alias expansion",
                300});
  t->push_back(
      {"k8s_duplicate_key", {"audit", "k8s", "@/k8s_dup.yaml"}, 2, "duplicate key 'name'"});
  t->push_back({"snapshot_duplicate_key",
                {"admit", "--matrix", "@/matrix.yaml", "--snapshot", "@/dup.json"},
                2,
                "duplicate key 'env'"});
  t->push_back(
      {"diff_duplicate_key", {"diff", "@/dup.json", "@/snap.json"}, 2, "duplicate key 'env'"});
  t->push_back({"schedule_duplicate_key",
                {"schedule", "--config", "@/sched_dup.json"},
                2,
                "duplicate key 'beta_end'"});
  for (const char* g : {"nan", "NaN", "-5", "-inf", "inf", "1e400", "101"}) {
    std::string name = std::string("generate_guidance_") + (g[0] == '-' ? "minus_" : "") +
                       std::string(g + (g[0] == '-' ? 1 : 0));
    for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    t->push_back({name, {"generate", "--model", "@/adir", "--guidance", g}, 2, "guidance"});
  }
  t->push_back(
      {"generate_seed_negative", {"generate", "--model", "@/adir", "--seed", "-1"}, 2, "seed"});
  t->push_back(
      {"logscan_stdin_closed", {"logscan", "-"}, 2, "standard input: is closed", 0, In::kClosed});
  t->push_back({"logscan_stdin_directory", {"logscan", "-"}, 2, "directory", 0, In::kDirectory});
  t->push_back(
      {"logscan_stdin_write_only", {"logscan", "-"}, 2, "writing only", 0, In::kWriteOnly});
  t->push_back(
      {"diff_ignore_empty", {"diff", "--ignore", "", "@/snap.json", "@/snap.json"}, 2, "--ignore"});
  t->push_back(
      {"diff_ignore_dot", {"diff", "--ignore", ".", "@/snap.json", "@/snap.json"}, 2, "--ignore"});
  t->push_back(
      {"tokenize_empty_merges_or_fifo", {"tokenize", "--tokenizer", "@/tok_fifo", "x"}, 2, "FIFO"});
}

void AddMessageCases(std::vector<Case>* t) {
  auto snap = [](const std::string& f) {
    return std::vector<std::string>{"admit", "--matrix", "@/matrix.yaml", "--snapshot", f};
  };
  t->push_back(
      {"json_nan", snap("@/nan.json"), 2, "nan.json:1:20: invalid JSON: NaN and Infinity"});
  t->push_back({"json_infinity", snap("@/inf.json"), 2, "NaN and Infinity are not JSON numbers"});
  t->push_back({"json_comment", snap("@/comment.json"), 2, "comments are not allowed"});
  t->push_back({"json_invalid_utf8", snap("@/utf8.json"), 2, "invalid UTF-8"});
  t->push_back({"json_truncated", snap("@/trunc.json"), 2, "unexpected end of input"});
  t->push_back({"json_empty", snap("@/empty.json"), 2, "empty.json"});
  t->push_back({"schedule_json_truncated",
                {"schedule", "--config", "@/trunc.json"},
                2,
                "unexpected end of input"});
  t->push_back({"schedule_json_comment",
                {"schedule", "--config", "@/comment.json"},
                2,
                "comments are not allowed"});
  t->push_back({"diff_json_nan", {"diff", "@/nan.json", "@/snap.json"}, 2, "NaN and Infinity"});
  t->push_back({"diff_json_truncated",
                {"diff", "@/snap.json", "@/trunc.json"},
                2,
                "unexpected end of input"});
  t->push_back({"snapshot_stdin_closed",
                {"admit", "--matrix", "@/matrix.yaml", "--snapshot", "-"},
                2,
                "standard input: is closed",
                0,
                In::kClosed});
  t->push_back({"prompt_file_stdin_directory",
                {"generate", "--model", "@/adir", "--prompt-file", "-"},
                2,
                "directory",
                0,
                In::kDirectory});
  t->push_back({"schedule_unknown_class",
                {"schedule", "--config", "@/sched_unknown.json"},
                2,
                "sched_unknown.json: field '_class_name': unknown scheduler class "
                "'BogusScheduler'"});
  t->push_back({"run_save_outputs_missing_dir",
                {"--policy", "dev", "run", "--model", Model(), "--runs", "1", "--save-outputs",
                 "@/nonexistent/dir"},
                2,
                "does not exist"});
  t->push_back(
      {"run_save_outputs_fifo_target",
       {"--policy", "dev", "run", "--model", Model(), "--runs", "1", "--save-outputs", "@/out"},
       0,
       ""});  // control: writes out/c.npy
}

void AddModelCases(std::vector<Case>* t) {
  // Models ONNX Runtime refuses to load are bad input (2), not an internal error (1).
  t->push_back({"run_model_unsupported_ir",
                {"--policy", "dev", "run", "--model", "@/ir99.onnx"},
                2,
                "ONNX Runtime cannot load this model"});
  t->push_back({"run_model_not_protobuf",
                {"--policy", "dev", "run", "--model", "@/passwd_like"},
                2,
                "passwd_like"});
}

// generate -o: refused before any work, and never replaces what is not a regular file.
void AddOutputCases(std::vector<Case>* t) {
  const std::vector<std::string> base = {"--policy", "dev",      "generate", "--model",
                                         "@/adir",   "--prompt", "x",        "-o"};
  auto with = [&](const std::string& out) {
    std::vector<std::string> a = base;
    a.push_back(out);
    return a;
  };
  t->push_back(
      {"generate_output_missing_folder", with("@/nonexistent/dir/x.png"), 2, "does not exist"});
  t->push_back({"generate_output_fifo", with("@/fifo"), 2, "FIFO"});
  t->push_back({"generate_output_directory", with("@/adir"), 2, "directory"});
  t->push_back({"generate_output_device", with("/dev/null"), 2, "character device"});
}

void AddNestedMessageCases(std::vector<Case>* t) {
  // An error inside a list element names the element, not "expected <error>, found a sequence".
  t->push_back(
      {"policy_unknown_provider",
       {"--policy", "@/bad_provider.yaml", "run", "--model", Model()},
       2,
       "bad_provider.yaml:3:19: field 'providers[1]': unknown execution provider 'bogus'"});
}

void AddRootCases(std::vector<Case>* t) {
  // `--policy FILE` with `run` loads a runtime policy, whose `matrix:` must stay beside it.
  auto run_with = [](const std::string& policy) {
    return std::vector<std::string>{"--policy", policy, "run", "--model", Model(), "--runs", "1"};
  };
  Case escape{"policy_matrix_escapes", run_with("@/sub/policy_escape.yaml"), 2,
              "leaves the policy file's folder"};
  escape.must_not_contain = "root:";
  t->push_back(escape);
  Case abs{"policy_matrix_absolute", run_with("@/sub/policy_abs.yaml"), 2, "absolute path"};
  abs.must_not_contain = "root:";
  t->push_back(abs);
  Case matrix{"matrix_not_yaml_not_echoed",
              {"admit", "--matrix", "@/passwd_like", "--snapshot", "@/snap.json"},
              2,
              "passwd_like"};
  matrix.must_not_contain = "root:x";
  t->push_back(matrix);
  Case snap{"snapshot_not_json_not_echoed",
            {"admit", "--matrix", "@/matrix.yaml", "--snapshot", "@/passwd_like"},
            2,
            "passwd_like"};
  snap.must_not_contain = "root:x";
  t->push_back(snap);
  // Relative to the policy's folder, not the current directory (here: /).
  Case rel{"policy_relative_matrix_beside_policy",
           {"cd / && @TG --policy @/sub/policy_rel.yaml run --model " + Model() + " --runs 1"},
           0,
           "checksum"};
  rel.via_shell = true;
  t->push_back(rel);
  // Process substitution and "-" keep working (pipes, not named FIFOs). The snapshot has no ONNX
  // Runtime, so the verdict is exit 3: what matters is that the inputs were read and judged.
  t->push_back({"admit_regular_files_control",
                {"admit", "--matrix", "@/matrix.yaml", "--snapshot", "@/snap.json"},
                3,
                "verdict: NOT ACCELERATED"});
  Case subst{"process_substitution_inputs",
             {"@TG admit --matrix <(cat @/matrix.yaml) --snapshot <(cat @/snap.json)"},
             3,
             "verdict: NOT ACCELERATED"};
  subst.via_shell = true;
  t->push_back(subst);
  Case dash{"stdin_dash_snapshot",
            {"admit", "--matrix", "@/matrix.yaml", "--snapshot", "-"},
            3,
            "verdict: NOT ACCELERATED"};
  dash.in = In::kData;
  dash.stdin_data = kSnapshot;
  t->push_back(dash);
  Case clean{"logscan_stdin_clean", {"logscan", "-"}, 0, ""};
  clean.in = In::kData;
  clean.stdin_data = "all fine\n";
  t->push_back(clean);
}

std::vector<Case> AllCases() {
  std::vector<Case> t;
  AddCrashCases(&t);
  AddFileTypeCases(&t);
  AddMemoryCases(&t);
  AddSilentAcceptanceCases(&t);
  AddMessageCases(&t);
  AddRootCases(&t);
  AddModelCases(&t);
  AddNestedMessageCases(&t);
  AddOutputCases(&t);
  AddRoundTwoCases(&t);
  return t;
}

class HostileInput : public ::testing::TestWithParam<Case> {};

TEST_P(HostileInput, ExitCodeMessageAndBounds) {
  const Case& c = GetParam();
  Outcome r = RunCase(c);
  // No time limit beyond the watchdog's kTimeoutS (a hang fails the case).
  testing::ExpectWithinBounds(r, {c.exit_code, c.fragment, c.must_not_contain, c.max_rss_mb, 0}, 0);
}

INSTANTIATE_TEST_SUITE_P(Table, HostileInput, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

// The table's assertions are only as good as what the harness reports: it must see the child's
// real exit code, its stderr and a peak RSS (a zero RSS would pass every memory ceiling), and the
// table must still hold its hundred-odd cases.
TEST(HostileInputTable, TheHarnessReportsWhatTheChildDid) {
  EXPECT_GE(AllCases().size(), 100u);
  Outcome r = RunCase({"harness_unknown_command", {"no-such-command-xyz"}, 2, ""});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("no-such-command-xyz"), std::string::npos) << r.err;
  EXPECT_GT(r.max_rss_kb, 1024) << "no peak RSS measured: the memory ceilings would be vacuous";
  Case shell{"harness_shell", {"exit 7"}, 7, ""};
  shell.via_shell = true;
  EXPECT_EQ(RunCase(shell).exit_code, 7);
}

}  // namespace
}  // namespace tg
