// Scheduler configuration, the shared base class, numpy-exact helpers and the factory.
// The family implementations live in scheduler_<family>.cc.
#include "sd/scheduler.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <numbers>

#include "common/config.h"
#include "common/file_util.h"
#include "common/json_writer.h"
#include "common/strings.h"
#include "sd/config_lines.h"
#include "sd/scheduler_internal.h"

namespace tg::sd {

using common::Json;
using common::Result;
using common::Status;

std::string_view BetaScheduleName(BetaSchedule b) {
  switch (b) {
    case BetaSchedule::kLinear:
      return "linear";
    case BetaSchedule::kScaledLinear:
      return "scaled_linear";
    case BetaSchedule::kSquaredCosCapV2:
      return "squaredcos_cap_v2";
  }
  return "?";
}

std::string_view TimestepSpacingName(TimestepSpacing t) {
  switch (t) {
    case TimestepSpacing::kLeading:
      return "leading";
    case TimestepSpacing::kTrailing:
      return "trailing";
    case TimestepSpacing::kLinspace:
      return "linspace";
  }
  return "?";
}

std::string_view PredictionTypeName(PredictionType p) {
  switch (p) {
    case PredictionType::kEpsilon:
      return "epsilon";
    case PredictionType::kVPrediction:
      return "v_prediction";
    case PredictionType::kSample:
      return "sample";
  }
  return "?";
}

namespace {

// Python's json module writes -inf/inf/nan as bare -Infinity/Infinity/NaN (diffusers does for
// lambda_min_clipped); nlohmann rejects them, so they are quoted before parsing.
std::string QuoteNonFiniteLiterals(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\' && i + 1 < text.size()) {
        out.push_back(text[++i]);
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      out.push_back(c);
      continue;
    }
    bool matched = false;
    for (std::string_view lit : {"-Infinity", "Infinity", "NaN"}) {
      if (text.compare(i, lit.size(), lit) == 0) {
        out += '"';
        out += lit;
        out += '"';
        i += lit.size() - 1;
        matched = true;
        break;
      }
    }
    if (!matched) out.push_back(c);
  }
  return out;
}

class FieldReader {
 public:
  FieldReader(const Json& j, std::string source) : j_(j), source_(std::move(source)) {}

  bool Has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }

  Status Bad(const char* key, const std::string& required) const {
    return Status::InvalidArg(source_ + ": field '" + key + "': found " +
                              common::WriteJson(j_[key], -1, common::JsonNotice::kNone) +
                              ", required " + required);
  }
  Status Int(const char* key, int lo, int hi, int* out) const {
    if (!Has(key)) return Status::Ok();
    const Json& v = j_[key];
    if (!v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi) {
      return Bad(key, "an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
    }
    *out = static_cast<int>(v.get<std::int64_t>());
    return Status::Ok();
  }
  Status Number(const char* key, double lo, double hi, double* out) const {
    if (!Has(key)) return Status::Ok();
    const Json& v = j_[key];
    if (!v.is_number() || !(v.get<double>() >= lo && v.get<double>() <= hi)) {
      return Bad(key, "a number from " + Fmt(lo) + " to " + Fmt(hi));
    }
    *out = v.get<double>();
    return Status::Ok();
  }
  Status Bool(const char* key, bool* out) const {
    if (!Has(key)) return Status::Ok();
    if (!j_[key].is_boolean()) return Bad(key, "true or false");
    *out = j_[key].get<bool>();
    return Status::Ok();
  }
  Status Enum(const char* key, const std::vector<std::string>& allowed, std::string* out) const {
    if (!Has(key)) return Status::Ok();
    const Json& v = j_[key];
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + ("\"" + a + "\"");
    if (!v.is_string() ||
        std::find(allowed.begin(), allowed.end(), v.get<std::string>()) == allowed.end()) {
      return Bad(key, "one of " + list);
    }
    *out = v.get<std::string>();
    return Status::Ok();
  }
  // A feature flag this build does not implement: accepted only when false/null.
  Status MustBeOff(const char* key) const {
    if (!Has(key)) return Status::Ok();
    if (!j_[key].is_boolean()) return Bad(key, "true or false");
    if (j_[key].get<bool>()) {
      return Status::Unsupported(source_ + ": field '" + key +
                                 "': found true; this option is not implemented (required false)");
    }
    return Status::Ok();
  }

 private:
  static std::string Fmt(double d) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g", d);
    return buf;
  }
  const Json& j_;
  std::string source_;
};

// The training noise schedule and what the model predicts.
Status ReadNoiseSchedule(const Json& j, const FieldReader& r, const std::string& source,
                         SchedulerConfig* c) {
  std::string s;
  if (r.Has("_class_name")) {
    if (!j["_class_name"].is_string()) return r.Bad("_class_name", "a string");
    c->class_name = j["_class_name"].get<std::string>();
  }
  TG_RETURN_IF_ERROR(r.Int("num_train_timesteps", 1, 100000, &c->num_train_timesteps));
  TG_RETURN_IF_ERROR(r.Number("beta_start", 1e-12, 0.999, &c->beta_start));
  TG_RETURN_IF_ERROR(r.Number("beta_end", 1e-12, 0.999, &c->beta_end));
  if (r.Has("beta_schedule")) {
    TG_RETURN_IF_ERROR(
        r.Enum("beta_schedule", {"linear", "scaled_linear", "squaredcos_cap_v2"}, &s));
    c->beta_schedule = s == "linear"          ? BetaSchedule::kLinear
                       : s == "scaled_linear" ? BetaSchedule::kScaledLinear
                                              : BetaSchedule::kSquaredCosCapV2;
  }
  if (r.Has("trained_betas")) {
    const Json& tb = j["trained_betas"];
    bool ok = tb.is_array() && tb.size() == static_cast<std::size_t>(c->num_train_timesteps);
    for (std::size_t i = 0; ok && i < tb.size(); ++i) {
      ok = tb[i].is_number() && tb[i].get<double>() > 0 && tb[i].get<double>() < 1;
      if (ok) c->trained_betas.push_back(tb[i].get<double>());
    }
    if (!ok) {
      return Status::InvalidArg(source + ": field 'trained_betas': required null or an array of " +
                                std::to_string(c->num_train_timesteps) +
                                " numbers in (0, 1) (num_train_timesteps)");
    }
  }
  if (r.Has("timestep_spacing")) {
    TG_RETURN_IF_ERROR(r.Enum("timestep_spacing", {"leading", "trailing", "linspace"}, &s));
    c->timestep_spacing = s == "leading"    ? TimestepSpacing::kLeading
                          : s == "trailing" ? TimestepSpacing::kTrailing
                                            : TimestepSpacing::kLinspace;
  }
  TG_RETURN_IF_ERROR(r.Int("steps_offset", 0, 1000, &c->steps_offset));
  if (r.Has("prediction_type")) {
    TG_RETURN_IF_ERROR(r.Enum("prediction_type", {"epsilon", "v_prediction", "sample"}, &s));
    c->prediction_type = s == "epsilon"        ? PredictionType::kEpsilon
                         : s == "v_prediction" ? PredictionType::kVPrediction
                                               : PredictionType::kSample;
  }
  if (r.Has("set_alpha_to_one")) {
    bool b = false;
    TG_RETURN_IF_ERROR(r.Bool("set_alpha_to_one", &b));
    c->set_alpha_to_one = b;
  }
  return Status::Ok();
}

// Sampler options: clipping, sigmas, solver order and type.
Status ReadSamplerOptions(const Json& j, const FieldReader& r, SchedulerConfig* c) {
  std::string s;
  c->clip_sample_set = r.Has("clip_sample");
  TG_RETURN_IF_ERROR(r.Bool("clip_sample", &c->clip_sample));
  TG_RETURN_IF_ERROR(r.Number("clip_sample_range", 1e-6, 1e6, &c->clip_sample_range));
  TG_RETURN_IF_ERROR(r.Bool("skip_prk_steps", &c->skip_prk_steps));
  TG_RETURN_IF_ERROR(r.Bool("use_karras_sigmas", &c->use_karras_sigmas));
  TG_RETURN_IF_ERROR(r.Bool("lower_order_final", &c->lower_order_final));
  TG_RETURN_IF_ERROR(r.Bool("euler_at_final", &c->euler_at_final));
  if (r.Has("final_sigmas_type")) {
    TG_RETURN_IF_ERROR(r.Enum("final_sigmas_type", {"zero", "sigma_min"}, &s));
    c->final_sigmas_zero = s == "zero";
  }
  if (r.Has("interpolation_type")) {
    TG_RETURN_IF_ERROR(r.Enum("interpolation_type", {"linear", "log_linear"}, &s));
    c->interpolation_linear = s == "linear";
  }
  if (r.Has("solver_type")) {
    // diffusers maps the UniPC/DEIS names to midpoint.
    TG_RETURN_IF_ERROR(r.Enum("solver_type", {"midpoint", "heun", "logrho", "bh1", "bh2"}, &s));
    c->solver_heun = s == "heun";
  }
  for (const char* key : {"sigma_min", "sigma_max"}) {
    if (r.Has(key)) {
      double v = 0;
      TG_RETURN_IF_ERROR(r.Number(key, 1e-9, 1e9, &v));
      (std::string_view(key) == "sigma_min" ? c->sigma_min : c->sigma_max) = v;
    }
  }
  if (r.Has("lambda_min_clipped")) {
    const Json& v = j["lambda_min_clipped"];
    if (v.is_string() && v.get<std::string>() == "-Infinity") {
      c->lambda_min_clipped = -std::numeric_limits<double>::infinity();
    } else if (v.is_number()) {
      c->lambda_min_clipped = v.get<double>();
    } else {
      return r.Bad("lambda_min_clipped", "a number or -Infinity");
    }
  }
  return Status::Ok();
}

// Options this build does not implement are refused by name rather than ignored.
Status RefuseUnsupportedOptions(const Json& j, const FieldReader& r, const std::string& source,
                                SchedulerConfig* c) {
  std::string s;
  for (const char* key :
       {"thresholding", "rescale_betas_zero_snr", "use_exponential_sigmas", "use_beta_sigmas",
        "use_lu_lambdas", "use_flow_sigmas", "use_dynamic_shifting"}) {
    TG_RETURN_IF_ERROR(r.MustBeOff(key));
  }
  if (r.Has("timestep_type")) {
    TG_RETURN_IF_ERROR(r.Enum("timestep_type", {"discrete", "continuous"}, &s));
    if (s == "continuous" && c->prediction_type == PredictionType::kVPrediction) {
      return Status::Unsupported(source +
                                 ": field 'timestep_type': found \"continuous\" with "
                                 "v_prediction; not implemented (required \"discrete\")");
    }
  }
  if (r.Has("variance_type")) {
    return Status::Unsupported(
        source + ": field 'variance_type': found " +
        common::WriteJson(j["variance_type"], -1, common::JsonNotice::kNone) +
        "; learned variance is not implemented (required null)");
  }
  return Status::Ok();
}

}  // namespace

Result<SchedulerConfig> ParseSchedulerConfig(const std::string& json_text,
                                             const std::string& source) {
  TG_ASSIGN_OR_RETURN(Json j, common::ParseJson(QuoteNonFiniteLiterals(json_text), source));
  if (!j.is_object()) {
    return Status::InvalidArg(source + ": found " + std::string(j.type_name()) +
                              ", required a JSON object (scheduler_config.json)");
  }
  SchedulerConfig c;
  c.source = source;
  FieldReader r(j, source);
  TG_RETURN_IF_ERROR(ReadNoiseSchedule(j, r, source, &c));
  TG_RETURN_IF_ERROR(ReadSamplerOptions(j, r, &c));
  TG_RETURN_IF_ERROR(RefuseUnsupportedOptions(j, r, source, &c));
  return c;
}

Result<SchedulerConfig> LoadSchedulerConfig(const std::string& path) {
  TG_ASSIGN_OR_RETURN(std::string text, common::ReadFileLimited(path, kMaxComponentConfigBytes));
  auto c = ParseSchedulerConfig(text, path);
  if (!c.ok()) return WithFieldLine(c.status(), path, text);
  return c;
}

std::vector<double> MakeBetas(const SchedulerConfig& c) {
  const int n = c.num_train_timesteps;
  if (!c.trained_betas.empty()) return c.trained_betas;
  std::vector<double> betas(static_cast<std::size_t>(n));
  switch (c.beta_schedule) {
    case BetaSchedule::kLinear:
      betas = internal::Linspace(c.beta_start, c.beta_end, n);
      break;
    case BetaSchedule::kScaledLinear: {
      betas = internal::Linspace(std::sqrt(c.beta_start), std::sqrt(c.beta_end), n);
      for (double& b : betas) b *= b;
      break;
    }
    case BetaSchedule::kSquaredCosCapV2: {
      auto alpha_bar = [](double t) {
        double v = std::cos((t + 0.008) / 1.008 * std::numbers::pi / 2);
        return v * v;
      };
      for (int i = 0; i < n; ++i) {
        double t1 = static_cast<double>(i) / n, t2 = static_cast<double>(i + 1) / n;
        betas[i] = std::min(1.0 - alpha_bar(t2) / alpha_bar(t1), 0.999);
      }
      break;
    }
  }
  return betas;
}

std::vector<double> AlphasCumprod(const SchedulerConfig& c) {
  std::vector<double> betas = MakeBetas(c);
  std::vector<double> acp(betas.size());
  double prod = 1.0;
  for (std::size_t i = 0; i < betas.size(); ++i) {
    prod *= 1.0 - betas[i];
    acp[i] = prod;
  }
  return acp;
}

double PredictX0(PredictionType type, double model_output, double sample, double a) {
  switch (type) {
    case PredictionType::kEpsilon:
      return (sample - std::sqrt(1.0 - a) * model_output) / std::sqrt(a);
    case PredictionType::kVPrediction:
      return std::sqrt(a) * sample - std::sqrt(1.0 - a) * model_output;
    case PredictionType::kSample:
      return model_output;
  }
  return 0;
}

double PredictEpsilon(PredictionType type, double model_output, double sample, double a) {
  switch (type) {
    case PredictionType::kEpsilon:
      return model_output;
    case PredictionType::kVPrediction:
      return std::sqrt(a) * model_output + std::sqrt(1.0 - a) * sample;
    case PredictionType::kSample:
      return (sample - std::sqrt(a) * model_output) / std::sqrt(1.0 - a);
  }
  return 0;
}

double PredictX0Sigma(PredictionType type, double model_output, double sample, double sigma) {
  switch (type) {
    case PredictionType::kEpsilon:
      return sample - sigma * model_output;
    case PredictionType::kVPrediction:
      return model_output * (-sigma / std::sqrt(sigma * sigma + 1.0)) +
             sample / (sigma * sigma + 1.0);
    case PredictionType::kSample:
      return model_output;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Base class.

Scheduler::Scheduler(SchedulerConfig config, TimestepSpacing default_spacing)
    : config_(std::move(config)),
      spacing_(config_.timestep_spacing.value_or(default_spacing)),
      alphas_cumprod_(AlphasCumprod(config_)) {}

Status Scheduler::SetTimesteps(int num_inference_steps) {
  if (num_inference_steps < 1 || num_inference_steps > config_.num_train_timesteps) {
    return Status::InvalidArg(
        "scheduler " + std::string(name()) + ": steps " + std::to_string(num_inference_steps) +
        " is out of range (required 1 to " + std::to_string(config_.num_train_timesteps) +
        ", the num_train_timesteps of " + config_.source + ")");
  }
  timesteps_.clear();
  sigmas_.clear();
  next_step_ = 0;
  n_ = 0;
  ResetState();
  TG_RETURN_IF_ERROR(ComputeSchedule(num_inference_steps));
  num_inference_steps_ = num_inference_steps;
  return Status::Ok();
}

void Scheduler::ScaleModelInput(float* x, std::size_t n, int step_index) const {
  double s = ModelInputScale(step_index);
  if (s == 1.0) return;
  auto f = static_cast<float>(s);
  for (std::size_t i = 0; i < n; ++i) x[i] *= f;
}

void Scheduler::ScaleModelInputTo(const float* x, float* out, std::size_t n, int step_index) const {
  double s = ModelInputScale(step_index);
  if (s == 1.0) {
    std::memcpy(out, x, n * sizeof(float));
    return;
  }
  auto f = static_cast<float>(s);
  for (std::size_t i = 0; i < n; ++i) out[i] = x[i] * f;
}

void Scheduler::Reserve(std::size_t n) {
  model_output_buffer_.resize(n);
  ReserveState(n);
}

float* Scheduler::ModelOutputBuffer(std::size_t n) {
  model_output_buffer_.resize(n);
  return model_output_buffer_.data();
}

void Scheduler::DrawNoise(std::span<Rng> noise, float* out, std::size_t n) {
  const std::size_t per_image = n / noise.size();
  for (std::size_t k = 0; k < noise.size(); ++k) {
    noise[k].FillGaussian(out + k * per_image, per_image);
  }
}

Status Scheduler::Step(const float* model_output, int step_index, float* sample, std::size_t n,
                       std::span<Rng> noise, const float* drawn_noise) {
  // The name is only spelled out on the error paths (this runs once per denoising step).
  auto who = [this] { return "scheduler " + std::string(name()); };
  if (num_inference_steps_ == 0) {
    return Status::Internal(who() + ": Step called before SetTimesteps");
  }
  if (step_index != next_step_ || step_index >= num_steps()) {
    return Status::Internal(
        who() + ": Step called with step index " + std::to_string(step_index) + ", required " +
        (next_step_ < num_steps() ? std::to_string(next_step_) : "no further step") +
        " (steps run in order 0.." + std::to_string(num_steps() - 1) + ")");
  }
  if (model_output == nullptr || sample == nullptr || n == 0) {
    return Status::InvalidArg(who() + ": empty model output or sample buffer");
  }
  if (n_ != 0 && n != n_) {
    return Status::InvalidArg(who() + ": sample size changed from " + std::to_string(n_) + " to " +
                              std::to_string(n) + " floats between steps");
  }
  if (NeedsNoise() && drawn_noise == nullptr && (noise.empty() || n % noise.size() != 0)) {
    return Status::InvalidArg(who() + ": needs one noise generator per image (got " +
                              std::to_string(noise.size()) + " for " + std::to_string(n) +
                              " floats; required a non-zero divisor of the sample size)");
  }
  n_ = n;
  drawn_noise_ = drawn_noise;
  Status st = StepImpl(model_output, step_index, sample, n, noise);
  drawn_noise_ = nullptr;
  TG_RETURN_IF_ERROR(st);
  ++next_step_;
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// numpy-exact helpers.

namespace internal {

std::vector<double> Linspace(double start, double stop, int num) {
  std::vector<double> y(static_cast<std::size_t>(std::max(num, 0)));
  if (num <= 0) return y;
  if (num == 1) {
    y[0] = start;
    return y;
  }
  double step = (stop - start) / (num - 1);
  for (int i = 0; i < num; ++i) y[i] = i * step + start;
  y[num - 1] = stop;
  return y;
}

std::vector<double> ArangeDown(double start, double stop, double step) {
  // numpy: length = ceil((stop - start) / step); values start + i * step.
  auto len = static_cast<long>(std::ceil((stop - start) / step));
  std::vector<double> y;
  for (long i = 0; i < len; ++i) y.push_back(start + static_cast<double>(i) * step);
  return y;
}

double RoundHalfEven(double x) { return std::nearbyint(x); }

double InterpIndex(double x, const std::vector<double>& fp) {
  const auto n = static_cast<double>(fp.size());
  if (x <= 0) return fp.front();
  if (x >= n - 1) return fp.back();
  auto i = static_cast<std::size_t>(std::floor(x));
  double w = x - static_cast<double>(i);
  if (w == 0) return fp[i];
  return fp[i] + (fp[i + 1] - fp[i]) * w;
}

std::vector<double> TrainSigmas(const std::vector<double>& acp) {
  std::vector<double> s(acp.size());
  for (std::size_t i = 0; i < acp.size(); ++i) s[i] = std::sqrt((1.0 - acp[i]) / acp[i]);
  return s;
}

SigmaSchedule InterpolatedSigmaSchedule(const SchedulerConfig& config, TimestepSpacing spacing,
                                        const std::vector<double>& alphas_cumprod, int n,
                                        bool karras, std::optional<double> karras_min,
                                        std::optional<double> karras_max, double final_sigma) {
  SigmaSchedule out;
  std::vector<double> ts =
      SpacedTimesteps(spacing, config.num_train_timesteps, n, config.steps_offset);
  for (double& t : ts) t = F32(t);
  std::vector<double> train_sigmas = TrainSigmas(alphas_cumprod);
  std::vector<double> sig;
  for (double t : ts) sig.push_back(InterpIndex(t, train_sigmas));
  if (karras) {
    std::vector<double> log_sigmas(train_sigmas.size());
    for (std::size_t i = 0; i < log_sigmas.size(); ++i) log_sigmas[i] = std::log(train_sigmas[i]);
    sig = KarrasSigmas(karras_min.value_or(sig.back()), karras_max.value_or(sig.front()), n);
    ts.clear();
    for (double s : sig) ts.push_back(F32(SigmaToT(s, log_sigmas)));
  }
  sig.push_back(final_sigma);
  for (double& s : sig) s = F32(s);
  const double max_sigma = *std::max_element(sig.begin(), sig.end());
  out.init_noise_sigma =
      spacing == TimestepSpacing::kLeading ? F32(std::sqrt(max_sigma * max_sigma + 1)) : max_sigma;
  out.timesteps = std::move(ts);
  out.sigmas = std::move(sig);
  return out;
}

double SigmaToT(double sigma, const std::vector<double>& log_sigmas) {
  double log_sigma = std::log(std::max(sigma, 1e-10));
  // low_idx = the last index whose log sigma is <= log_sigma (0 if none), clipped to size-2.
  std::size_t low = 0;
  for (std::size_t i = 0; i < log_sigmas.size(); ++i) {
    if (log_sigma - log_sigmas[i] >= 0) low = i;
  }
  low = std::min(low, log_sigmas.size() - 2);
  double lo = log_sigmas[low], hi = log_sigmas[low + 1];
  double w = std::clamp((lo - log_sigma) / (lo - hi), 0.0, 1.0);
  return (1.0 - w) * static_cast<double>(low) + w * static_cast<double>(low + 1);
}

std::vector<double> KarrasSigmas(double sigma_min, double sigma_max, int n) {
  constexpr double kRho = 7.0;
  std::vector<double> ramp = Linspace(0, 1, n);
  double min_inv = std::pow(sigma_min, 1 / kRho), max_inv = std::pow(sigma_max, 1 / kRho);
  for (double& r : ramp) r = std::pow(max_inv + r * (min_inv - max_inv), kRho);
  return ramp;
}

std::vector<double> SpacedTimesteps(TimestepSpacing spacing, int num_train, int n,
                                    int steps_offset) {
  std::vector<double> t;
  switch (spacing) {
    case TimestepSpacing::kLinspace:
      t = Linspace(0, num_train - 1, n);
      std::reverse(t.begin(), t.end());
      break;
    case TimestepSpacing::kLeading: {
      int ratio = num_train / n;
      for (int i = n - 1; i >= 0; --i) t.push_back(static_cast<double>(i) * ratio + steps_offset);
      break;
    }
    case TimestepSpacing::kTrailing: {
      double ratio = static_cast<double>(num_train) / n;
      for (double v : ArangeDown(num_train, 0, -ratio)) t.push_back(RoundHalfEven(v) - 1);
      break;
    }
  }
  return t;
}

}  // namespace internal

// ---------------------------------------------------------------------------------------------
// Factory.

const std::vector<std::string>& SchedulerNames() {
  static const std::vector<std::string> kNames = {
      "pndm", "ddim", "euler", "euler_a", "dpmpp_2m", "dpmpp_2m_karras", "lms"};
  return kNames;
}

Result<std::unique_ptr<Scheduler>> CreateScheduler(std::string_view name,
                                                   const SchedulerConfig& config) {
  std::string key = common::Lower(name);
  std::replace(key.begin(), key.end(), '-', '_');
  const bool from_config = key.empty() || key == "default";
  if (from_config) {
    if (config.class_name.empty()) {
      return Status::InvalidArg(config.source +
                                ": no _class_name to pick the default scheduler from; choose one "
                                "of pndm, ddim, euler, euler_a, dpmpp_2m, dpmpp_2m_karras, lms");
    }
    key = common::Lower(config.class_name);
  }
  SchedulerConfig c = config;
  std::unique_ptr<Scheduler> s;
  if (key == "pndm" || key == "plms" || key == "pndmscheduler") {
    if (c.prediction_type == PredictionType::kSample) {
      return Status::Unsupported(c.source +
                                 ": field 'prediction_type': found \"sample\"; PNDM supports "
                                 "\"epsilon\" and \"v_prediction\"");
    }
    s = internal::MakePndm(c);
  } else if (key == "ddim" || key == "ddimscheduler") {
    s = internal::MakeDdim(c);
  } else if (key == "euler" || key == "eulerdiscretescheduler") {
    s = internal::MakeEuler(c);
  } else if (key == "euler_a" || key == "euler_ancestral" ||
             key == "eulerancestraldiscretescheduler") {
    if (c.prediction_type == PredictionType::kSample) {
      return Status::Unsupported(c.source +
                                 ": field 'prediction_type': found \"sample\"; Euler ancestral "
                                 "supports \"epsilon\" and \"v_prediction\"");
    }
    s = internal::MakeEulerAncestral(c);
  } else if (key == "dpmpp_2m" || key == "dpm++2m" || key == "dpm++_2m" ||
             key == "dpmsolvermultistepscheduler") {
    s = internal::MakeDpmpp2m(c);
  } else if (key == "dpmpp_2m_karras" || key == "dpm++2m_karras" || key == "dpm++_2m_karras") {
    c.use_karras_sigmas = true;
    s = internal::MakeDpmpp2m(c);
  } else if (key == "lms" || key == "lmsdiscretescheduler") {
    s = internal::MakeLms(c);
  } else {
    std::string list;
    for (const auto& n : SchedulerNames()) list += (list.empty() ? "" : ", ") + n;
    if (from_config) {
      // The name came from the file, not the command line: say which file and field.
      return Status::InvalidArg(config.source + ": field '_class_name': unknown scheduler class '" +
                                config.class_name.substr(0, 80) + "' (supported: " + list +
                                " or their diffusers class names; or choose one with --scheduler)");
    }
    return Status::InvalidArg("unknown scheduler '" + std::string(name).substr(0, 80) +
                              "' (valid: " + list +
                              ", or a diffusers class name such as PNDMScheduler)");
  }
  return s;
}

}  // namespace tg::sd
