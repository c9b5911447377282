// PNDMScheduler (diffusers): pseudo linear multistep (PLMS), optionally preceded by the 12
// pseudo Runge–Kutta calls when skip_prk_steps is false. Mirrors diffusers' counter-driven state
// machine exactly, including the repeated second timestep of the PLMS warm-up.
#include <cmath>
#include <deque>

#include "sd/scheduler_internal.h"

namespace tg::sd::internal {
namespace {

using common::Status;

class PndmScheduler final : public Scheduler {
 public:
  explicit PndmScheduler(const SchedulerConfig& c) : Scheduler(c, TimestepSpacing::kLeading) {
    final_alpha_cumprod_ = config_.set_alpha_to_one.value_or(false) ? 1.0 : alphas_cumprod_[0];
  }
  std::string_view name() const override { return "pndm"; }

 protected:
  Status ComputeSchedule(int n) override {
    const int train = config_.num_train_timesteps;
    std::vector<long> base;  // ascending
    switch (spacing_) {
      case TimestepSpacing::kLinspace:
        for (double v : Linspace(0, train - 1, n)) base.push_back(std::lround(RoundHalfEven(v)));
        break;
      case TimestepSpacing::kLeading:
        for (int i = 0; i < n; ++i)
          base.push_back(static_cast<long>(i) * (train / n) + config_.steps_offset);
        break;
      case TimestepSpacing::kTrailing: {
        for (double v : ArangeDown(train, 0, -static_cast<double>(train) / n)) {
          base.insert(base.begin(), std::lround(RoundHalfEven(v)) - 1);
        }
        break;
      }
    }
    std::vector<long> ts;
    prk_count_ = 0;
    if (config_.skip_prk_steps) {
      std::vector<long> plms(base.begin(), base.end() - 1);
      if (base.size() >= 2) plms.push_back(base[base.size() - 2]);
      plms.push_back(base.back());
      ts.assign(plms.rbegin(), plms.rend());
    } else {
      if (n < 4) {
        return Status::InvalidArg("scheduler pndm with skip_prk_steps false (" + config_.source +
                                  ") needs at least 4 steps, got " + std::to_string(n));
      }
      const long half = train / n / 2;
      std::vector<long> a;  // _timesteps[-4:].repeat(2) + tile([0, half], 4)
      for (std::size_t i = base.size() - 4; i < base.size(); ++i) {
        a.push_back(base[i]);
        a.push_back(base[i] + half);
      }
      a.pop_back();  // [:-1]
      std::vector<long> b;
      for (long v : a) {
        b.push_back(v);
        b.push_back(v);
      }
      std::vector<long> prk(b.begin() + 1, b.end() - 1);
      ts.assign(prk.rbegin(), prk.rend());
      prk_count_ = ts.size();
      for (auto it = base.rbegin() + 3; it != base.rend(); ++it) ts.push_back(*it);
    }
    for (long t : ts) {
      if (t < 0 || t >= train) {
        return Status::InvalidArg(
            "scheduler pndm: " + std::to_string(n) + " steps with steps_offset " +
            std::to_string(config_.steps_offset) + " give timestep " + std::to_string(t) +
            ", outside 0.." + std::to_string(train - 1) + " (" + config_.source + ")");
      }
      timesteps_.push_back(static_cast<double>(t));
      double a = alphas_cumprod_[static_cast<std::size_t>(t)];
      sigmas_.push_back(std::sqrt((1 - a) / a));
    }
    ratio_ = train / n;
    init_noise_sigma_ = 1.0;
    return Status::Ok();
  }

  void ResetState() override {
    ets_.clear();
    cur_sample_.clear();
    cur_model_output_.clear();
  }

  Status StepImpl(const float* mo, int counter, float* sample, std::size_t n,
                  std::span<Rng>) override {
    auto t = static_cast<long>(timesteps_[static_cast<std::size_t>(counter)]);
    if (!config_.skip_prk_steps && static_cast<std::size_t>(counter) < prk_count_) {
      return StepPrk(mo, counter, t, sample, n);
    }
    return StepPlms(mo, counter, t, sample, n);
  }

 private:
  // x_{t-δ} from x_t (PNDM paper, eq. 9), element-wise in place on `out`.
  void PrevSample(const float* x, long t, long prev_t, const std::vector<double>& eps, float* out,
                  std::size_t n) const {
    double a = alphas_cumprod_[static_cast<std::size_t>(t)];
    double ap =
        prev_t >= 0 ? alphas_cumprod_[static_cast<std::size_t>(prev_t)] : final_alpha_cumprod_;
    double b = 1 - a, bp = 1 - ap;
    double sample_coeff = std::sqrt(ap / a);
    double denom = a * std::sqrt(bp) + std::sqrt(a * b * ap);
    bool v = config_.prediction_type == PredictionType::kVPrediction;
    double sa = std::sqrt(a), sb = std::sqrt(b);
    for (std::size_t i = 0; i < n; ++i) {
      double e = v ? sa * eps[i] + sb * x[i] : eps[i];
      out[i] = static_cast<float>(sample_coeff * x[i] - (ap - a) * e / denom);
    }
  }

  Status StepPrk(const float* mo, int counter, long t, float* sample, std::size_t n) {
    const long half = config_.num_train_timesteps / num_inference_steps_ / 2;
    long diff = (counter % 2) ? 0 : half;
    long prev_t = t - diff;
    long tt = static_cast<long>(timesteps_[static_cast<std::size_t>(counter / 4 * 4)]);
    if (cur_model_output_.empty()) cur_model_output_.assign(n, 0.0);
    std::vector<double> eps(mo, mo + n);
    switch (counter % 4) {
      case 0:
        for (std::size_t i = 0; i < n; ++i) cur_model_output_[i] += mo[i] / 6.0;
        ets_.emplace_back(mo, mo + n);
        cur_sample_.assign(sample, sample + n);
        break;
      case 1:
      case 2:
        for (std::size_t i = 0; i < n; ++i) cur_model_output_[i] += mo[i] / 3.0;
        break;
      case 3:
        for (std::size_t i = 0; i < n; ++i) eps[i] = cur_model_output_[i] + mo[i] / 6.0;
        cur_model_output_.assign(n, 0.0);
        break;
    }
    const float* x = cur_sample_.empty() ? sample : cur_sample_.data();
    std::vector<float> x_copy(x, x + n);
    PrevSample(x_copy.data(), tt, prev_t, eps, sample, n);
    return Status::Ok();
  }

  Status StepPlms(const float* mo, int counter, long t, float* sample, std::size_t n) {
    long prev_t = t - ratio_;
    if (counter != 1) {
      std::vector<float> slot;
      while (ets_.size() > 3) {
        slot = std::move(ets_.front());  // recycle the oldest buffer
        ets_.pop_front();
      }
      slot.assign(mo, mo + n);
      ets_.push_back(std::move(slot));
    } else {
      prev_t = t;
      t = t + ratio_;
    }
    std::vector<double>& eps = eps_scratch_;
    eps.resize(n);
    const float* x = sample;
    std::vector<float>& x_store = x_scratch_;
    const std::size_t k = ets_.size();
    if (k == 1 && counter == 0) {
      for (std::size_t i = 0; i < n; ++i) eps[i] = mo[i];
      cur_sample_.assign(sample, sample + n);
    } else if (k == 1 && counter == 1) {
      for (std::size_t i = 0; i < n; ++i)
        eps[i] = (mo[i] + static_cast<double>(ets_.back()[i])) / 2;
      x_store.swap(cur_sample_);
      cur_sample_.clear();
      x = x_store.data();
    } else if (k == 2) {
      const auto &e1 = ets_[k - 1], &e2 = ets_[k - 2];
      for (std::size_t i = 0; i < n; ++i) eps[i] = (3.0 * e1[i] - e2[i]) / 2;
    } else if (k == 3) {
      const auto &e1 = ets_[k - 1], &e2 = ets_[k - 2], &e3 = ets_[k - 3];
      for (std::size_t i = 0; i < n; ++i) eps[i] = (23.0 * e1[i] - 16.0 * e2[i] + 5.0 * e3[i]) / 12;
    } else {
      const auto &e1 = ets_[k - 1], &e2 = ets_[k - 2], &e3 = ets_[k - 3], &e4 = ets_[k - 4];
      for (std::size_t i = 0; i < n; ++i) {
        eps[i] = (55.0 * e1[i] - 59.0 * e2[i] + 37.0 * e3[i] - 9.0 * e4[i]) / 24;
      }
    }
    // PrevSample reads x and writes `sample` element by element, so in-place is safe.
    PrevSample(x, t, prev_t, eps, sample, n);
    return Status::Ok();
  }

  double final_alpha_cumprod_ = 1.0;
  long ratio_ = 1;
  std::size_t prk_count_ = 0;
  std::deque<std::vector<float>> ets_;
  std::vector<float> cur_sample_;
  std::vector<double> cur_model_output_;
  std::vector<double> eps_scratch_;
  std::vector<float> x_scratch_;
};

}  // namespace

std::unique_ptr<Scheduler> MakePndm(const SchedulerConfig& c) {
  return std::make_unique<PndmScheduler>(c);
}

}  // namespace tg::sd::internal
