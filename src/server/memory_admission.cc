#include "server/memory_admission.h"

#include <malloc.h>

#include <algorithm>

#include "common/strings.h"

namespace tg::server {

using common::Json;
using common::Status;

MemoryAdmission::Reservation& MemoryAdmission::Reservation::operator=(Reservation&& o) noexcept {
  if (this != &o) {
    if (owner_) owner_->Release(bytes_);
    owner_ = o.owner_;
    bytes_ = o.bytes_;
    o.owner_ = nullptr;
  }
  return *this;
}

MemoryAdmission::Reservation::~Reservation() {
  if (owner_) owner_->Release(bytes_);
}

void MemoryAdmission::Configure(sd::MemoryBudget budget, std::int64_t held_bytes) {
  std::lock_guard<std::mutex> l(mu_);
  budget_ = std::move(budget);
  held_ = held_bytes;
  configured_.store(true, std::memory_order_release);
}

void MemoryAdmission::SetModel(const std::string& name, sd::SdMemoryModel model) {
  std::lock_guard<std::mutex> l(mu_);
  models_[name] = model;
}

std::optional<sd::JobEstimate> MemoryAdmission::Estimate(const std::string& model,
                                                         const sd::ImageJob& job,
                                                         bool* vae_tiled) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = models_.find(model);
  if (!configured() || it == models_.end()) return std::nullopt;
  return sd::EstimateWithTiling(it->second, job, AvailableLocked(), vae_tiled);
}

Status MemoryAdmission::Check(const std::string& model, const sd::ImageJob& job) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = models_.find(model);
  if (!configured() || it == models_.end()) return Status::Ok();
  return sd::CheckOneImageFits(it->second, job, budget_, held_);
}

int MemoryAdmission::PartImages(const std::string& model, sd::ImageJob job, int cap) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = models_.find(model);
  if (!configured() || it == models_.end()) return cap;
  return std::max(1, sd::MaxImagesThatFit(it->second, job, AvailableLocked(), cap));
}

void MemoryAdmission::SetOnnxModel(const std::string& name,
                                   std::shared_ptr<OnnxMemoryModel> model) {
  std::lock_guard<std::mutex> l(mu_);
  onnx_models_[name] = std::move(model);
}

std::shared_ptr<OnnxMemoryModel> MemoryAdmission::FindOnnx(const std::string& model) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = onnx_models_.find(model);
  return it == onnx_models_.end() ? nullptr : it->second;
}

std::optional<runtime::RunMemoryEstimate> MemoryAdmission::EstimateOnnx(
    const std::string& model, const InputShapes& shapes, std::int64_t input_bytes) const {
  std::shared_ptr<OnnxMemoryModel> m = FindOnnx(model);
  if (!m || !configured()) return std::nullopt;
  return m->Estimate(shapes, input_bytes);  // shape inference outside mu_
}

Status MemoryAdmission::CheckOnnx(const std::string& model, const InputShapes& shapes,
                                  const runtime::RunMemoryEstimate& e) const {
  std::lock_guard<std::mutex> l(mu_);
  if (!configured() || e.peak_bytes <= AvailableLocked()) return Status::Ok();
  return Status::InvalidArg(
      "model '" + model + "': this request needs an estimated " + BytesText(e.peak_bytes) +
      " of memory (inputs " + BytesText(e.input_bytes) + ", outputs " + BytesText(e.output_bytes) +
      ", activations at their peak " +
      BytesText(std::max<std::int64_t>(0, e.peak_bytes - e.input_bytes - e.output_bytes)) +
      ", by ONNX shape inference at " + ShapesText(shapes) +
      (e.complete ? "" : "; a lower bound: " + e.incomplete_reason) +
      ") but the memory budget is " + BytesText(budget_.bytes) + " (" + budget_.source + "), " +
      BytesText(held_) + " of it held by the loaded models: one run may use at most " +
      BytesText(AvailableLocked()) + "; send smaller inputs or raise --memory-budget");
}

void MemoryAdmission::NoteOnnxAdmitted(Metrics& m, const std::string& model,
                                       const runtime::RunMemoryEstimate& e) const {
  std::shared_ptr<OnnxMemoryModel> om = FindOnnx(model);
  if (!om) return;
  om->NoteAdmitted(e);
  m.Observe("truegreen_memory_job_estimate_bytes", {{"model", model}},
            static_cast<double>(e.peak_bytes));
}

std::int64_t MemoryAdmission::available_bytes() const {
  std::lock_guard<std::mutex> l(mu_);
  return configured() ? AvailableLocked() : 0;
}

std::optional<MemoryAdmission::Reservation> MemoryAdmission::Reserve(
    std::int64_t bytes, Clock::time_point deadline, const std::atomic<bool>* cancel) {
  std::unique_lock<std::mutex> l(mu_);
  // A job alone always starts (Check proved one image fits; a part never holds more than fit).
  while (running_ > 0 && configured() && in_use_ + bytes > AvailableLocked()) {
    if ((cancel && cancel->load()) || Clock::now() >= deadline) return std::nullopt;
    // Woken by a release; the bounded wait rechecks the deadline and the cancel flag.
    cv_.wait_until(l, std::min(deadline, Clock::now() + std::chrono::milliseconds(50)));
  }
  in_use_ += bytes;
  ++running_;
  last_estimate_ = bytes;
  return Reservation(this, bytes);
}

void MemoryAdmission::Release(std::int64_t bytes) {
  bool idle = false;
  {
    std::lock_guard<std::mutex> l(mu_);
    in_use_ -= bytes;
    idle = --running_ == 0;
  }
  // The budget counts what the models held at calibration; without this, glibc keeps each run's
  // freed pages in its arenas and the resident set creeps up run by run (measured: 355 -> 441 MB
  // over five 568x568 n:2 runs of the small pipeline), so a later run that fits its estimate could
  // still push the process past the budget. Returned once no run is in flight, so a trim never
  // takes pages from under a running job. Small runs (a KServe request on a small model, served
  // thousands a second) skip it: their pages are few and a trim walks every arena.
  constexpr std::int64_t kTrimAfterBytes = std::int64_t{16} << 20;
  if (idle && configured() && bytes >= kTrimAfterBytes) malloc_trim(0);
  cv_.notify_all();
}

void MemoryAdmission::CountFailure(Metrics& m, const std::string& model) const {
  m.Add("truegreen_memory_failures_total", {{"model", model}});
}

Json MemoryAdmission::ToJson() const {
  std::lock_guard<std::mutex> l(mu_);
  Json j = {{"configured", configured()}};
  if (!configured()) return j;
  j["budget_bytes"] = budget_.bytes;
  j["budget_source"] = budget_.source;
  j["reserve_bytes"] = budget_.reserve;
  j["device"] = budget_.device;
  j["held_bytes"] = held_;
  j["available_bytes"] = AvailableLocked();
  j["in_use_bytes"] = in_use_;
  j["running_jobs"] = running_;
  j["last_job_estimate_bytes"] = last_estimate_;
  Json models = Json::object();
  for (const auto& [name, m] : models_) {
    Json per_batch = Json::object();
    for (int n = 1; n <= sd::kMaxBatch; ++n) {
      const auto fit = sd::LargestSizeThatFits(m, 1.0, n, true, AvailableLocked());
      per_batch[std::to_string(n)] =
          fit ? Json(std::to_string(fit->first) + "x" + std::to_string(fit->second))
              : Json(nullptr);
    }
    const sd::JobEstimate e512 =
        sd::EstimateWithTiling(m, {512, 512, 1, true, false}, AvailableLocked());
    models[name] = {{"largest_square_size_per_batch", per_batch},
                    {"estimate_512x512_one_image_bytes", e512.job_bytes},
                    {"fit",
                     {{"unet", {m.unet().c0, m.unet().c1, m.unet().c2}},
                      {"vae", {m.vae().c0, m.vae().c1, m.vae().c2}}}}};
  }
  j["models"] = models;
  Json onnx = Json::object();
  for (const auto& [name, m] : onnx_models_) onnx[name] = m->ToJson();
  j["onnx_models"] = onnx;
  return j;
}

void MemoryAdmission::Declare(Metrics& m) {
  m.DeclareGauge("truegreen_memory_budget_bytes", "Memory the replica may use (the budget)");
  m.DeclareGauge("truegreen_memory_held_bytes", "Memory held by the loaded models, before jobs");
  m.DeclareGauge("truegreen_memory_in_use_bytes", "Estimated memory of the jobs running now");
  m.DeclareGauge("truegreen_memory_running_jobs", "Jobs holding a memory reservation");
  m.DeclareHistogram("truegreen_memory_job_estimate_bytes", "Estimated peak memory per job run",
                     {64.0 * (1 << 20), 256.0 * (1 << 20), 1024.0 * (1 << 20), 4096.0 * (1 << 20),
                      16384.0 * (1 << 20), 65536.0 * (1 << 20)});
  m.DeclareGauge("truegreen_memory_largest_square_side_pixels",
                 "Largest square side that fits, per model and batch size");
  m.DeclareGauge("truegreen_memory_onnx_last_estimate_bytes",
                 "Estimate of the last admitted KServe run, per generic model");
  m.DeclareGauge("truegreen_memory_onnx_max_estimate_bytes",
                 "Largest estimate of an admitted KServe run, per generic model");
  m.DeclareCounter("truegreen_memory_refused_total",
                   "Requests refused: one image (or one KServe run) cannot fit");
  m.DeclareCounter("truegreen_memory_split_total", "Batches split into parts that fit");
  m.DeclareCounter("truegreen_memory_failures_total", "Jobs that failed to allocate memory");
}

void MemoryAdmission::Export(Metrics& m) const {
  std::lock_guard<std::mutex> l(mu_);
  if (!configured()) return;
  m.Set("truegreen_memory_budget_bytes", {}, static_cast<double>(budget_.bytes));
  m.Set("truegreen_memory_held_bytes", {}, static_cast<double>(held_));
  m.Set("truegreen_memory_in_use_bytes", {}, static_cast<double>(in_use_));
  m.Set("truegreen_memory_running_jobs", {}, running_);
  for (const auto& [name, model] : models_) {
    for (int n = 1; n <= sd::kMaxBatch; ++n) {
      const auto fit = sd::LargestSizeThatFits(model, 1.0, n, true, AvailableLocked());
      m.Set("truegreen_memory_largest_square_side_pixels",
            {{"model", name}, {"batch", std::to_string(n)}}, fit ? fit->first : 0);
    }
  }
  for (const auto& [name, om] : onnx_models_) {
    m.Set("truegreen_memory_onnx_last_estimate_bytes", {{"model", name}},
          static_cast<double>(om->last_bytes()));
    m.Set("truegreen_memory_onnx_max_estimate_bytes", {{"model", name}},
          static_cast<double>(om->max_bytes()));
  }
}

bool IsMemoryFailure(const Status& s) {
  const std::string m = common::Lower(s.message());
  for (const char* k : {"failed to allocate memory", "bad_alloc", "out of memory",
                        "cudaerrormemoryallocation", "cuda_error_out_of_memory"}) {
    if (m.find(k) != std::string::npos) return true;
  }
  return false;
}

}  // namespace tg::server
