// `truegreen probe --json` cold (a fresh process each iteration) against merely dlopen'ing the
// same libraries in a fresh process, side by side in one run. Target: probe <= 2x dlopen.
//
// The library list is taken from one probe snapshot before timing: every library the probe
// loaded (by resolved path) or tried to load (by soname, which fails the same way again), so both
// sides pay the same dynamic-linker work and differ only by what the probe does on top (NVML/CUDA
// calls, ORT initialisation, ELF reads, JSON). The dlopen side re-executes this binary with
// --dlopen-child, which opens the list RTLD_NOW|RTLD_GLOBAL|RTLD_NODELETE (the loader's flags).
//
// Scenarios: "system" (this machine's libraries: real CUDA 13 user-space libraries, no driver)
// and "fakegpu" (--lib-path <build>/fakegpu, a complete fake driver stack).
//
//   build/bin/probe_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/dynlib.h"
#include "common/process.h"

namespace {

std::string g_self;

std::string TruegreenPath() { return std::string(TG_BINARY_DIR) + "/bin/truegreen"; }
std::string FakeGpuDir() { return std::string(TG_BINARY_DIR) + "/fakegpu"; }

// Runs argv with stdout captured (returned), stderr dropped and `status` = its exit code; aborts
// the benchmark on a failure to start.
std::string Run(const std::vector<std::string>& argv, int* status) {
  tg::common::ProcessResult r = tg::common::RunProcess(argv);
  if (!r.started) std::abort();
  *status = r.exit_code;
  return r.out;
}

void Collect(const tg::common::Json& lib, std::vector<std::string>* out) {
  if (!lib.is_object() || !lib.contains("loaded")) return;
  if (lib["loaded"].get<bool>()) {
    out->push_back(lib["resolved_path"].get<std::string>());
  } else if (!lib["soname"].get<std::string>().empty()) {
    out->push_back(lib["soname"].get<std::string>());
  }
}

// The libraries one probe run loaded or attempted, in the probe's order.
std::vector<std::string> LibrariesOf(const std::vector<std::string>& global) {
  std::vector<std::string> argv = {TruegreenPath()};
  argv.insert(argv.end(), global.begin(), global.end());
  argv.push_back("probe");
  argv.push_back("--json");
  int status = 0;
  auto j = tg::common::ParseJson(Run(argv, &status), "probe");
  std::vector<std::string> libs;
  if (!j.ok()) return libs;
  const auto& s = *j;
  Collect(s["nvml"]["library"], &libs);
  Collect(s["cuda_driver"]["library"], &libs);
  Collect(s["cuda_runtime"]["library"], &libs);
  Collect(s["cublaslt"], &libs);
  Collect(s["cublas"], &libs);
  Collect(s["cudnn"]["library"], &libs);
  for (const auto& l : s["cudnn"]["sub_libraries"]) Collect(l, &libs);
  Collect(s["tensorrt"]["library"], &libs);
  Collect(s["tensorrt"]["onnx_parser"], &libs);
  Collect(s["nccl"], &libs);
  Collect(s["onnxruntime"]["library"], &libs);
  Collect(s["onnxruntime"]["providers_shared"], &libs);
  for (const auto& p : s["onnxruntime"]["provider_libraries"]) {
    // The provider itself by file (a failing one fails again the same way).
    std::string file = p["file"].get<std::string>();
    if (!file.empty()) libs.push_back(file);
  }
  return libs;
}

void BM_ProbeJsonCold(benchmark::State& state, std::vector<std::string> global) {
  std::vector<std::string> argv = {TruegreenPath()};
  argv.insert(argv.end(), global.begin(), global.end());
  argv.push_back("probe");
  argv.push_back("--json");
  for (auto _ : state) {
    int status = 0;
    std::string out = Run(argv, &status);
    if (status != 0 || out.empty()) {
      state.SkipWithError("truegreen probe failed");
      break;
    }
  }
}

void BM_DlopenSameLibrariesCold(benchmark::State& state, std::vector<std::string> global) {
  std::vector<std::string> libs = LibrariesOf(global);
  if (libs.empty()) {
    state.SkipWithError("could not list the probe's libraries");
    return;
  }
  std::vector<std::string> argv = {g_self, "--dlopen-child"};
  argv.insert(argv.end(), libs.begin(), libs.end());
  state.counters["libraries"] = static_cast<double>(libs.size());
  for (auto _ : state) {
    int status = 0;
    Run(argv, &status);
    if (status != 0) {
      state.SkipWithError("dlopen child failed");
      break;
    }
  }
}

const std::vector<std::string> kSystem = {};
const std::vector<std::string> kFake = {"--lib-path", FakeGpuDir()};

BENCHMARK_CAPTURE(BM_ProbeJsonCold, system, kSystem)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DlopenSameLibrariesCold, system, kSystem)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ProbeJsonCold, fakegpu, kFake)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_DlopenSameLibrariesCold, fakegpu, kFake)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--dlopen-child") == 0) {
    // Same flags and search dirs as truegreen's loader; failures are expected for absent
    // libraries and cost what they cost in the probe too.
    tg::common::LibraryLoader loader = tg::common::LibraryLoader::WithDefaults({});
    for (int i = 2; i < argc; ++i) {
      auto lib = loader.Load(argv[i]);
      (void)lib;
    }
    return 0;
  }
  g_self = "/proc/self/exe";
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) g_self.assign(buf, static_cast<size_t>(n));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
