// PNDMScheduler (diffusers): pseudo linear multistep (PLMS), optionally preceded by the 12
// pseudo Runge–Kutta calls when skip_prk_steps is false. Mirrors diffusers' counter-driven state
// machine exactly, including the repeated second timestep of the PLMS warm-up.
#include <algorithm>
#include <cmath>
#include <deque>

#include "common/cpu_features.h"
#include "sd/scheduler_internal.h"

namespace tg::sd::internal {
namespace {

using common::Status;

// Coefficients of x_{t-δ} = sample_coeff·x − shift·ε / denom (ε from v: sa·v + sb·x).
struct PrevCoeffs {
  double sample_coeff, shift, denom, sa, sb;
};

// The steady-state PLMS update: the hot loop of an SD 1.5 generation. `mo` is the newest model
// output (float); it is stored into the history slot `mo_out` as double while the update reads
// the three older entries (already double: converting four float histories per element was the
// bottleneck, and float -> double is exact, so this changes no result). out may alias x.
struct Plms4Args {
  const float* x;
  const float* mo;
  const double* e2;
  const double* e3;
  const double* e4;
  double* mo_out;
  PrevCoeffs c;
  bool v_prediction;
  float* out;
  std::size_t n;
};

// Element arithmetic exactly as diffusers' order of operations, in double.
template <bool kV>
[[gnu::always_inline]] inline void Plms4Loop(const Plms4Args& a) {
  const float *x = a.x, *mo = a.mo;
  const double *e2 = a.e2, *e3 = a.e3, *e4 = a.e4;
  double* mo_out = a.mo_out;
  const PrevCoeffs c = a.c;
  float* out = a.out;
  for (std::size_t i = 0; i < a.n; ++i) {
    const double e1 = mo[i];
    mo_out[i] = e1;
    double e = (55.0 * e1 - 59.0 * e2[i] + 37.0 * e3[i] - 9.0 * e4[i]) / 24;
    if constexpr (kV) e = c.sa * e + c.sb * x[i];
    out[i] = static_cast<float>(c.sample_coeff * x[i] - c.shift * e / c.denom);
  }
}

void Plms4Baseline(const Plms4Args& a) {
  a.v_prediction ? Plms4Loop<true>(a) : Plms4Loop<false>(a);
}
#if defined(__x86_64__) || defined(__i386__)
// The same loop compiled for AVX2 (4 doubles per instruction instead of 2), chosen at run time.
// No FMA: contraction would change the rounding, so results stay bit-identical to the baseline.
__attribute__((target("avx2"))) void Plms4Avx2(const Plms4Args& a) {
  a.v_prediction ? Plms4Loop<true>(a) : Plms4Loop<false>(a);
}
#endif

void Plms4(const Plms4Args& a) {
#if defined(__x86_64__) || defined(__i386__)
  if (common::CpuHasAvx2()) return Plms4Avx2(a);
#endif
  Plms4Baseline(a);
}

// The other noise estimates (warm-up PLMS with fewer than four history entries, PRK), as functors
// so that both builds of the loop below inline them.
struct EpsOutput {  // the model output itself
  const float* mo;
  [[gnu::always_inline]] double operator()(std::size_t i) const { return mo[i]; }
};
struct EpsMean {  // second PLMS call: mean of the last two outputs
  const float* mo;
  const double* e1;
  [[gnu::always_inline]] double operator()(std::size_t i) const { return (mo[i] + e1[i]) / 2; }
};
struct EpsPlms2 {
  const double *e1, *e2;
  [[gnu::always_inline]] double operator()(std::size_t i) const {
    return (3.0 * e1[i] - e2[i]) / 2;
  }
};
struct EpsPlms3 {
  const double *e1, *e2, *e3;
  [[gnu::always_inline]] double operator()(std::size_t i) const {
    return (23.0 * e1[i] - 16.0 * e2[i] + 5.0 * e3[i]) / 12;
  }
};
struct EpsArray {  // PRK: precomputed
  const double* e;
  [[gnu::always_inline]] double operator()(std::size_t i) const { return e[i]; }
};

// x_{t-δ} from x_t (PNDM paper, eq. 9), element-wise (out may alias x), with ε = eps(i).
template <bool kV, typename Eps>
[[gnu::always_inline]] inline void PrevLoop(const float* x, Eps eps, const PrevCoeffs& c,
                                            float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    double e = eps(i);
    if constexpr (kV) e = c.sa * e + c.sb * x[i];
    out[i] = static_cast<float>(c.sample_coeff * x[i] - c.shift * e / c.denom);
  }
}
template <typename Eps>
void PrevBaseline(const float* x, Eps eps, const PrevCoeffs& c, bool v, float* out, std::size_t n) {
  v ? PrevLoop<true>(x, eps, c, out, n) : PrevLoop<false>(x, eps, c, out, n);
}
#if defined(__x86_64__) || defined(__i386__)
template <typename Eps>
__attribute__((target("avx2"))) void PrevAvx2(const float* x, Eps eps, const PrevCoeffs& c, bool v,
                                              float* out, std::size_t n) {
  v ? PrevLoop<true>(x, eps, c, out, n) : PrevLoop<false>(x, eps, c, out, n);
}
#endif
template <typename Eps>
void Prev(const float* x, Eps eps, const PrevCoeffs& c, bool v, float* out, std::size_t n) {
#if defined(__x86_64__) || defined(__i386__)
  if (common::CpuHasAvx2()) return PrevAvx2(x, eps, c, v, out, n);
#endif
  PrevBaseline(x, eps, c, v, out, n);
}

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
    // History buffers go back to the spare pool (not freed), so a Reserve survives SetTimesteps.
    while (!ets_.empty()) {
      spare_.push_back(std::move(ets_.front()));
      ets_.pop_front();
    }
    cur_sample_.clear();
    cur_model_output_.clear();
  }

  void ReserveState(std::size_t n) override {
    while (ets_.size() + spare_.size() < 4) spare_.emplace_back();
    for (auto& b : spare_) b.resize(n);  // value-initialised: every page touched now
    for (auto* v : {&cur_sample_, &x_scratch_}) {
      if (v->capacity() < n) {
        v->resize(n);  // touch the pages; clear() keeps them and keeps "no stored sample"
        v->clear();
      }
    }
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
  PrevCoeffs Coeffs(long t, long prev_t) const {
    double a = alphas_cumprod_[static_cast<std::size_t>(t)];
    double ap =
        prev_t >= 0 ? alphas_cumprod_[static_cast<std::size_t>(prev_t)] : final_alpha_cumprod_;
    double b = 1 - a, bp = 1 - ap;
    return {std::sqrt(ap / a), ap - a, a * std::sqrt(bp) + std::sqrt(a * b * ap), std::sqrt(a),
            std::sqrt(b)};
  }

  // x_{t-δ} from x_t, element-wise (out may alias x). `eps(i)` yields the (double) noise
  // estimate of element i, so the PLMS combination is fused into this one pass instead of being
  // stored first; the arithmetic per element is unchanged.
  template <typename Eps>
  void PrevSample(const float* x, long t, long prev_t, Eps eps, float* out, std::size_t n) const {
    Prev(x, eps, Coeffs(t, prev_t), config_.prediction_type == PredictionType::kVPrediction, out,
         n);
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
    PrevSample(x_copy.data(), tt, prev_t, EpsArray{eps.data()}, sample, n);
    return Status::Ok();
  }

  Status StepPlms(const float* mo, int counter, long t, float* sample, std::size_t n) {
    long prev_t = t - ratio_;
    if (counter != 1) {
      std::vector<double> slot;
      while (ets_.size() > 3) {
        slot = std::move(ets_.front());  // recycle the oldest buffer
        ets_.pop_front();
      }
      if (slot.empty() && !spare_.empty()) {
        slot = std::move(spare_.back());  // a reserved (already touched) buffer
        spare_.pop_back();
      }
      slot.resize(n);
      if (ets_.size() == 3) {
        // Steady state: one fused pass stores the new output and updates the sample.
        ets_.push_back(std::move(slot));
        Plms4({sample, mo, ets_[2].data(), ets_[1].data(), ets_[0].data(), ets_[3].data(),
               Coeffs(t, prev_t), config_.prediction_type == PredictionType::kVPrediction, sample,
               n});
        return Status::Ok();
      }
      std::copy(mo, mo + n, slot.begin());
      ets_.push_back(std::move(slot));
    } else {
      prev_t = t;
      t = t + ratio_;
    }
    const float* x = sample;
    std::vector<float>& x_store = x_scratch_;
    const std::size_t k = ets_.size();
    // PrevSample reads x and the history and writes `sample` element by element, so in-place is
    // safe. The eps expressions are diffusers' PLMS combinations, evaluated in double.
    if (k == 1 && counter == 0) {
      cur_sample_.assign(sample, sample + n);
      PrevSample(x, t, prev_t, EpsOutput{mo}, sample, n);
    } else if (k == 1 && counter == 1) {
      x_store.swap(cur_sample_);
      cur_sample_.clear();
      x = x_store.data();
      const double* e1 = ets_.back().data();
      PrevSample(x, t, prev_t, EpsMean{mo, e1}, sample, n);
    } else if (k == 2) {
      const double *e1 = ets_[k - 1].data(), *e2 = ets_[k - 2].data();
      PrevSample(x, t, prev_t, EpsPlms2{e1, e2}, sample, n);
    } else {
      // k == 3 (k == 4 took the fused path above).
      const double *e1 = ets_[k - 1].data(), *e2 = ets_[k - 2].data(), *e3 = ets_[k - 3].data();
      PrevSample(x, t, prev_t, EpsPlms3{e1, e2, e3}, sample, n);
    }
    return Status::Ok();
  }

  double final_alpha_cumprod_ = 1.0;
  long ratio_ = 1;
  std::size_t prk_count_ = 0;
  std::vector<std::vector<double>> spare_;  // reserved history buffers not in use yet
  std::deque<std::vector<double>> ets_;     // model outputs (exact as double), newest last
  std::vector<float> cur_sample_;
  std::vector<double> cur_model_output_;
  std::vector<float> x_scratch_;
};

}  // namespace

std::unique_ptr<Scheduler> MakePndm(const SchedulerConfig& c) {
  return std::make_unique<PndmScheduler>(c);
}

}  // namespace tg::sd::internal
