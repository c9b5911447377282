// EulerDiscreteScheduler and EulerAncestralDiscreteScheduler (diffusers; k-diffusion style):
// they work on x = x0 + σ·ε, so the initial noise is scaled by the largest σ and the UNet input by
// 1/√(σ²+1). Timesteps and sigmas are rounded to float32 like diffusers' tensors.
#include <algorithm>
#include <cmath>

#include "sd/scheduler_internal.h"

namespace tg::sd::internal {
namespace {

using common::Status;

// x0 = cx·x + cm·m for the sigma-space prediction conversions (no sqrt per element).
void X0Coeffs(PredictionType type, double sigma, double* cx, double* cm) {
  switch (type) {
    case PredictionType::kEpsilon:
      *cx = 1, *cm = -sigma;
      break;
    case PredictionType::kVPrediction:
      *cx = 1 / (sigma * sigma + 1), *cm = -sigma / std::sqrt(sigma * sigma + 1);
      break;
    case PredictionType::kSample:
      *cx = 0, *cm = 1;
      break;
  }
}

class EulerBase : public Scheduler {
 public:
  EulerBase(const SchedulerConfig& c, bool ancestral)
      : Scheduler(c, TimestepSpacing::kLinspace), ancestral_(ancestral) {}

  double ModelInputScale(int step_index) const override {
    double s = sigmas_[static_cast<std::size_t>(step_index)];
    return 1.0 / std::sqrt(s * s + 1);
  }

 protected:
  Status ComputeSchedule(int n) override {
    const int train = config_.num_train_timesteps;
    if (!ancestral_ && !config_.interpolation_linear) {
      return Status::Unsupported(config_.source +
                                 ": field 'interpolation_type': found \"log_linear\"; not "
                                 "implemented (required \"linear\")");
    }
    std::vector<double> ts = SpacedTimesteps(spacing_, train, n, config_.steps_offset);
    for (double& t : ts) t = F32(t);
    std::vector<double> train_sigmas = TrainSigmas(alphas_cumprod_);
    std::vector<double> sig;
    for (double t : ts) sig.push_back(InterpIndex(t, train_sigmas));
    if (!ancestral_ && config_.use_karras_sigmas) {
      std::vector<double> log_sigmas(train_sigmas.size());
      for (std::size_t i = 0; i < log_sigmas.size(); ++i) log_sigmas[i] = std::log(train_sigmas[i]);
      double smin = config_.sigma_min.value_or(sig.back());
      double smax = config_.sigma_max.value_or(sig.front());
      sig = KarrasSigmas(smin, smax, n);
      ts.clear();
      for (double s : sig) ts.push_back(F32(SigmaToT(s, log_sigmas)));
    }
    double last = 0.0;
    if (!ancestral_ && !config_.final_sigmas_zero) {
      last = std::sqrt((1 - alphas_cumprod_[0]) / alphas_cumprod_[0]);
    }
    sig.push_back(last);
    for (double& s : sig) s = F32(s);
    timesteps_ = std::move(ts);
    sigmas_ = std::move(sig);
    double max_sigma = *std::max_element(sigmas_.begin(), sigmas_.end());
    init_noise_sigma_ = (spacing_ == TimestepSpacing::kLeading)
                            ? F32(std::sqrt(max_sigma * max_sigma + 1))
                            : max_sigma;
    return Status::Ok();
  }

  bool ancestral_;
};

class EulerScheduler final : public EulerBase {
 public:
  explicit EulerScheduler(const SchedulerConfig& c) : EulerBase(c, false) {}
  std::string_view name() const override { return "euler"; }

 protected:
  Status StepImpl(const float* mo, int i, float* sample, std::size_t n, std::span<Rng>) override {
    // s_churn = 0 (diffusers' default): σ̂ = σ, no noise.
    double sigma = sigmas_[static_cast<std::size_t>(i)];
    double dt = sigmas_[static_cast<std::size_t>(i) + 1] - sigma;
    double cx = 1, cm = 0;
    X0Coeffs(config_.prediction_type, sigma, &cx, &cm);
    // derivative = (x - x0)/σ = ((1-cx)·x - cm·m)/σ; x ← x + derivative·dt.
    const double dx = (1 - cx) / sigma, dm = -cm / sigma;
    for (std::size_t k = 0; k < n; ++k) {
      double x = sample[k];
      sample[k] = static_cast<float>(x + (dx * x + dm * mo[k]) * dt);
    }
    return Status::Ok();
  }
};

class EulerAncestralScheduler final : public EulerBase {
 public:
  explicit EulerAncestralScheduler(const SchedulerConfig& c) : EulerBase(c, true) {}
  std::string_view name() const override { return "euler_a"; }
  bool NeedsNoise() const override { return true; }

 protected:
  Status StepImpl(const float* mo, int i, float* sample, std::size_t n,
                  std::span<Rng> noise) override {
    double from = sigmas_[static_cast<std::size_t>(i)];
    double to = sigmas_[static_cast<std::size_t>(i) + 1];
    double up = std::sqrt(to * to * (from * from - to * to) / (from * from));
    double down = std::sqrt(std::max(0.0, to * to - up * up));
    double dt = down - from;
    double cx = 1, cm = 0;
    X0Coeffs(config_.prediction_type, from, &cx, &cm);
    const double dx = (1 - cx) / from, dm = -cm / from;
    // Noise is drawn every step (also the last, where σ_up = 0) so a generator's stream position
    // depends only on the number of steps, as in diffusers.
    noise_.resize(n);
    const std::size_t per_image = n / noise.size();
    for (std::size_t k = 0; k < noise.size(); ++k) {
      noise[k].FillGaussian(noise_.data() + k * per_image, per_image);
    }
    for (std::size_t k = 0; k < n; ++k) {
      double x = sample[k];
      sample[k] = static_cast<float>(x + (dx * x + dm * mo[k]) * dt + noise_[k] * up);
    }
    return Status::Ok();
  }

 private:
  std::vector<float> noise_;
};

}  // namespace

std::unique_ptr<Scheduler> MakeEuler(const SchedulerConfig& c) {
  return std::make_unique<EulerScheduler>(c);
}
std::unique_ptr<Scheduler> MakeEulerAncestral(const SchedulerConfig& c) {
  return std::make_unique<EulerAncestralScheduler>(c);
}

}  // namespace tg::sd::internal
