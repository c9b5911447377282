// Scheduler tests: schedules and closed-loop runs against an independent numpy reference
// (tests/reference/schedulers.py, run with Debian's python3 at test time), diffusers facts checked
// by hand, and bad input.
#include "sd/scheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "tests/support/test_util.h"

namespace tg::sd {
namespace {

using nlohmann::json;
using tg::testing::TempDir;

// Stable Diffusion 1.5's scheduler/scheduler_config.json.
const json kSd15 = {
    {"_class_name", "PNDMScheduler"},   {"beta_start", 0.00085},       {"beta_end", 0.012},
    {"beta_schedule", "scaled_linear"}, {"num_train_timesteps", 1000}, {"set_alpha_to_one", false},
    {"skip_prk_steps", true},           {"steps_offset", 1},           {"clip_sample", false}};

SchedulerConfig Config(const json& j) {
  auto c = ParseSchedulerConfig(j.dump(), "test_config.json");
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : SchedulerConfig{};
}

std::unique_ptr<Scheduler> Make(const std::string& name, const json& j, int steps) {
  auto s = CreateScheduler(name, Config(j));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return nullptr;
  EXPECT_TRUE((*s)->SetTimesteps(steps).ok());
  return std::move(*s);
}

// The synthetic "UNet" shared with the Python reference.
void Model(const float* x_in, double t, float* out, std::size_t n) {
  for (std::size_t k = 0; k < n; ++k) {
    out[k] = static_cast<float>(0.8 * std::tanh(static_cast<double>(x_in[k])) +
                                0.2 * std::sin(0.37 * static_cast<double>(k) + 0.013 * t));
  }
}

// Deterministic initial latents and one numpy-mode generator for a closed-loop run.
std::vector<float> InitialLatents(const Scheduler& s, std::size_t n) {
  std::vector<float> x(n);
  for (std::size_t k = 0; k < n; ++k) {
    x[k] = static_cast<float>(std::cos(1.3 * static_cast<double>(k)) * s.init_noise_sigma());
  }
  return x;
}
std::vector<Rng> OneGenerator(std::uint64_t seed) {
  auto rng = Rng::Create(RngMode::kNumpy, seed);
  EXPECT_TRUE(rng.ok());
  return {*rng};
}

std::vector<float> ClosedLoop(Scheduler& s, std::size_t n, std::uint64_t seed) {
  std::vector<float> x = InitialLatents(s, n), x_in(n), m(n);
  std::vector<Rng> rngs = OneGenerator(seed);
  for (int i = 0; i < s.num_steps(); ++i) {
    x_in = x;
    s.ScaleModelInput(x_in.data(), n, i);
    Model(x_in.data(), s.timesteps()[i], m.data(), n);
    auto st = s.Step(m.data(), i, x.data(), n, rngs);
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  return x;
}

json RunReference(const json& cases) {
  TempDir dir;
  tg::testing::WriteFile(dir / "spec.json", cases.dump());
  auto r = tg::testing::RunProcess({tg::testing::SystemPython(),
                                    tg::testing::SourceDir() + "/tests/reference/schedulers.py",
                                    dir / "spec.json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return json::array();
  return json::parse(r.out);
}

void ExpectNear(const std::vector<double>& got, const json& want, double tol,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    double w = want[i].get<double>();
    EXPECT_NEAR(got[i], w, tol * std::max(1.0, std::fabs(w))) << what << " [" << i << "]";
  }
}

struct Family {
  std::string name;
  json config;
};
void PrintTo(const Family& f, std::ostream* os) { *os << f.name << " " << f.config.dump(); }

class SchedulerVsReference : public ::testing::TestWithParam<Family> {};

// Timesteps/sigmas for N = 10, 20, 50 and a closed loop (epsilon and v-prediction, N = 20 and an
// odd N) against the numpy reference, tolerance 1e-4.
TEST_P(SchedulerVsReference, MatchesNumpyReference) {
  const Family& f = GetParam();
  json cases = json::array();
  struct Local {
    json config;
    int steps;
    bool loop;
  };
  std::vector<Local> local;
  for (int steps : {10, 20, 50}) local.push_back({f.config, steps, false});
  for (const char* pred : {"epsilon", "v_prediction"}) {
    for (int steps : {20, 7}) {
      json c = f.config;
      c["prediction_type"] = pred;
      local.push_back({c, steps, true});
    }
  }
  for (const auto& l : local) {
    json c = {{"scheduler", f.name}, {"config", l.config}, {"steps", l.steps}};
    if (l.loop) c["loop"] = {{"n", 64}, {"seed", 42}};
    cases.push_back(c);
  }
  json ref = RunReference(cases);
  ASSERT_EQ(ref.size(), local.size());
  for (std::size_t c = 0; c < local.size(); ++c) {
    std::string what =
        f.name + " steps=" + std::to_string(local[c].steps) + " config=" + local[c].config.dump();
    auto s = Make(f.name, local[c].config, local[c].steps);
    ASSERT_NE(s, nullptr) << what;
    ExpectNear(s->timesteps(), ref[c]["timesteps"], 1e-4, what + " timesteps");
    ExpectNear(s->sigmas(), ref[c]["sigmas"], 1e-4, what + " sigmas");
    EXPECT_NEAR(s->init_noise_sigma(), ref[c]["init_noise_sigma"].get<double>(), 1e-4) << what;
    if (local[c].loop) {
      std::vector<float> x = ClosedLoop(*s, 64, 42);
      std::vector<double> xd(x.begin(), x.end());
      ExpectNear(xd, ref[c]["sample"], 1e-4, what + " closed loop");
    }
  }
}

json With(json base, const json& extra) {
  for (auto it = extra.begin(); it != extra.end(); ++it) base[it.key()] = it.value();
  return base;
}

INSTANTIATE_TEST_SUITE_P(
    AllFamilies, SchedulerVsReference,
    ::testing::Values(
        Family{"pndm", kSd15}, Family{"ddim", kSd15},
        Family{"ddim", With(kSd15, {{"timestep_spacing", "trailing"}, {"set_alpha_to_one", true}})},
        Family{"euler", kSd15}, Family{"euler", With(kSd15, {{"timestep_spacing", "leading"}})},
        Family{"euler", With(kSd15, {{"use_karras_sigmas", true}})}, Family{"euler_a", kSd15},
        Family{"euler_a", With(kSd15, {{"timestep_spacing", "trailing"}})},
        Family{"dpmpp_2m", kSd15}, Family{"dpmpp_2m_karras", kSd15},
        Family{"dpmpp_2m", With(kSd15, {{"solver_type", "heun"}, {"timestep_spacing", "leading"}})},
        Family{"lms", kSd15}, Family{"lms", With(kSd15, {{"use_karras_sigmas", true}})},
        Family{"ddim", With(kSd15, {{"beta_schedule", "linear"},
                                    {"beta_start", 0.0001},
                                    {"beta_end", 0.02},
                                    {"timestep_spacing", "linspace"}})},
        Family{"euler", With(kSd15, {{"beta_schedule", "squaredcos_cap_v2"}})}),
    [](const ::testing::TestParamInfo<Family>& info) {
      return info.param.name + "_" + std::to_string(info.index);
    });

// Hand-checked diffusers facts for SD 1.5's config.
TEST(SchedulerFacts, PndmRepeatsSecondTimestep) {
  auto s = Make("pndm", kSd15, 50);
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->num_steps(), 51);  // N steps → N+1 UNet calls
  EXPECT_EQ(s->timesteps()[0], 981);
  EXPECT_EQ(s->timesteps()[1], 961);
  EXPECT_EQ(s->timesteps()[2], 961);
  EXPECT_EQ(s->timesteps()[3], 941);
  EXPECT_EQ(s->timesteps().back(), 1);
  EXPECT_EQ(s->init_noise_sigma(), 1.0);
}

TEST(SchedulerFacts, EulerLinspaceByDefaultAndLeadingWhenAsked) {
  auto s = Make("euler", kSd15, 10);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->timestep_spacing(), TimestepSpacing::kLinspace);
  EXPECT_EQ(s->timesteps()[0], 999.0);
  EXPECT_EQ(s->timesteps()[9], 0.0);
  // σ_max of SD 1.5's schedule is ≈ 14.6146; init noise sigma is σ_max for linspace.
  EXPECT_NEAR(s->init_noise_sigma(), 14.6146, 1e-3);
  EXPECT_EQ(s->sigmas().size(), 11u);
  EXPECT_EQ(s->sigmas().back(), 0.0);
  EXPECT_NEAR(s->ModelInputScale(0), 1 / std::sqrt(s->sigmas()[0] * s->sigmas()[0] + 1), 1e-12);
  auto lead = Make("euler", With(kSd15, {{"timestep_spacing", "leading"}}), 10);
  ASSERT_NE(lead, nullptr);
  EXPECT_EQ(lead->timesteps()[0], 901.0);  // 9 * 100 + steps_offset 1
  EXPECT_NEAR(lead->init_noise_sigma(), std::sqrt(lead->sigmas()[0] * lead->sigmas()[0] + 1), 1e-5);
}

TEST(SchedulerFacts, DdimTrailingAndPndmSpacings) {
  auto s = Make("ddim", With(kSd15, {{"timestep_spacing", "trailing"}}), 10);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->timesteps()[0], 999);
  EXPECT_EQ(s->timesteps()[9], 99);
  auto lin = Make("pndm", With(kSd15, {{"timestep_spacing", "linspace"}}), 4);
  ASSERT_NE(lin, nullptr);
  // linspace(0, 999, 4).round() = 0, 333, 666, 999 → PLMS order 999, 666, 666, 333, 0.
  std::vector<double> want = {999, 666, 666, 333, 0};
  EXPECT_EQ(lin->timesteps(), want);
}

TEST(SchedulerFacts, PndmWithPrkSteps) {
  auto s = Make("pndm", With(kSd15, {{"skip_prk_steps", false}}), 10);
  ASSERT_NE(s, nullptr);
  // 12 Runge–Kutta calls plus N-3 PLMS calls.
  EXPECT_EQ(s->num_steps(), 12 + 7);
  std::vector<double> head = {901, 851, 851, 801, 801, 751, 751, 701, 701, 651, 651, 601};
  EXPECT_EQ(std::vector<double>(s->timesteps().begin(), s->timesteps().begin() + 12), head);
  std::vector<float> x = ClosedLoop(*s, 16, 0);
  for (float v : x) EXPECT_TRUE(std::isfinite(v));
  auto few = CreateScheduler("pndm", Config(With(kSd15, {{"skip_prk_steps", false}})));
  ASSERT_TRUE(few.ok());
  EXPECT_EQ((*few)->SetTimesteps(3).code(), common::StatusCode::kInvalidArg);
}

TEST(SchedulerFacts, DpmFinalStepIsFiniteAndReturnsX0) {
  auto s = Make("dpmpp_2m", kSd15, 20);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->sigmas().back(), 0.0);
  EXPECT_EQ(s->init_noise_sigma(), 1.0);
  std::vector<float> x = ClosedLoop(*s, 32, 0);
  for (float v : x) EXPECT_TRUE(std::isfinite(v));
}

TEST(SchedulerFacts, EulerAncestralIsReproducibleAndSeedDependent) {
  auto a = Make("euler_a", kSd15, 15);
  auto b = Make("euler_a", kSd15, 15);
  auto c = Make("euler_a", kSd15, 15);
  ASSERT_TRUE(a && b && c);
  std::vector<float> first = ClosedLoop(*a, 32, 7);
  EXPECT_EQ(first, ClosedLoop(*b, 32, 7));
  EXPECT_NE(first, ClosedLoop(*c, 32, 8));
}

// The fast-path entry points the pipeline uses (ScaleModelInputTo, ModelOutputBuffer, noise drawn
// ahead with DrawNoise) must give exactly the bits of the plain ones, for every scheduler.
std::vector<float> ClosedLoopFastPath(Scheduler& s, std::size_t n, std::uint64_t seed) {
  std::vector<float> x = InitialLatents(s, n), x_in(n), drawn(n);
  std::vector<Rng> rngs = OneGenerator(seed);
  for (int i = 0; i < s.num_steps(); ++i) {
    s.ScaleModelInputTo(x.data(), x_in.data(), n, i);
    float* m = s.ModelOutputBuffer(n);
    Model(x_in.data(), s.timesteps()[i], m, n);
    const float* noise = nullptr;
    if (s.NeedsNoise()) {
      Scheduler::DrawNoise(rngs, drawn.data(), n);
      noise = drawn.data();
    }
    auto st = s.Step(m, i, x.data(), n, {}, noise);  // no generators: only the drawn noise
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  return x;
}

TEST(SchedulerFacts, FastPathEntryPointsAreBitIdentical) {
  const json v_pred = [] {
    json j = kSd15;
    j["prediction_type"] = "v_prediction";
    return j;
  }();
  const json prk = [] {  // PNDM's Runge-Kutta warm-up takes the copying path
    json j = kSd15;
    j["skip_prk_steps"] = false;
    return j;
  }();
  for (const json* cfg : {&kSd15, &v_pred, &prk}) {
    for (const std::string& name : SchedulerNames()) {
      auto a = Make(name, *cfg, 12);
      auto b = Make(name, *cfg, 12);
      ASSERT_TRUE(a && b) << name;
      std::vector<float> plain = ClosedLoop(*a, 96, 5), fast = ClosedLoopFastPath(*b, 96, 5);
      ASSERT_EQ(plain.size(), fast.size());
      EXPECT_EQ(std::memcmp(plain.data(), fast.data(), plain.size() * sizeof(float)), 0)
          << name << " config " << cfg->dump();
    }
  }
}

TEST(SchedulerFacts, ReserveChangesNoResultAndSurvivesSetTimesteps) {
  for (const std::string& name : SchedulerNames()) {
    auto plain = Make(name, kSd15, 12);
    auto reserved = Make(name, kSd15, 12);
    ASSERT_TRUE(plain && reserved) << name;
    reserved->Reserve(96);
    const std::vector<float> want = ClosedLoop(*plain, 96, 5);
    std::vector<float> got = ClosedLoop(*reserved, 96, 5);
    EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << name;
    // A second generation on the same scheduler reuses the reserved buffers (ResetState returns
    // the history to the pool) and must not see the first one's history.
    reserved->Reserve(96);
    ASSERT_TRUE(reserved->SetTimesteps(12).ok());
    got = ClosedLoop(*reserved, 96, 5);
    EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << name;
  }
}

TEST(SchedulerFacts, DrawNoiseSplitsOneChunkPerGenerator) {
  auto r0 = Rng::Create(RngMode::kNumpy, 3), r1 = Rng::Create(RngMode::kNumpy, 4);
  ASSERT_TRUE(r0.ok() && r1.ok());
  std::vector<Rng> both{*r0, *r1};
  std::vector<float> drawn(10), want0(5), want1(5);
  Scheduler::DrawNoise(both, drawn.data(), drawn.size());
  r0->FillGaussian(want0.data(), 5);
  r1->FillGaussian(want1.data(), 5);
  EXPECT_EQ(std::vector<float>(drawn.begin(), drawn.begin() + 5), want0);
  EXPECT_EQ(std::vector<float>(drawn.begin() + 5, drawn.end()), want1);
}

TEST(SchedulerFacts, PredictionConversionsRoundTrip) {
  const double a = 0.3, x0 = 0.7, eps = -1.2;
  const double x = std::sqrt(a) * x0 + std::sqrt(1 - a) * eps;
  const double v = std::sqrt(a) * eps - std::sqrt(1 - a) * x0;
  EXPECT_NEAR(PredictX0(PredictionType::kEpsilon, eps, x, a), x0, 1e-12);
  EXPECT_NEAR(PredictX0(PredictionType::kVPrediction, v, x, a), x0, 1e-12);
  EXPECT_NEAR(PredictEpsilon(PredictionType::kVPrediction, v, x, a), eps, 1e-12);
  EXPECT_NEAR(PredictEpsilon(PredictionType::kSample, x0, x, a), eps, 1e-12);
  // Sigma space: x_s = (x0 + σ ε), model input scaled by 1/√(σ²+1), v = α ε - σ_t x0.
  const double sigma = std::sqrt((1 - a) / a);
  const double xs = x0 + sigma * eps;
  EXPECT_NEAR(PredictX0Sigma(PredictionType::kEpsilon, eps, xs, sigma), x0, 1e-12);
  EXPECT_NEAR(PredictX0Sigma(PredictionType::kVPrediction, v, xs, sigma), x0, 1e-12);
}

// ---- Bad input ----------------------------------------------------------------------------

TEST(SchedulerErrors, UnknownNameListsValidNames) {
  auto s = CreateScheduler("heun_karras", Config(kSd15));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), common::StatusCode::kInvalidArg);
  EXPECT_NE(s.status().message().find("heun_karras"), std::string::npos);
  EXPECT_NE(s.status().message().find("pndm, ddim, euler, euler_a, dpmpp_2m"), std::string::npos);
}

TEST(SchedulerErrors, StepsOutOfRange) {
  for (const auto& name : SchedulerNames()) {
    auto s = CreateScheduler(name, Config(kSd15));
    ASSERT_TRUE(s.ok()) << name;
    for (int steps : {0, -3, 10000}) {
      common::Status st = (*s)->SetTimesteps(steps);
      EXPECT_EQ(st.code(), common::StatusCode::kInvalidArg) << name << " " << steps;
      EXPECT_NE(st.message().find("required 1 to 1000"), std::string::npos) << st.message();
    }
  }
}

TEST(SchedulerErrors, MalformedConfigNamesFileAndField) {
  struct Case {
    std::string text, needle;
  };
  std::vector<Case> cases = {
      {R"({"beta_schedule": "cubic"})", "field 'beta_schedule': found \"cubic\""},
      {R"({"num_train_timesteps": "1000"})", "field 'num_train_timesteps'"},
      {R"({"steps_offset": 1.5})", "field 'steps_offset'"},
      {R"({"prediction_type": "x0"})", "field 'prediction_type'"},
      {R"({"timestep_spacing": "even"})", "field 'timestep_spacing'"},
      {R"({"trained_betas": [0.1, 0.2]})", "field 'trained_betas'"},
      {R"({"set_alpha_to_one": "no"})", "field 'set_alpha_to_one'"},
      {R"([1, 2])", "required a JSON object"},
      {R"({"beta_start": 0.1,)", "invalid JSON"},
  };
  for (const auto& c : cases) {
    auto r = ParseSchedulerConfig(c.text, "/models/sd/scheduler_config.json");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find("/models/sd/scheduler_config.json"), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find(c.needle), std::string::npos) << r.status().message();
  }
  auto unsupported = ParseSchedulerConfig(R"({"thresholding": true})", "cfg.json");
  ASSERT_FALSE(unsupported.ok());
  EXPECT_EQ(unsupported.status().code(), common::StatusCode::kUnsupported);
  EXPECT_NE(unsupported.status().message().find("thresholding"), std::string::npos);
}

TEST(SchedulerErrors, AcceptsPythonInfinityAndIgnoresUnknownFields) {
  auto r = ParseSchedulerConfig(
      R"({"_class_name": "DPMSolverMultistepScheduler", "lambda_min_clipped": -Infinity,
          "_diffusers_version": "0.21.0", "algorithm_type": "dpmsolver++", "x": "NaN"})",
      "cfg.json");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(std::isinf(r->lambda_min_clipped));
  auto s = CreateScheduler("default", *r);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->name(), "dpmpp_2m");
}

TEST(SchedulerErrors, MissingConfigFile) {
  auto r = LoadSchedulerConfig("/nonexistent/scheduler_config.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), common::StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/scheduler_config.json"), std::string::npos);
}

TEST(SchedulerErrors, StepMisuse) {
  auto s = CreateScheduler("euler_a", Config(kSd15));
  ASSERT_TRUE(s.ok());
  std::vector<float> x(8, 0.5f), m(8, 0.1f);
  EXPECT_EQ((*s)->Step(m.data(), 0, x.data(), 8).code(), common::StatusCode::kInternal);
  ASSERT_TRUE((*s)->SetTimesteps(5).ok());
  // Ancestral sampling without a noise source, then with a non-divisor count.
  EXPECT_EQ((*s)->Step(m.data(), 0, x.data(), 8).code(), common::StatusCode::kInvalidArg);
  auto rng = Rng::Create(RngMode::kPhilox, 1);
  ASSERT_TRUE(rng.ok());
  std::vector<Rng> three(3, *rng);
  EXPECT_EQ((*s)->Step(m.data(), 0, x.data(), 8, three).code(), common::StatusCode::kInvalidArg);
  std::vector<Rng> two(2, *rng);
  EXPECT_TRUE((*s)->Step(m.data(), 0, x.data(), 8, two).ok());
  EXPECT_EQ((*s)->Step(m.data(), 2, x.data(), 8, two).code(),
            common::StatusCode::kInternal);  // skipped step 1
  EXPECT_EQ((*s)->Step(m.data(), 1, x.data(), 4, two).code(), common::StatusCode::kInvalidArg);
}

TEST(SchedulerErrors, UnsupportedCombinations) {
  auto pndm_sample = CreateScheduler("pndm", Config(With(kSd15, {{"prediction_type", "sample"}})));
  EXPECT_EQ(pndm_sample.status().code(), common::StatusCode::kUnsupported);
  auto leading_overflow = CreateScheduler("ddim", Config(kSd15));
  ASSERT_TRUE(leading_overflow.ok());
  // 1000 leading steps with steps_offset 1 reach timestep 1000, beyond the training range.
  EXPECT_EQ((*leading_overflow)->SetTimesteps(1000).code(), common::StatusCode::kInvalidArg);
}

}  // namespace
}  // namespace tg::sd
