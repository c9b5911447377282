// The memory model's fit, estimate and calibration (sd/memory_model.h).
#include "sd/memory_model.h"

#include <malloc.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>

namespace tg::sd {

using common::Result;
using common::Status;

double ActivationFit::Bytes(std::int64_t rows, std::int64_t latent_pixels) const {
  const double r = static_cast<double>(rows), t = static_cast<double>(latent_pixels);
  return c0 + r * (c1 * t + c2 * t * t);
}

namespace {

// Solves the k x k system a·x = b in place (Gaussian elimination, partial pivoting); false when
// singular.
template <std::size_t N>
bool Solve(std::array<std::array<double, N>, N> a, std::array<double, N> b, std::size_t k,
           std::array<double, N>* x) {
  for (std::size_t c = 0; c < k; ++c) {
    std::size_t p = c;
    for (std::size_t r = c + 1; r < k; ++r) {
      if (std::fabs(a[r][c]) > std::fabs(a[p][c])) p = r;
    }
    if (std::fabs(a[p][c]) < 1e-12) return false;
    std::swap(a[p], a[c]);
    std::swap(b[p], b[c]);
    for (std::size_t r = c + 1; r < k; ++r) {
      const double f = a[r][c] / a[c][c];
      for (std::size_t j = c; j < k; ++j) a[r][j] -= f * a[c][j];
      b[r] -= f * b[c];
    }
  }
  for (std::size_t c = k; c-- > 0;) {
    double s = b[c];
    for (std::size_t j = c + 1; j < k; ++j) s -= a[c][j] * (*x)[j];
    (*x)[c] = s / a[c][c];
  }
  return true;
}

}  // namespace

ActivationFit FitActivations(std::span<const ActivationSample> samples) {
  constexpr std::size_t kTerms = 3;
  if (samples.empty()) return {};
  // Features 1, r·T, r·T², each scaled to at most 1 so the normal equations stay well
  // conditioned (T² reaches 1e8 and more).
  std::vector<std::array<double, kTerms>> f;
  std::array<double, kTerms> scale{1.0, 1.0, 1.0};
  for (const auto& s : samples) {
    const double r = static_cast<double>(s.rows), t = static_cast<double>(s.latent_pixels);
    f.push_back({1.0, r * t, r * t * t});
    for (std::size_t j = 0; j < kTerms; ++j) scale[j] = std::max(scale[j], f.back()[j]);
  }
  for (auto& row : f) {
    for (std::size_t j = 0; j < kTerms; ++j) row[j] /= scale[j];
  }
  ActivationFit best;
  double best_err = std::numeric_limits<double>::infinity();
  for (unsigned mask = 1; mask < (1u << kTerms); ++mask) {
    std::vector<std::size_t> cols;
    for (std::size_t j = 0; j < kTerms; ++j) {
      if (mask & (1u << j)) cols.push_back(j);
    }
    if (cols.size() > samples.size()) continue;
    std::array<std::array<double, kTerms>, kTerms> ata{};
    std::array<double, kTerms> atb{}, x{};
    for (std::size_t i = 0; i < samples.size(); ++i) {
      for (std::size_t a = 0; a < cols.size(); ++a) {
        atb[a] += f[i][cols[a]] * samples[i].bytes;
        for (std::size_t b = 0; b < cols.size(); ++b) ata[a][b] += f[i][cols[a]] * f[i][cols[b]];
      }
    }
    if (!Solve(ata, atb, cols.size(), &x)) continue;
    if (std::any_of(x.begin(), x.begin() + static_cast<long>(cols.size()),
                    [](double v) { return v < 0.0; })) {
      continue;
    }
    std::array<double, kTerms> c{};
    for (std::size_t a = 0; a < cols.size(); ++a) c[cols[a]] = x[a];
    double err = 0.0;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      double p = 0.0;
      for (std::size_t j = 0; j < kTerms; ++j) p += c[j] * f[i][j];
      err += (p - samples[i].bytes) * (p - samples[i].bytes);
    }
    if (err < best_err) {
      best_err = err;
      best = ActivationFit{c[0] / scale[0], c[1] / scale[1], c[2] / scale[2]};
    }
  }
  return best;
}

JobEstimate SdMemoryModel::Estimate(const ImageJob& job) const {
  const std::int64_t lh = job.height / 8, lw = job.width / 8;
  const std::int64_t pixels = static_cast<std::int64_t>(job.width) * job.height;
  JobEstimate e;
  e.unet_bytes = std::llround(unet_.Bytes(job.images * (job.cfg ? 2 : 1), lh * lw));
  if (job.vae_tiled) {
    // One tile's activations (the fit at its latent size) plus the decoded tiles kept for the
    // blend (overlap 25%: 1/0.75² of the image), the blended float image and its RGB8 copy.
    const std::int64_t tile = std::min<std::int64_t>(lh, 64) * std::min<std::int64_t>(lw, 64);
    e.vae_bytes = std::llround(vae_.Bytes(1, tile) + 12.0 * pixels / 0.5625 + 15.0 * pixels);
  } else {
    e.vae_bytes = std::llround(vae_.Bytes(1, lh * lw));
  }
  // Per image: the RGB8 image (3 bytes a pixel), its PNG (at most ~3 bytes a pixel for these
  // images) and the response's Base64 of it (4/3 of the PNG).
  e.host_bytes = static_cast<std::int64_t>(job.images) * pixels * 10;
  e.job_bytes = std::max(e.unet_bytes, e.vae_bytes + e.host_bytes);
  e.admit_bytes = std::llround(static_cast<double>(e.job_bytes) * (1.0 + kEstimateMargin));
  return e;
}

bool ChooseVaeTiling(const SdMemoryModel& model, ImageJob job, std::int64_t available_bytes) {
  if (static_cast<std::int64_t>(job.width) * job.height > kVaeTileAutoPixels) return true;
  job.vae_tiled = false;
  const JobEstimate whole = model.Estimate(job);
  if (whole.admit_bytes <= available_bytes) return false;
  job.vae_tiled = true;
  return model.Estimate(job).job_bytes < whole.job_bytes;
}

JobEstimate EstimateWithTiling(const SdMemoryModel& model, ImageJob job,
                               std::int64_t available_bytes, bool* vae_tiled) {
  job.vae_tiled = ChooseVaeTiling(model, job, available_bytes);
  if (vae_tiled) *vae_tiled = job.vae_tiled;
  return model.Estimate(job);
}

int MaxImagesThatFit(const SdMemoryModel& model, ImageJob job, std::int64_t available_bytes,
                     int cap) {
  int fit = 0;
  for (int n = 1; n <= cap; ++n) {
    job.images = n;
    if (EstimateWithTiling(model, job, available_bytes).admit_bytes > available_bytes) break;
    fit = n;
  }
  return fit;
}

std::optional<std::pair<int, int>> LargestSizeThatFits(const SdMemoryModel& model, double aspect,
                                                       int images, bool cfg,
                                                       std::int64_t available_bytes) {
  for (int h = kMaxSide; h >= kMinSide; h -= 8) {
    const int w = static_cast<int>(std::lround(h * aspect / 8.0)) * 8;
    if (w < kMinSide || w > kMaxSide) continue;
    ImageJob j{w, h, images, cfg, false};
    if (EstimateWithTiling(model, j, available_bytes).admit_bytes <= available_bytes) {
      return std::make_pair(w, h);
    }
  }
  return std::nullopt;
}

Status CheckOneImageFits(const SdMemoryModel& model, ImageJob job, const MemoryBudget& budget,
                         std::int64_t held_bytes) {
  job.images = 1;
  const std::int64_t available = budget.bytes - held_bytes;
  const JobEstimate e = EstimateWithTiling(model, job, available);
  if (e.admit_bytes <= available) return Status::Ok();
  auto size = [](int w, int h) { return std::to_string(w) + "x" + std::to_string(h); };
  std::string m = "size " + size(job.width, job.height) + " needs an estimated " +
                  FormatBytes(e.job_bytes) + " for one image (UNet " + FormatBytes(e.unet_bytes) +
                  ", VAE decode " + FormatBytes(e.vae_bytes) + "; " + FormatBytes(e.admit_bytes) +
                  " counted with the estimate's margin) but the memory budget is " +
                  FormatBytes(budget.bytes) + " (" + budget.source + "), " +
                  FormatBytes(held_bytes) + " of it held by the loaded models";
  const double aspect = static_cast<double>(job.width) / job.height;
  const auto same = LargestSizeThatFits(model, aspect, 1, job.cfg, available);
  const auto square = LargestSizeThatFits(model, 1.0, 1, job.cfg, available);
  if (!same && !square) return Status::InvalidArg(m + "; no size fits");
  m += "; the largest size that fits is ";
  if (same) m += size(same->first, same->second) + " at this aspect ratio";
  if (same && square && *same != *square) m += ", ";
  if (square && (!same || *same != *square)) m += size(square->first, square->second) + " square";
  return Status::InvalidArg(m);
}

std::int64_t RssMeter::Now() { return probe::CurrentRssBytes().value_or(0); }
bool RssMeter::ResetPeak() { return probe::ResetPeakRss(); }
std::int64_t RssMeter::Peak() { return probe::PeakRssBytes().value_or(0); }

Result<SdMemoryModel> CalibrateSdMemory(const Pipeline& pipeline, MemoryMeter& meter) {
  GenerateRequest r;
  r.prompt = "memory calibration";
  r.steps = 1;
  r.encode_png = false;
  r.vae_tiling = VaeTiling::kOff;
  r.width = r.height = kMinSide;
  // A first run pays the lazy costs (thread pools, prepacked weights) that every later run shares:
  // they belong to the base, not to a job.
  if (auto w = pipeline.Generate(r); !w.ok()) {
    if (w.status().code() != common::StatusCode::kInvalidArg) return w.status();
  }
  malloc_trim(0);
  const std::int64_t base = meter.Now();
  struct Point {
    int side, images;
  };
  // Ascending in expected peak, so that a meter whose peak cannot be reset still reads each run's.
  constexpr Point kPoints[] = {{256, 1}, {256, 2}, {384, 1}, {512, 1}};
  std::vector<ActivationSample> unet, vae;
  for (const Point& pt : kPoints) {
    r.width = r.height = pt.side;
    r.batch = pt.images;
    r.seeds.clear();
    // Return the previous run's freed pages first: glibc keeps them in its arenas, this run would
    // reuse them without growing the resident set, and its activations would read as near zero
    // (seen: a 512 MiB budget said 1192² fits when four servers calibrated at once).
    malloc_trim(0);
    const std::int64_t before = meter.Now();
    meter.ResetPeak();
    std::int64_t unet_peak = 0;
    auto cb = [&](const StepProgress&) {
      unet_peak = std::max(unet_peak, meter.Peak());
      meter.ResetPeak();
      return true;
    };
    auto out = pipeline.Generate(r, cb);
    if (!out.ok()) {
      // A UNet exported at fixed sizes refuses the others: calibrate on those it takes.
      if (out.status().code() == common::StatusCode::kInvalidArg) continue;
      return out.status().WithPrefix("memory calibration at " + std::to_string(pt.side) + "²");
    }
    const std::int64_t vae_peak = meter.Peak();
    const std::int64_t t = static_cast<std::int64_t>(pt.side / 8) * (pt.side / 8);
    const std::int64_t rows = static_cast<std::int64_t>(pt.images) * (out->guidance > 1.0 ? 2 : 1);
    unet.push_back({rows, t, static_cast<double>(std::max<std::int64_t>(0, unet_peak - before))});
    if (pt.images == 1) {
      vae.push_back({1, t, static_cast<double>(std::max<std::int64_t>(0, vae_peak - before))});
    }
  }
  if (unet.empty()) {
    return Status::InvalidArg(
        "memory calibration: the UNet takes none of the sizes 256², 384², "
        "512²");
  }
  return SdMemoryModel(FitActivations(unet), FitActivations(vae), base);
}

Result<MemoryBudget> ResolveBudget(std::optional<std::int64_t> flag, const probe::HostMemory& host,
                                   std::optional<std::int64_t> gpu_free,
                                   std::optional<std::int64_t> gpu_held, std::int64_t rss) {
  auto reserve = [](std::int64_t total) {
    return std::max(kMinReserveBytes,
                    static_cast<std::int64_t>(static_cast<double>(total) * kReserveFraction));
  };
  MemoryBudget b;
  if (flag) {
    b.bytes = *flag;
    b.source = "--memory-budget";
    b.device = gpu_free.has_value();
    return b;
  }
  if (gpu_free) {
    const std::int64_t total = *gpu_free + gpu_held.value_or(0);
    b.reserve = reserve(total);
    b.bytes = total - b.reserve;
    b.source = "GPU memory free after the sessions loaded + held by this process, less " +
               FormatBytes(b.reserve);
    b.device = true;
    return b;
  }
  if (host.cgroup_limit_bytes) {
    b.reserve = reserve(*host.cgroup_limit_bytes);
    b.bytes = *host.cgroup_limit_bytes - b.reserve;
    b.source = "cgroup " + host.cgroup_limit_file + " " + FormatBytes(*host.cgroup_limit_bytes) +
               ", less " + FormatBytes(b.reserve);
    return b;
  }
  if (host.mem_available_bytes) {
    const std::int64_t total = *host.mem_available_bytes + rss;
    b.reserve = reserve(total);
    b.bytes = total - b.reserve;
    b.source = "MemAvailable " + FormatBytes(*host.mem_available_bytes) + " + resident " +
               FormatBytes(rss) + ", less " + FormatBytes(b.reserve);
    return b;
  }
  return Status::InvalidArg("no memory budget: no cgroup memory limit and no MemAvailable (" +
                            host.unavailable + "); give --memory-budget");
}

std::string FormatBytes(std::int64_t bytes) {
  char buf[48];
  const double v = static_cast<double>(bytes);
  if (std::llabs(bytes) >= (std::int64_t{1} << 30)) {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", v / static_cast<double>(1 << 30));
  } else {
    std::snprintf(buf, sizeof(buf), "%.0f MiB", v / static_cast<double>(1 << 20));
  }
  return buf;
}

}  // namespace tg::sd
