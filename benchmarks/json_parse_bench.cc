// Time of common::ParseJson on an array of n empty objects, the shape that made nlohmann's
// callback parser quadratic. The unit test ConfigTest.JsonArrayOfObjectsParsesInLinearWork holds
// the parse's allocations to linear growth; time is measured here, with Google Benchmark's
// complexity fit over n = 10k, 100k, 1M (docs/PERFORMANCE.md).
//
//   BM_ParseJson/<n>              common::ParseJson (the SAX builder with the duplicate-key and
//                                 depth checks), as every JSON input of the binary is read
//   BM_NlohmannParse/<n>          nlohmann's own DOM parser, no checks: the floor
//   BM_NlohmannCallbackParse/<n>  nlohmann's callback parser (10k and 100k only: it is quadratic)
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "common/config.h"

namespace {

using tg::common::Json;

std::string ArrayOfEmptyObjects(std::int64_t n) {
  std::string text = "[";
  for (std::int64_t i = 0; i < n; ++i) text += i ? ",{}" : "{}";
  text += "]";
  return text;
}

void Finish(benchmark::State& state, const std::string& text) {
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(text.size()));
  state.SetComplexityN(state.range(0));
}

void BM_ParseJson(benchmark::State& state) {
  const std::string text = ArrayOfEmptyObjects(state.range(0));
  for (auto _ : state) {
    auto j = tg::common::ParseJson(text, "bench.json");
    if (!j.ok() || j->size() != static_cast<std::size_t>(state.range(0))) {
      state.SkipWithError("ParseJson failed");
      return;
    }
    benchmark::DoNotOptimize(j);
  }
  Finish(state, text);
}
BENCHMARK(BM_ParseJson)
    ->RangeMultiplier(10)
    ->Range(10'000, 1'000'000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity();

void BM_NlohmannParse(benchmark::State& state) {
  const std::string text = ArrayOfEmptyObjects(state.range(0));
  for (auto _ : state) {
    Json j = Json::parse(text);
    benchmark::DoNotOptimize(j);
  }
  Finish(state, text);
}
BENCHMARK(BM_NlohmannParse)
    ->RangeMultiplier(10)
    ->Range(10'000, 1'000'000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity();

void BM_NlohmannCallbackParse(benchmark::State& state) {
  const std::string text = ArrayOfEmptyObjects(state.range(0));
  const Json::parser_callback_t keep_all = [](int, Json::parse_event_t, Json&) { return true; };
  for (auto _ : state) {
    Json j = Json::parse(text, keep_all);
    benchmark::DoNotOptimize(j);
  }
  Finish(state, text);
}
BENCHMARK(BM_NlohmannCallbackParse)
    ->RangeMultiplier(10)
    ->Range(10'000, 100'000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity();

}  // namespace

BENCHMARK_MAIN();
