// Reproducible Gaussian generators (see rng.h). The numpy mode mirrors numpy's legacy
// RandomState code paths (mt19937_seed, legacy_double, legacy_gauss) so that seeds shared with
// diffusers' ONNX pipeline give identical latents.
#include "sd/rng.h"

#include <cmath>
#include <string>

namespace tg::sd {
namespace {

constexpr int kMtN = 624;
constexpr int kMtM = 397;
constexpr std::uint32_t kMatrixA = 0x9908b0dfU;
constexpr std::uint32_t kUpperMask = 0x80000000U;
constexpr std::uint32_t kLowerMask = 0x7fffffffU;

// 53-bit double in [0, 1) from two 32-bit words, exactly as numpy's legacy_double.
double Double53(std::uint32_t a, std::uint32_t b) {
  return (static_cast<double>(a >> 5) * 67108864.0 + static_cast<double>(b >> 6)) /
         9007199254740992.0;
}

}  // namespace

common::Result<RngMode> ParseRngMode(std::string_view name) {
  if (name == "numpy") return RngMode::kNumpy;
  if (name == "philox") return RngMode::kPhilox;
  return common::Status::InvalidArg("unknown rng mode '" + std::string(name) +
                                    "' (valid: numpy, philox)");
}

std::string_view RngModeName(RngMode mode) { return mode == RngMode::kNumpy ? "numpy" : "philox"; }

common::Result<Rng> Rng::Create(RngMode mode, std::uint64_t seed) {
  Rng r;
  r.mode_ = mode;
  r.seed_ = seed;
  if (mode == RngMode::kNumpy) {
    if (seed > 0xffffffffULL) {
      return common::Status::InvalidArg("rng seed " + std::to_string(seed) +
                                        " is out of range for mode numpy (required: 0 to "
                                        "4294967295, as numpy.random.RandomState)");
    }
    // numpy's RandomState(int) seeds with init_genrand (mt19937_seed), not init_by_array.
    auto s = static_cast<std::uint32_t>(seed);
    for (int i = 0; i < kMtN; ++i) {
      r.mt_[i] = s;
      s = 1812433253U * (s ^ (s >> 30)) + static_cast<std::uint32_t>(i + 1);
    }
    r.mti_ = kMtN;
  } else {
    r.key_ = {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
    r.counter_ = {0, 0, 0, 0};
    r.block_pos_ = 4;
  }
  return r;
}

void Rng::Twist() {
  // Reference MT19937 generation split in three runs so no index needs a modulo.
  auto mix = [](std::uint32_t a, std::uint32_t b) {
    std::uint32_t y = (a & kUpperMask) | (b & kLowerMask);
    return (y >> 1) ^ ((0U - (y & 1U)) & kMatrixA);
  };
  int i = 0;
  for (; i < kMtN - kMtM; ++i) mt_[i] = mt_[i + kMtM] ^ mix(mt_[i], mt_[i + 1]);
  for (; i < kMtN - 1; ++i) mt_[i] = mt_[i + kMtM - kMtN] ^ mix(mt_[i], mt_[i + 1]);
  mt_[kMtN - 1] = mt_[kMtM - 1] ^ mix(mt_[kMtN - 1], mt_[0]);
  mti_ = 0;
}

std::uint32_t Rng::NextMt() {
  if (mti_ >= kMtN) Twist();
  std::uint32_t y = mt_[mti_++];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= (y >> 18);
  return y;
}

std::array<std::uint32_t, 4> Rng::PhiloxBlock(std::array<std::uint32_t, 4> c,
                                              std::array<std::uint32_t, 2> k) {
  constexpr std::uint32_t kM0 = 0xD2511F53U, kM1 = 0xCD9E8D57U;
  constexpr std::uint32_t kW0 = 0x9E3779B9U, kW1 = 0xBB67AE85U;
  for (int round = 0; round < 10; ++round) {
    std::uint64_t p0 = static_cast<std::uint64_t>(kM0) * c[0];
    std::uint64_t p1 = static_cast<std::uint64_t>(kM1) * c[2];
    auto hi0 = static_cast<std::uint32_t>(p0 >> 32), lo0 = static_cast<std::uint32_t>(p0);
    auto hi1 = static_cast<std::uint32_t>(p1 >> 32), lo1 = static_cast<std::uint32_t>(p1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
    k[0] += kW0;
    k[1] += kW1;
  }
  return c;
}

std::uint32_t Rng::NextPhilox() {
  if (block_pos_ >= 4) {
    block_ = PhiloxBlock(counter_, key_);
    // 128-bit counter increment.
    for (auto& w : counter_) {
      if (++w != 0) break;
    }
    block_pos_ = 0;
  }
  return block_[block_pos_++];
}

double Rng::NextUniform() {
  if (mode_ == RngMode::kNumpy) {
    std::uint32_t a = NextMt();
    std::uint32_t b = NextMt();
    return Double53(a, b);
  }
  std::uint32_t a = NextPhilox();
  std::uint32_t b = NextPhilox();
  return Double53(a, b);
}

void Rng::PhiloxNormals(float* out) {
  std::array<std::uint32_t, 4> w = PhiloxBlock(counter_, key_);
  for (auto& c : counter_) {
    if (++c != 0) break;
  }
  constexpr float kScale = 1.0f / 16777216.0f;
  constexpr float kTwoPi = 6.28318530717958647692f;
  for (int p = 0; p < 2; ++p) {
    float u1 = (static_cast<float>(w[2 * p] >> 8) + 0.5f) * kScale;  // (0, 1): log is finite
    float u2 = static_cast<float>(w[2 * p + 1] >> 8) * kScale;
    float r = std::sqrt(-2.0f * std::log(u1));
    out[2 * p] = r * std::cos(kTwoPi * u2);
    out[2 * p + 1] = r * std::sin(kTwoPi * u2);
  }
}

double Rng::NextGaussian() {
  if (mode_ == RngMode::kPhilox) {
    if (normal_pos_ >= 4) {
      PhiloxNormals(normals_.data());
      normal_pos_ = 0;
    }
    return normals_[normal_pos_++];
  }
  if (has_gauss_) {
    has_gauss_ = false;
    double g = gauss_;
    gauss_ = 0.0;
    return g;
  }
  // numpy's legacy polar method: returns f*x2 and caches f*x1.
  double x1, x2, r2;
  do {
    x1 = 2.0 * NextUniform() - 1.0;
    x2 = 2.0 * NextUniform() - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  double f = std::sqrt(-2.0 * std::log(r2) / r2);
  gauss_ = f * x1;
  has_gauss_ = true;
  return f * x2;
}

void Rng::FillGaussian(float* out, std::size_t n) {
  std::size_t i = 0;
  if (mode_ == RngMode::kPhilox) {
    // Drain the current block, then write whole blocks straight into the output.
    while (i < n && normal_pos_ < 4) out[i++] = normals_[normal_pos_++];
    for (; i + 4 <= n; i += 4) PhiloxNormals(out + i);
  }
  for (; i < n; ++i) out[i] = static_cast<float>(NextGaussian());
}

void Rng::FillGaussian(double* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = NextGaussian();
}

}  // namespace tg::sd
