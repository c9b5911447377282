// Runtime overhead benchmarks (Google Benchmark; results and commands in docs/perf/runtime.md).
//
//   1. Session creation: plain (no placement proof, no attention check) vs with the proof, the
//      placement evaluation and the static attention check, on the UNet-shaped model.
//      Target: checks add <= 5 %.
//   2. Per inference: a bare Ort::Session::Run loop over pre-built values vs truegreen's
//      Session::Run (plain and IO-binding paths) vs the `truegreen run` loop body (Session::Run
//      plus its two clock reads and the latency record), all on the same model and inputs.
//      Target: `run` adds <= 2 % over the bare loop.
//
// Models come from tests/models/gen_runtime_models.py in <build>/models/runtime/ (built by the
// runtime_models target). Sessions use the dev profile (CPU) so the numbers exist on any node.
#include <benchmark/benchmark.h>

#include <chrono>

#include "runtime/ort_env.h"
#include "runtime/session.h"

namespace tg::runtime {
namespace {

std::string ModelPath() {
  const char* m = std::getenv("TG_RUNTIME_BENCH_MODEL");
  return m ? m : std::string(TG_BINARY_DIR) + "/models/runtime/unet_tiny_large.onnx";
}

SessionFactory& Factory() {
  static SessionFactory* f = [] {
    RuntimePolicy p = DevPolicy();
    p.session.intra_op_threads = 1;  // stable numbers on a shared machine
    auto ort = OrtRuntime::Open(common::LibraryLoader::WithDefaults({}));
    if (!ort.ok()) {
      std::fprintf(stderr, "%s\n", ort.status().ToString().c_str());
      std::abort();
    }
    auto r = SessionFactory::Create(p, **ort);
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
      std::abort();
    }
    return new SessionFactory(std::move(r).value());
  }();
  return *f;
}

void BM_OpenPlain(benchmark::State& state) {
  OpenOptions o;
  o.placement_proof = false;
  o.attention_check = false;
  for (auto _ : state) {
    auto s = Factory().Open(ModelPath(), o);
    if (!s.ok()) state.SkipWithError(s.status().message().c_str());
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_OpenPlain)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_OpenWithChecks(benchmark::State& state) {
  for (auto _ : state) {
    auto s = Factory().Open(ModelPath());
    if (!s.ok()) state.SkipWithError(s.status().message().c_str());
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_OpenWithChecks)->Unit(benchmark::kMillisecond)->MinTime(2.0);

struct RunFixture {
  Session session;
  std::vector<NamedTensor> inputs;
};

RunFixture& Fixture() {
  static RunFixture* f = [] {
    auto* fx = new RunFixture();
    auto s = Factory().Open(ModelPath());
    if (!s.ok()) std::abort();
    fx->session = std::move(s).value();
    std::uint64_t seed = 1;
    for (const auto& i : fx->session.inputs()) {
      fx->inputs.push_back({i.name, *RandomTensor(i.dtype, i.shape, seed++)});
    }
    return fx;
  }();
  return *f;
}

void BM_BareOrtRun(benchmark::State& state) {
  // The same model on a raw Ort::Session with pre-built input values: the floor.
  auto ort = OrtRuntime::Open(common::LibraryLoader::WithDefaults({}));
  if (!ort.ok()) return state.SkipWithError(ort.status().message().c_str());
  Ort::SessionOptions so;
  so.SetIntraOpNumThreads(1);
  Ort::Session session((*ort)->env().env(), ModelPath().c_str(), so);
  RunFixture& fx = Fixture();
  Ort::MemoryInfo mem = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
  std::vector<Ort::Value> values;
  std::vector<const char*> in_names;
  for (auto& in : fx.inputs) {
    values.push_back(Ort::Value::CreateTensor(mem, in.tensor.raw_data(), in.tensor.byte_size(),
                                              in.tensor.shape().data(), in.tensor.shape().size(),
                                              ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT));
    in_names.push_back(in.name.c_str());
  }
  std::vector<std::string> outs;
  for (const auto& o : fx.session.outputs()) outs.push_back(o.name);
  std::vector<const char*> out_names;
  for (const auto& o : outs) out_names.push_back(o.c_str());
  Ort::RunOptions ro;
  for (auto _ : state) {
    auto r = session.Run(ro, in_names.data(), values.data(), values.size(), out_names.data(),
                         out_names.size());
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_BareOrtRun)->Unit(benchmark::kMicrosecond)->MinTime(2.0);

void RunWith(benchmark::State& state, RunMode mode) {
  RunFixture& fx = Fixture();
  std::vector<Tensor> out;
  for (auto _ : state) {
    if (!fx.session.Run(fx.inputs, {}, &out, mode).ok()) state.SkipWithError("run failed");
    benchmark::DoNotOptimize(out);
  }
}

void BM_SessionRunPlain(benchmark::State& state) { RunWith(state, RunMode::kPlain); }
BENCHMARK(BM_SessionRunPlain)->Unit(benchmark::kMicrosecond)->MinTime(2.0);

void BM_SessionRunBound(benchmark::State& state) { RunWith(state, RunMode::kIoBinding); }
BENCHMARK(BM_SessionRunBound)->Unit(benchmark::kMicrosecond)->MinTime(2.0);

void BM_RunCommandLoop(benchmark::State& state) {
  // The body of `truegreen run`'s timed loop: two clock reads, Session::Run, one record.
  RunFixture& fx = Fixture();
  std::vector<Tensor> out;
  std::vector<double> ms;
  ms.reserve(1 << 20);
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!fx.session.Run(fx.inputs, {}, &out).ok()) state.SkipWithError("run failed");
    const auto t1 = std::chrono::steady_clock::now();
    if (ms.size() < ms.capacity()) {
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
  }
  benchmark::DoNotOptimize(ms);
}
BENCHMARK(BM_RunCommandLoop)->Unit(benchmark::kMicrosecond)->MinTime(2.0);

}  // namespace
}  // namespace tg::runtime

BENCHMARK_MAIN();
