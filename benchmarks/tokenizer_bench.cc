// Host-side costs of the SD core pieces: CLIP tokenizer throughput (target ≥ 1 M tokens/s),
// scheduler step cost on one 4×64×64 latent (part of the ≤ 0.2 ms host budget per denoising
// step) and initial-noise generation.
//
//   BM_EncodePrompt            Encode() of typical SD prompts, padded to 77 (warm merge cache)
//   BM_TokenizeProse           Tokenize() of a long English-like text (cache warm after 1st pass)
//   BM_TokenizeUniqueWords     Tokenize() of random letter words never seen before: cold BPE
//   BM_SchedulerStep/<name>    ScaleModelInput + Step on 16 384 floats (one 512×512 latent)
//   BM_FillGaussian/<mode>     16 384 Gaussian draws (numpy-compatible vs Philox)
//
// The tokenizer folder is derived from data/clip (in the repository) with tests/reference/
// make_clip_tokenizer.py (Debian's python3) into <build>/sd_core_testdata on first use.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "sd/rng.h"
#include "sd/scheduler.h"
#include "sd/tokenizer.h"

namespace {

namespace fs = std::filesystem;

const tg::sd::ClipTokenizer* Tokenizer() {
  static std::optional<tg::sd::ClipTokenizer> tok;
  static bool tried = false;
  if (tried) return tok ? &*tok : nullptr;
  tried = true;
  std::string dir = std::string(TG_BINARY_DIR) + "/sd_core_testdata/clip_pad_eot";
  if (!fs::exists(dir + "/tokenizer_config.json")) {
    std::string cmd = "/usr/bin/python3 '" + std::string(TG_SOURCE_DIR) +
                      "/tests/reference/make_clip_tokenizer.py' '" + std::string(TG_SOURCE_DIR) +
                      "/data/clip/bpe_simple_vocab_16e6.txt.gz' '" + dir + "'";
    if (std::system(cmd.c_str()) != 0) return nullptr;
  }
  auto t = tg::sd::ClipTokenizer::Load(dir);
  if (!t.ok()) return nullptr;
  tok.emplace(std::move(t).value());
  return &*tok;
}

const std::vector<std::string>& Prompts() {
  static const std::vector<std::string> kPrompts = {
      "a photo of an astronaut riding a horse on mars",
      "masterpiece, best quality, ultra-detailed, 8k, a cozy cabin in a snowy forest at dusk, "
      "warm light in the windows, volumetric fog, trending on artstation",
      "A portrait of an old fisherman, dramatic lighting, oil painting by Rembrandt (1660)",
      "cyberpunk city street at night, neon signs, rain, reflections, 35mm photo, f/1.8",
  };
  return kPrompts;
}

void BM_EncodePrompt(benchmark::State& state) {
  const auto* tok = Tokenizer();
  if (tok == nullptr) {
    state.SkipWithError("tokenizer files could not be generated");
    return;
  }
  std::size_t tokens = 0, k = 0;
  for (auto _ : state) {
    const std::string& p = Prompts()[k++ % Prompts().size()];
    auto ids = tok->EncodeUnpadded(p);
    tokens += ids->size() - 2;
    auto padded = tok->Encode(p);
    benchmark::DoNotOptimize(padded);
    tokens += ids->size() - 2;
  }
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EncodePrompt);

std::string Prose(std::size_t bytes) {
  std::string s;
  while (s.size() < bytes) {
    for (const auto& p : Prompts()) s += p + ". ";
    s += "The quick brown fox jumps over the lazy dog; it's 1999 and we'll party! ";
  }
  return s;
}

void BM_TokenizeProse(benchmark::State& state) {
  const auto* tok = Tokenizer();
  if (tok == nullptr) {
    state.SkipWithError("tokenizer files could not be generated");
    return;
  }
  const std::string text = Prose(1 << 20);
  std::size_t tokens = 0;
  for (auto _ : state) {
    auto ids = tok->Tokenize(text);
    tokens += ids.size();
    benchmark::DoNotOptimize(ids);
  }
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_TokenizeProse)->Unit(benchmark::kMillisecond);

void BM_TokenizeUniqueWords(benchmark::State& state) {
  const auto* tok = Tokenizer();
  if (tok == nullptr) {
    state.SkipWithError("tokenizer files could not be generated");
    return;
  }
  std::mt19937 gen(1);
  std::uniform_int_distribution<int> len(3, 12), letter('a', 'z');
  std::size_t tokens = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::string text;  // 64 KiB of fresh random words (misses the merge cache)
    while (text.size() < (64u << 10)) {
      int n = len(gen);
      for (int i = 0; i < n; ++i) text.push_back(static_cast<char>(letter(gen)));
      text.push_back(' ');
    }
    state.ResumeTiming();
    auto ids = tok->Tokenize(text);
    tokens += ids.size();
    benchmark::DoNotOptimize(ids);
  }
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_TokenizeUniqueWords)->Unit(benchmark::kMillisecond);

void BM_SchedulerStep(benchmark::State& state) {
  const std::string name = tg::sd::SchedulerNames()[static_cast<std::size_t>(state.range(0))];
  state.SetLabel(name);
  auto cfg = tg::sd::ParseSchedulerConfig(
      R"({"_class_name": "PNDMScheduler", "beta_start": 0.00085, "beta_end": 0.012,
          "beta_schedule": "scaled_linear", "num_train_timesteps": 1000,
          "set_alpha_to_one": false, "skip_prk_steps": true, "steps_offset": 1,
          "clip_sample": false})",
      "bench");
  auto s = tg::sd::CreateScheduler(name, *cfg);
  if (!s.ok()) {
    state.SkipWithError(s.status().ToString().c_str());
    return;
  }
  constexpr std::size_t kN = 4 * 64 * 64;
  std::vector<float> x(kN), x_in(kN), m(kN);
  for (std::size_t i = 0; i < kN; ++i) {
    x[i] = static_cast<float>(std::sin(0.1 * static_cast<double>(i)));
    m[i] = static_cast<float>(std::cos(0.07 * static_cast<double>(i)) * 0.5);
  }
  std::vector<tg::sd::Rng> rngs{*tg::sd::Rng::Create(tg::sd::RngMode::kNumpy, 0)};
  (void)(*s)->SetTimesteps(50);
  int i = 0;
  for (auto _ : state) {
    if (i == (*s)->num_steps()) {
      state.PauseTiming();
      (void)(*s)->SetTimesteps(50);
      i = 0;
      for (std::size_t k = 0; k < kN; ++k) x[k] = static_cast<float>(std::sin(0.1 * k));
      state.ResumeTiming();
    }
    std::copy(x.begin(), x.end(), x_in.begin());
    (*s)->ScaleModelInput(x_in.data(), kN, i);
    auto st = (*s)->Step(m.data(), i, x.data(), kN, rngs);
    benchmark::DoNotOptimize(st);
    benchmark::DoNotOptimize(x.data());
    ++i;
  }
}
BENCHMARK(BM_SchedulerStep)->DenseRange(0, 6)->Unit(benchmark::kMicrosecond);

void BM_FillGaussian(benchmark::State& state) {
  auto mode = state.range(0) == 0 ? tg::sd::RngMode::kNumpy : tg::sd::RngMode::kPhilox;
  state.SetLabel(std::string(tg::sd::RngModeName(mode)));
  auto rng = tg::sd::Rng::Create(mode, 0);
  std::vector<float> out(4 * 64 * 64);
  for (auto _ : state) {
    rng->FillGaussian(out.data(), out.size());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * out.size()));
}
BENCHMARK(BM_FillGaussian)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
