// LMSDiscreteScheduler (diffusers): linear multistep of order 4 in sigma space. The LMS
// coefficients are integrals of Lagrange basis polynomials (degree <= 3) between consecutive
// sigmas; 4-point Gauss–Legendre integrates them exactly (diffusers uses scipy's quad).
#include <algorithm>
#include <cmath>
#include <deque>

#include "sd/scheduler_internal.h"

namespace tg::sd::internal {
namespace {

using common::Status;

class LmsScheduler final : public Scheduler {
 public:
  explicit LmsScheduler(const SchedulerConfig& c) : Scheduler(c, TimestepSpacing::kLinspace) {}
  std::string_view name() const override { return "lms"; }
  double ModelInputScale(int step_index) const override {
    double s = sigmas_[static_cast<std::size_t>(step_index)];
    return 1.0 / std::sqrt(s * s + 1);
  }

 protected:
  Status ComputeSchedule(int n) override {
    // LMS ignores sigma_min/sigma_max overrides (diffusers reads the interpolated range).
    SigmaSchedule sched =
        InterpolatedSigmaSchedule(config_, spacing_, alphas_cumprod_, n, config_.use_karras_sigmas,
                                  std::nullopt, std::nullopt, 0.0);
    timesteps_ = std::move(sched.timesteps);
    sigmas_ = std::move(sched.sigmas);
    init_noise_sigma_ = sched.init_noise_sigma;
    return Status::Ok();
  }

  void ResetState() override { derivatives_.clear(); }

  // ∫_{σ_t}^{σ_{t+1}} Π_{k≠cur} (τ - σ_{t-k}) / (σ_{t-cur} - σ_{t-k}) dτ
  double Coefficient(int order, int t, int cur) const {
    static constexpr double kNodes[4] = {-0.8611363115940526, -0.3399810435848563,
                                         0.3399810435848563, 0.8611363115940526};
    static constexpr double kWeights[4] = {0.3478548451374538, 0.6521451548625461,
                                           0.6521451548625461, 0.3478548451374538};
    auto s = [&](int idx) { return sigmas_[static_cast<std::size_t>(idx)]; };
    double a = s(t), b = s(t + 1);
    double half = (b - a) / 2, mid = (a + b) / 2, sum = 0;
    for (int q = 0; q < 4; ++q) {
      double tau = mid + half * kNodes[q];
      double prod = 1.0;
      for (int k = 0; k < order; ++k) {
        if (k == cur) continue;
        prod *= (tau - s(t - k)) / (s(t - cur) - s(t - k));
      }
      sum += kWeights[q] * prod;
    }
    return sum * half;
  }

  Status StepImpl(const float* mo, int i, float* sample, std::size_t n, std::span<Rng>) override {
    double sigma = sigmas_[static_cast<std::size_t>(i)];
    double cx = 1, cm = -sigma;
    if (config_.prediction_type == PredictionType::kVPrediction) {
      cx = 1 / (sigma * sigma + 1), cm = -sigma / std::sqrt(sigma * sigma + 1);
    } else if (config_.prediction_type == PredictionType::kSample) {
      cx = 0, cm = 1;
    }
    std::vector<float> d;
    if (derivatives_.size() >= 4) {  // reuse the oldest buffer
      d = std::move(derivatives_.front());
      derivatives_.pop_front();
    }
    d.resize(n);
    const double dx = (1 - cx) / sigma, dm = -cm / sigma;
    for (std::size_t k = 0; k < n; ++k) d[k] = static_cast<float>(dx * sample[k] + dm * mo[k]);
    derivatives_.push_back(std::move(d));
    const int order = std::min(i + 1, 4);
    double coeff[4] = {0, 0, 0, 0};
    for (int c = 0; c < order; ++c) coeff[c] = Coefficient(order, i, c);
    // coeff[c] pairs with the c-th most recent derivative.
    const std::size_t m = derivatives_.size();
    const float* d0 = derivatives_[m - 1].data();
    const float* d1 = order > 1 ? derivatives_[m - 2].data() : d0;
    const float* d2 = order > 2 ? derivatives_[m - 3].data() : d0;
    const float* d3 = order > 3 ? derivatives_[m - 4].data() : d0;
    for (std::size_t k = 0; k < n; ++k) {  // unused orders have coefficient 0
      sample[k] = static_cast<float>(sample[k] + coeff[0] * d0[k] + coeff[1] * d1[k] +
                                     coeff[2] * d2[k] + coeff[3] * d3[k]);
    }
    return Status::Ok();
  }

 private:
  std::deque<std::vector<float>> derivatives_;
};

}  // namespace

std::unique_ptr<Scheduler> MakeLms(const SchedulerConfig& c) {
  return std::make_unique<LmsScheduler>(c);
}

}  // namespace tg::sd::internal
