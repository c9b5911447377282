// PNG encoding of one 512x512 RGB image (target <= 10 ms, docs/PERFORMANCE.md), with the
// `parameters` text chunk that `generate` writes.
//
//   BM_EncodePng/<image>         the build's encoder (libspng when found), as `generate` uses it
//   BM_EncodePngLibpng/<image>   the libpng fallback, same settings
//   BM_DecodePng/<image>         libpng decode of the encoded file (what tests use to verify)
//
// Images: 0 = noise (what the bundled random-weight tiny pipelines produce: incompressible),
// 1 = smooth (sine gradients with +-2 of grain: a stand-in for a photo-like render).
// The `bytes` counter is the encoded size.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "sd/png.h"

namespace {

using tg::sd::RgbImage;

constexpr int kSide = 512;

RgbImage MakeImage(bool smooth) {
  RgbImage im;
  im.width = kSide;
  im.height = kSide;
  im.pixels.resize(static_cast<std::size_t>(kSide) * kSide * 3);
  std::mt19937 gen(7);
  for (int y = 0; y < kSide; ++y) {
    for (int x = 0; x < kSide; ++x) {
      for (int c = 0; c < 3; ++c) {
        double v = static_cast<double>(gen() & 0xff);
        if (smooth) {
          v = 128.0 + 100.0 * std::sin(x * 0.02 * (c + 1)) * std::cos(y * 0.03) +
              static_cast<double>(gen() % 5) - 2.0;
        }
        im.pixels[(static_cast<std::size_t>(y) * kSide + x) * 3 + c] =
            static_cast<std::uint8_t>(std::clamp(v, 0.0, 255.0));
      }
    }
  }
  return im;
}

const RgbImage& Image(std::int64_t kind) {
  static const RgbImage kNoise = MakeImage(false);
  static const RgbImage kSmooth = MakeImage(true);
  return kind == 0 ? kNoise : kSmooth;
}

const std::vector<tg::sd::PngText>& Text() {
  static const std::vector<tg::sd::PngText> kText = {
      {"parameters",
       "a photo of an astronaut riding a horse on mars\nNegative prompt: blurry\nSteps: 30, "
       "Sampler: Euler a, CFG scale: 7.5, Seed: 42, Size: 512x512, Model hash: 0123456789, "
       "Version: truegreen 0.1.0"}};
  return kText;
}

void BM_EncodePng(benchmark::State& state) {
  const RgbImage& im = Image(state.range(0));
  std::size_t bytes = 0;
  for (auto _ : state) {
    auto png = tg::sd::EncodePng(im, Text());
    if (!png.ok()) state.SkipWithError(png.status().message().c_str());
    bytes = png.ok() ? png->size() : 0;
    benchmark::DoNotOptimize(png);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  state.SetLabel(std::string(tg::sd::PngEncoderName()));
}
BENCHMARK(BM_EncodePng)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_EncodePngLibpng(benchmark::State& state) {
  const RgbImage& im = Image(state.range(0));
  std::size_t bytes = 0;
  for (auto _ : state) {
    auto png = tg::sd::EncodePngLibpng(im, Text());
    if (!png.ok()) state.SkipWithError(png.status().message().c_str());
    bytes = png.ok() ? png->size() : 0;
    benchmark::DoNotOptimize(png);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_EncodePngLibpng)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_DecodePng(benchmark::State& state) {
  auto png = tg::sd::EncodePng(Image(state.range(0)), Text());
  if (!png.ok()) {
    state.SkipWithError(png.status().message().c_str());
    return;
  }
  for (auto _ : state) {
    auto im = tg::sd::DecodePng(*png, "bench");
    benchmark::DoNotOptimize(im);
  }
}
BENCHMARK(BM_DecodePng)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
