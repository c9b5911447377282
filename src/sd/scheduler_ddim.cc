// DDIMScheduler (diffusers) with eta = 0: deterministic, one UNet call per step. The previous
// timestep is always t - num_train_timesteps // N, whatever the spacing (as in diffusers).
#include <algorithm>
#include <cmath>

#include "sd/scheduler_internal.h"

namespace tg::sd::internal {
namespace {

using common::Status;

class DdimScheduler final : public Scheduler {
 public:
  explicit DdimScheduler(const SchedulerConfig& c) : Scheduler(c, TimestepSpacing::kLeading) {
    final_alpha_cumprod_ = config_.set_alpha_to_one.value_or(true) ? 1.0 : alphas_cumprod_[0];
    // diffusers' DDIM defaults clip_sample to true when the config does not say.
    clip_ = config_.clip_sample_set ? config_.clip_sample : true;
  }
  std::string_view name() const override { return "ddim"; }

 protected:
  Status ComputeSchedule(int n) override {
    const int train = config_.num_train_timesteps;
    std::vector<double> ts;
    if (spacing_ == TimestepSpacing::kLinspace) {
      for (double v : Linspace(0, train - 1, n)) ts.insert(ts.begin(), RoundHalfEven(v));
    } else {
      ts = SpacedTimesteps(spacing_, train, n, config_.steps_offset);
    }
    for (double t : ts) {
      if (t < 0 || t >= train) {
        return Status::InvalidArg("scheduler ddim: " + std::to_string(n) +
                                  " steps with steps_offset " +
                                  std::to_string(config_.steps_offset) + " give timestep " +
                                  std::to_string(static_cast<long>(t)) + ", outside 0.." +
                                  std::to_string(train - 1) + " (" + config_.source + ")");
      }
      double a = alphas_cumprod_[static_cast<std::size_t>(t)];
      sigmas_.push_back(std::sqrt((1 - a) / a));
    }
    timesteps_ = std::move(ts);
    init_noise_sigma_ = 1.0;
    return Status::Ok();
  }

  Status StepImpl(const float* mo, int step, float* sample, std::size_t n,
                  std::span<Rng>) override {
    auto t = static_cast<long>(timesteps_[static_cast<std::size_t>(step)]);
    long prev_t = t - config_.num_train_timesteps / num_inference_steps_;
    double a = alphas_cumprod_[static_cast<std::size_t>(t)];
    double ap =
        prev_t >= 0 ? alphas_cumprod_[static_cast<std::size_t>(prev_t)] : final_alpha_cumprod_;
    double sap = std::sqrt(ap), s1ap = std::sqrt(1 - ap);
    const double range = config_.clip_sample_range;
    // x0 = cx*x + cm*m and eps = ex*x + em*m for each prediction type (coefficients hoisted out of
    // the element loop: no sqrt per element).
    const double sa = std::sqrt(a), sb = std::sqrt(1 - a);
    double cx = 0, cm = 0, ex = 0, em = 0;
    switch (config_.prediction_type) {
      case PredictionType::kEpsilon:
        cx = 1 / sa, cm = -sb / sa, ex = 0, em = 1;
        break;
      case PredictionType::kVPrediction:
        cx = sa, cm = -sb, ex = sb, em = sa;
        break;
      case PredictionType::kSample:
        cx = 0, cm = 1, ex = 1 / sb, em = -sa / sb;
        break;
    }
    for (std::size_t i = 0; i < n; ++i) {
      double x = sample[i], m = mo[i];
      double x0 = cx * x + cm * m;
      double eps = ex * x + em * m;
      if (clip_) x0 = std::clamp(x0, -range, range);
      sample[i] = static_cast<float>(sap * x0 + s1ap * eps);
    }
    return Status::Ok();
  }

 private:
  double final_alpha_cumprod_ = 1.0;
  bool clip_ = true;
};

}  // namespace

std::unique_ptr<Scheduler> MakeDdim(const SchedulerConfig& c) {
  return std::make_unique<DdimScheduler>(c);
}

}  // namespace tg::sd::internal
