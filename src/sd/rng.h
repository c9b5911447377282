// Reproducible Gaussian noise for Stable Diffusion latents and ancestral sampling.
//
// Two documented modes:
//  * kNumpy  — bit-for-bit numpy `RandomState(seed).randn(...)`: MT19937 seeded with
//              init_genrand(seed) (numpy's legacy seeding for an integer seed; seeds must be
//              < 2^32, like numpy),
//              53-bit doubles from two 32-bit draws, and the legacy polar Box–Muller that returns
//              the second value of each pair first-cached. This is what diffusers' ONNX pipeline
//              uses, so seed N gives the same initial latents as that pipeline (values are doubles
//              cast to float32).
//  * kPhilox — fast counter-based mode: Philox4x32-10 keyed by the 64-bit seed (low word first),
//              128-bit counter starting at 0 and incremented per block. Each block's four words
//              give four normals: (w0, w1) and (w2, w3) each become a pair through the basic
//              Box–Muller transform in float32 with 24-bit uniforms u1 = (w>>8 + 0.5)/2^24,
//              u2 = (w>>8)/2^24: r·cos(2πu2), r·sin(2πu2), r = sqrt(-2 ln u1). Any 64-bit seed;
//              not comparable with other libraries; about 3x faster than kNumpy.
// Ownership/threading: a plain copyable value (a copy continues the same stream independently). Not
// thread-safe: use one Rng per generation (per image, per seed). Never fails after Create().
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tg::sd {

enum class RngMode { kNumpy, kPhilox };

// "numpy" | "philox" → mode; anything else is INVALID_ARG listing the valid names.
[[nodiscard]] common::Result<RngMode> ParseRngMode(std::string_view name);
std::string_view RngModeName(RngMode mode);  // "numpy" | "philox"; pure

class Rng {
 public:
  // kNumpy requires seed <= 4294967295 (numpy raises for larger seeds): INVALID_ARG otherwise.
  [[nodiscard]] static common::Result<Rng> Create(RngMode mode, std::uint64_t seed);
  // What Create was given.
  RngMode mode() const { return mode_; }
  std::uint64_t seed() const { return seed_; }

  // One standard normal draw in double precision (numpy: RandomState.standard_normal()).
  double NextGaussian();
  // Fills out[0..n) with standard normal draws cast to float32, in order (numpy:
  // RandomState.randn(n).astype(np.float32) — a [B,4,h,w] tensor is filled in C order).
  void FillGaussian(float* out, std::size_t n);
  // Same as FillGaussian without the float cast.
  void FillGaussian(double* out, std::size_t n);
  // Uniform double in [0, 1) (numpy: RandomState.random_sample()).
  double NextUniform();

  // One Philox4x32-10 block (exposed for known-answer tests of the fast mode).
  static std::array<std::uint32_t, 4> PhiloxBlock(std::array<std::uint32_t, 4> counter,
                                                  std::array<std::uint32_t, 2> key);

 private:
  Rng() = default;
  std::uint32_t NextMt();
  void Twist();
  std::uint32_t NextPhilox();

  RngMode mode_ = RngMode::kNumpy;
  std::uint64_t seed_ = 0;
  // MT19937 state (numpy mode).
  std::array<std::uint32_t, 624> mt_{};
  int mti_ = 624;
  // Philox state: 64-bit key, 128-bit counter, buffered 4-word output block.
  std::array<std::uint32_t, 2> key_{};
  std::array<std::uint32_t, 4> counter_{};
  std::array<std::uint32_t, 4> block_{};
  int block_pos_ = 4;
  // Cached second Gaussian of a pair (numpy mode).
  bool has_gauss_ = false;
  double gauss_ = 0.0;
  // Philox mode: the four normals of the current block.
  std::array<float, 4> normals_{};
  int normal_pos_ = 4;
  void PhiloxNormals(float* out);
};

}  // namespace tg::sd
