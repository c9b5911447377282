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
    if (!ancestral_ && !config_.interpolation_linear) {
      return Status::Unsupported(config_.source +
                                 ": field 'interpolation_type': found \"log_linear\"; not "
                                 "implemented (required \"linear\")");
    }
    double last = 0.0;
    if (!ancestral_ && !config_.final_sigmas_zero) {
      last = std::sqrt((1 - alphas_cumprod_[0]) / alphas_cumprod_[0]);
    }
    SigmaSchedule sched = InterpolatedSigmaSchedule(config_, spacing_, alphas_cumprod_, n,
                                                    !ancestral_ && config_.use_karras_sigmas,
                                                    config_.sigma_min, config_.sigma_max, last);
    timesteps_ = std::move(sched.timesteps);
    sigmas_ = std::move(sched.sigmas);
    init_noise_sigma_ = sched.init_noise_sigma;
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
    // depends only on the number of steps, as in diffusers. The caller may have drawn it already
    // (DrawNoise on another thread, same generators, same order).
    const float* z = drawn_noise_;
    if (z == nullptr) {
      noise_.resize(n);
      DrawNoise(noise, noise_.data(), n);
      z = noise_.data();
    }
    for (std::size_t k = 0; k < n; ++k) {
      double x = sample[k];
      sample[k] = static_cast<float>(x + (dx * x + dm * mo[k]) * dt + z[k] * up);
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
