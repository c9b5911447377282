// Internal helpers shared by the scheduler families (not part of the public API): numpy-exact
// versions of linspace/arange/round/interp and the sigma utilities diffusers uses, plus the
// constructors of each family. Stateless; thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "sd/scheduler.h"

namespace tg::sd::internal {

// np.linspace(start, stop, num) (endpoint included, last value exactly `stop`).
std::vector<double> Linspace(double start, double stop, int num);
// np.arange(start, stop, step) for a negative float step (the "trailing" spacing).
std::vector<double> ArangeDown(double start, double stop, double step);
// np.round (half to even).
double RoundHalfEven(double x);
// float32 round trip (diffusers keeps timesteps and sigmas as float32 tensors).
inline double F32(double x) { return static_cast<double>(static_cast<float>(x)); }
// np.interp(x, [0, 1, ..., fp.size()-1], fp).
double InterpIndex(double x, const std::vector<double>& fp);
// sqrt((1-ᾱ)/ᾱ) for every training timestep.
std::vector<double> TrainSigmas(const std::vector<double>& alphas_cumprod);
// diffusers' _sigma_to_t: fractional timestep of `sigma` by log-linear interpolation.
double SigmaToT(double sigma, const std::vector<double>& log_sigmas);
// Karras et al. (2022) ρ=7 schedule between sigma_max and sigma_min, `n` values.
std::vector<double> KarrasSigmas(double sigma_min, double sigma_max, int n);

// Timesteps for the Euler-family spacing rules (float, before float32 rounding), descending.
std::vector<double> SpacedTimesteps(TimestepSpacing spacing, int num_train, int n,
                                    int steps_offset);

// The interpolated sigma schedule of diffusers' Euler, Euler ancestral and LMS set_timesteps:
// spaced timesteps rounded to float32, sigmas = np.interp of the training sigmas at them; with
// `karras`, a Karras schedule between karras_min/karras_max (each defaulting to the interpolated
// range's end) whose timesteps come from SigmaToT; then `final_sigma` appended and every sigma
// rounded to float32. init_noise_sigma = max sigma (√(max²+1) for "leading" spacing).
struct SigmaSchedule {
  std::vector<double> timesteps;
  std::vector<double> sigmas;  // n + 1 values
  double init_noise_sigma = 1.0;
};
SigmaSchedule InterpolatedSigmaSchedule(const SchedulerConfig& config, TimestepSpacing spacing,
                                        const std::vector<double>& alphas_cumprod, int n,
                                        bool karras, std::optional<double> karras_min,
                                        std::optional<double> karras_max, double final_sigma);

std::unique_ptr<Scheduler> MakePndm(const SchedulerConfig& c);
std::unique_ptr<Scheduler> MakeDdim(const SchedulerConfig& c);
std::unique_ptr<Scheduler> MakeEuler(const SchedulerConfig& c);
std::unique_ptr<Scheduler> MakeEulerAncestral(const SchedulerConfig& c);
std::unique_ptr<Scheduler> MakeDpmpp2m(const SchedulerConfig& c);
std::unique_ptr<Scheduler> MakeLms(const SchedulerConfig& c);

}  // namespace tg::sd::internal
