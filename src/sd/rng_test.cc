// RNG tests: numpy mode against numpy itself (Debian's python3 at test time), known values,
// the Philox known-answer vector, and bad input.
#include "sd/rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "tests/support/test_util.h"

namespace tg::sd {
namespace {

TEST(RngNumpy, Seed0BeginsWithPublishedValues) {
  auto r = Rng::Create(RngMode::kNumpy, 0);
  ASSERT_TRUE(r.ok());
  std::vector<float> v(4);
  r->FillGaussian(v.data(), v.size());
  EXPECT_NEAR(v[0], 1.76405235, 1e-7);
  EXPECT_NEAR(v[1], 0.40015721, 1e-7);
  EXPECT_NEAR(v[2], 0.97873798, 1e-7);
  EXPECT_NEAR(v[3], 2.2408932, 1e-7);
}

// Bit-exact doubles against numpy.random.RandomState(seed).randn(n) for several seeds and lengths
// (odd lengths exercise the cached second value of the polar method).
TEST(RngNumpy, MatchesNumpyRandomStateExactly) {
  const std::vector<std::pair<std::uint64_t, int>> cases = {
      {0, 5}, {1, 1}, {42, 16384}, {1234567, 333}, {4294967295ULL, 7}, {2023, 1000}};
  std::string script =
      "import json,sys,numpy as np\n"
      "cases=json.loads(sys.argv[1])\n"
      "print(json.dumps([[float.hex(float(x)) for x in np.random.RandomState(s).randn(n)]"
      " for s,n in cases]))\n";
  nlohmann::json arg = nlohmann::json::array();
  for (auto& [s, n] : cases) arg.push_back({s, n});
  auto p = tg::testing::RunProcess({tg::testing::SystemPython(), "-c", script, arg.dump()});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  auto want = nlohmann::json::parse(p.out);
  ASSERT_EQ(want.size(), cases.size());
  for (std::size_t c = 0; c < cases.size(); ++c) {
    auto r = Rng::Create(RngMode::kNumpy, cases[c].first);
    ASSERT_TRUE(r.ok());
    std::vector<double> got(static_cast<std::size_t>(cases[c].second));
    r->FillGaussian(got.data(), got.size());
    ASSERT_EQ(want[c].size(), got.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      double w = std::strtod(want[c][i].get<std::string>().c_str(), nullptr);
      ASSERT_EQ(got[i], w) << "seed " << cases[c].first << " index " << i;
    }
  }
}

TEST(RngNumpy, FloatFillIsTheDoubleStreamCast) {
  auto a = Rng::Create(RngMode::kNumpy, 99);
  auto b = Rng::Create(RngMode::kNumpy, 99);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<float> f(101);
  std::vector<double> d(101);
  a->FillGaussian(f.data(), f.size());
  b->FillGaussian(d.data(), d.size());
  for (std::size_t i = 0; i < f.size(); ++i) EXPECT_EQ(f[i], static_cast<float>(d[i]));
}

TEST(RngNumpy, RejectsSeedsNumpyRejects) {
  auto r = Rng::Create(RngMode::kNumpy, 1ULL << 32);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), common::StatusCode::kInvalidArg);
  EXPECT_NE(r.status().message().find("4294967296"), std::string::npos);
  EXPECT_TRUE(Rng::Create(RngMode::kPhilox, 1ULL << 40).ok());
}

TEST(RngPhilox, KnownAnswerVector) {
  // Random123's philox4x32-10 known-answer test: counter 0, key 0.
  auto out = Rng::PhiloxBlock({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(out[0], 0x6627e8d5U);
  EXPECT_EQ(out[1], 0xe169c58dU);
  EXPECT_EQ(out[2], 0xbc57ac4cU);
  EXPECT_EQ(out[3], 0x9b00dbd8U);
}

TEST(RngPhilox, ReproducibleSeedDependentAndStandardNormal) {
  auto a = Rng::Create(RngMode::kPhilox, 7);
  auto b = Rng::Create(RngMode::kPhilox, 7);
  auto c = Rng::Create(RngMode::kPhilox, 8);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  const std::size_t n = 200000;
  std::vector<double> x(n), y(n), z(n);
  a->FillGaussian(x.data(), n);
  b->FillGaussian(y.data(), n);
  c->FillGaussian(z.data(), n);
  EXPECT_EQ(x, y);
  EXPECT_NE(x, z);
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= n;
  for (double v : x) var += (v - mean) * (v - mean);
  var /= n;
  // 200k draws: standard error of the mean ≈ 0.0022, of the variance ≈ 0.0032.
  EXPECT_NEAR(mean, 0.0, 0.015);
  EXPECT_NEAR(var, 1.0, 0.02);
}

TEST(RngPhilox, BlockFillMatchesOneByOneDraws) {
  auto a = Rng::Create(RngMode::kPhilox, 3);
  auto b = Rng::Create(RngMode::kPhilox, 3);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<float> fast(3 + 17);
  a->FillGaussian(fast.data(), 3);  // leaves a partly used block
  a->FillGaussian(fast.data() + 3, 17);
  for (std::size_t i = 0; i < fast.size(); ++i) {
    EXPECT_EQ(fast[i], static_cast<float>(b->NextGaussian())) << i;
  }
  // The first two normals follow from the first Philox block by the documented transform.
  auto w = Rng::PhiloxBlock({0, 0, 0, 0}, {3, 0});
  float u1 = (static_cast<float>(w[0] >> 8) + 0.5f) / 16777216.0f;
  float u2 = static_cast<float>(w[1] >> 8) / 16777216.0f;
  float r = std::sqrt(-2.0f * std::log(u1));
  EXPECT_NEAR(fast[0], r * std::cos(6.28318530717958647692f * u2), 1e-6);
  EXPECT_NEAR(fast[1], r * std::sin(6.28318530717958647692f * u2), 1e-6);
}

TEST(RngMode, ParseNames) {
  EXPECT_EQ(*ParseRngMode("numpy"), RngMode::kNumpy);
  EXPECT_EQ(*ParseRngMode("philox"), RngMode::kPhilox);
  auto bad = ParseRngMode("torch");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("valid: numpy, philox"), std::string::npos);
  EXPECT_EQ(RngModeName(RngMode::kNumpy), "numpy");
}

}  // namespace
}  // namespace tg::sd
