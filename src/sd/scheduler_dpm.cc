// DPMSolverMultistepScheduler (diffusers) as DPM-Solver++(2M): data-prediction (x0) form,
// second-order multistep, first-order on the first step and on the final step (the final σ is 0,
// where λ = +∞; the first-order formula reduces to x0 there, so no 0·∞ is ever evaluated).
// Works in x-space: init_noise_sigma = 1 and no input scaling.
#include <algorithm>
#include <cmath>

#include "sd/scheduler_internal.h"

namespace tg::sd::internal {
namespace {

using common::Status;

class DpmScheduler final : public Scheduler {
 public:
  explicit DpmScheduler(const SchedulerConfig& c) : Scheduler(c, TimestepSpacing::kLinspace) {}
  std::string_view name() const override {
    return config_.use_karras_sigmas ? "dpmpp_2m_karras" : "dpmpp_2m";
  }

 protected:
  Status ComputeSchedule(int n) override {
    const int train = config_.num_train_timesteps;
    // lambda_min_clipped: drop the noisiest timesteps whose λ is below the bound.
    int clipped = 0;
    {
      // searchsorted(flip(λ_t), bound): λ_t decreases with t, so flip(λ) ascends.
      std::vector<double> lam(alphas_cumprod_.size());
      for (std::size_t i = 0; i < lam.size(); ++i) {
        double a = alphas_cumprod_[i];
        lam[i] = std::log(std::sqrt(a)) - std::log(std::sqrt(1 - a));
      }
      std::reverse(lam.begin(), lam.end());
      clipped = static_cast<int>(
          std::lower_bound(lam.begin(), lam.end(), config_.lambda_min_clipped) - lam.begin());
    }
    const int last = train - clipped;
    if (last < 1) {
      return Status::InvalidArg(config_.source +
                                ": field 'lambda_min_clipped' leaves no timestep to sample");
    }
    std::vector<double> ts;
    switch (spacing_) {
      case TimestepSpacing::kLinspace: {
        std::vector<double> v = Linspace(0, last - 1, n + 1);
        for (int i = n; i >= 1; --i) ts.push_back(RoundHalfEven(v[i]));
        break;
      }
      case TimestepSpacing::kLeading: {
        int ratio = last / (n + 1);
        for (int i = n; i >= 1; --i) {
          ts.push_back(static_cast<double>(i) * ratio + config_.steps_offset);
        }
        break;
      }
      case TimestepSpacing::kTrailing:
        for (double v : ArangeDown(last, 0, -static_cast<double>(train) / n)) {
          ts.push_back(RoundHalfEven(v) - 1);
        }
        break;
    }
    std::vector<double> train_sigmas = TrainSigmas(alphas_cumprod_);
    std::vector<double> sig;
    if (config_.use_karras_sigmas) {
      std::vector<double> log_sigmas(train_sigmas.size());
      for (std::size_t i = 0; i < log_sigmas.size(); ++i) log_sigmas[i] = std::log(train_sigmas[i]);
      double smin = config_.sigma_min.value_or(train_sigmas.front());
      double smax = config_.sigma_max.value_or(train_sigmas.back());
      sig = KarrasSigmas(smin, smax, n);
      ts.clear();
      for (double s : sig) {
        double t = SigmaToT(s, log_sigmas);
        // diffusers rounds except for the cosine schedule, then casts to int64 (truncation).
        if (config_.beta_schedule != BetaSchedule::kSquaredCosCapV2) t = RoundHalfEven(t);
        ts.push_back(std::trunc(t));
      }
    } else {
      for (double t : ts) {
        if (t < 0 || t >= train) {
          return Status::InvalidArg("scheduler dpmpp_2m: " + std::to_string(n) +
                                    " steps give timestep " + std::to_string(static_cast<long>(t)) +
                                    ", outside 0.." + std::to_string(train - 1) + " (" +
                                    config_.source + ")");
        }
        sig.push_back(train_sigmas[static_cast<std::size_t>(t)]);
      }
    }
    sig.push_back(config_.final_sigmas_zero ? 0.0 : train_sigmas.front());
    for (double& s : sig) s = F32(s);
    timesteps_ = std::move(ts);
    sigmas_ = std::move(sig);
    init_noise_sigma_ = 1.0;
    return Status::Ok();
  }

  void ResetState() override {
    prev_x0_.clear();
    last_x0_.clear();
    lower_order_nums_ = 0;
  }

  static void AlphaSigma(double sigma, double* alpha_t, double* sigma_t) {
    *alpha_t = 1.0 / std::sqrt(sigma * sigma + 1);
    *sigma_t = sigma * *alpha_t;
  }

  Status StepImpl(const float* mo, int i, float* sample, std::size_t n, std::span<Rng>) override {
    const int len = num_steps();
    const bool final_first_order =
        (i == len - 1) && (config_.euler_at_final || (config_.lower_order_final && len < 15) ||
                           config_.final_sigmas_zero);
    const auto idx = static_cast<std::size_t>(i);
    double alpha_s0, sigma_s0, alpha_t, sigma_t;
    AlphaSigma(sigmas_[idx], &alpha_s0, &sigma_s0);
    AlphaSigma(sigmas_[idx + 1], &alpha_t, &sigma_t);
    // Model output → x0 prediction.
    double cx = 0, cm = 1;
    switch (config_.prediction_type) {
      case PredictionType::kEpsilon:
        cx = 1 / alpha_s0, cm = -sigma_s0 / alpha_s0;
        break;
      case PredictionType::kVPrediction:
        cx = alpha_s0, cm = -sigma_s0;
        break;
      case PredictionType::kSample:
        break;
    }
    std::swap(prev_x0_, last_x0_);
    last_x0_.resize(n);
    for (std::size_t k = 0; k < n; ++k)
      last_x0_[k] = static_cast<float>(cx * sample[k] + cm * mo[k]);

    const bool first_order = lower_order_nums_ < 1 || final_first_order || sigmas_[idx + 1] == 0;
    const double lambda_s0 = std::log(alpha_s0) - std::log(sigma_s0);
    if (first_order) {
      if (sigmas_[idx + 1] == 0) {
        // σ_t = 0: x_t = x0 exactly (limit of the formula; avoids log(0)).
        for (std::size_t k = 0; k < n; ++k) sample[k] = last_x0_[k];
      } else {
        double lambda_t = std::log(alpha_t) - std::log(sigma_t);
        double h = lambda_t - lambda_s0;
        double a = sigma_t / sigma_s0, b = -alpha_t * (std::exp(-h) - 1.0);
        for (std::size_t k = 0; k < n; ++k) {
          sample[k] = static_cast<float>(a * sample[k] + b * last_x0_[k]);
        }
      }
    } else {
      double alpha_s1, sigma_s1;
      AlphaSigma(sigmas_[idx - 1], &alpha_s1, &sigma_s1);
      double lambda_t = std::log(alpha_t) - std::log(sigma_t);
      double lambda_s1 = std::log(alpha_s1) - std::log(sigma_s1);
      double h = lambda_t - lambda_s0, h0 = lambda_s0 - lambda_s1;
      double r0 = h0 / h;
      double a = sigma_t / sigma_s0;
      double e = std::exp(-h) - 1.0;
      double c0 = -alpha_t * e;                                                        // × D0
      double c1 = config_.solver_heun ? alpha_t * (e / h + 1.0) : -0.5 * alpha_t * e;  // × D1
      for (std::size_t k = 0; k < n; ++k) {
        double m0 = last_x0_[k], m1 = prev_x0_[k];
        double d1 = (m0 - m1) / r0;
        sample[k] = static_cast<float>(a * sample[k] + c0 * m0 + c1 * d1);
      }
    }
    if (lower_order_nums_ < 2) ++lower_order_nums_;
    return Status::Ok();
  }

 private:
  std::vector<float> prev_x0_, last_x0_;
  int lower_order_nums_ = 0;
};

}  // namespace

std::unique_ptr<Scheduler> MakeDpmpp2m(const SchedulerConfig& c) {
  return std::make_unique<DpmScheduler>(c);
}

}  // namespace tg::sd::internal
