// Admission by memory (server/ only): the replica's budget (sd::ResolveBudget), each image
// model's calibrated memory model (sd/memory_model.h), and the memory reserved by the jobs
// running now.
//
//   Check       before a request queues: one image of its size must fit in the budget less what
//               the loaded models hold, else INVALID_ARG with sd::CheckOneImageFits' message
//               (each API's 400).
//   PartImages  how many images of that size one run may hold; a larger `n` or merged batch is
//               split into runs of at most that many.
//   Reserve     before a run starts: waits until the estimates of the running jobs plus this one
//               fit (a job alone always starts: Check already proved it fits), or until the
//               job's deadline or cancel flag; the Reservation returns the bytes when dropped.
//
// Generic ONNX models (KServe /v2 infer) are admitted the same way by their own estimate
// (onnx_memory.h: the request's tensors plus the activations ONNX shape inference predicts at its
// input shapes): CheckOnnx refuses a request whose one run cannot fit in the budget less what the
// loaded models hold (the KServe 400), and the run reserves its estimate with Reserve.
//
// A model without a memory model (a GPU session, whose device memory the host's resident set
// cannot measure, or calibration off; a generic model whose graph was not kept) is admitted as
// before, with no estimate; /v1/capabilities says so. Thread safety: Configure, SetModel and
// SetOnnxModel run on the gate thread before the models open; every other method may be called
// from any thread (one mutex, one condition variable).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/config.h"
#include "common/status.h"
#include "sd/memory_model.h"
#include "server/lanes.h"
#include "server/metrics.h"
#include "server/onnx_memory.h"

namespace tg::server {

class MemoryAdmission {
 public:
  // The bytes of one admitted run, returned on destruction.
  class Reservation {
   public:
    Reservation() = default;
    Reservation(MemoryAdmission* owner, std::int64_t bytes) : owner_(owner), bytes_(bytes) {}
    Reservation(Reservation&& o) noexcept : owner_(o.owner_), bytes_(o.bytes_) {
      o.owner_ = nullptr;
    }
    Reservation& operator=(Reservation&& o) noexcept;
    ~Reservation();
    std::int64_t bytes() const { return bytes_; }

   private:
    MemoryAdmission* owner_ = nullptr;
    std::int64_t bytes_ = 0;
  };

  void Configure(sd::MemoryBudget budget, std::int64_t held_bytes);
  void SetModel(const std::string& name, sd::SdMemoryModel model);
  bool configured() const { return configured_.load(std::memory_order_acquire); }

  // The estimate of `job` on `model` (its decode tiled when ChooseVaeTiling says so; *vae_tiled
  // set), absent when the model has no memory model.
  std::optional<sd::JobEstimate> Estimate(const std::string& model, const sd::ImageJob& job,
                                          bool* vae_tiled = nullptr) const;
  // See the file comment. OK when the model has no memory model.
  [[nodiscard]] common::Status Check(const std::string& model, const sd::ImageJob& job) const;
  // Images of job's size one run may hold (1..cap); cap when the model has no memory model.
  int PartImages(const std::string& model, sd::ImageJob job, int cap) const;
  // Generic models: the estimator of `name` (onnx_memory.h).
  void SetOnnxModel(const std::string& name, std::shared_ptr<OnnxMemoryModel> model);
  // The estimate of one run of generic `model` at `shapes` (`input_bytes`: the request's input
  // tensors); absent when no budget is configured or the model has no estimator.
  std::optional<runtime::RunMemoryEstimate> EstimateOnnx(const std::string& model,
                                                         const InputShapes& shapes,
                                                         std::int64_t input_bytes) const;
  // OK when estimate `e` of one run of generic `model` at `shapes` fits in the budget less what
  // the loaded models hold; else INVALID_ARG naming the model, the need (and its parts), the
  // budget and its source, what is held and what fits (KServe's 400).
  [[nodiscard]] common::Status CheckOnnx(const std::string& model, const InputShapes& shapes,
                                         const runtime::RunMemoryEstimate& e) const;
  // Records an admitted generic run's estimate (last/max per model, the estimate histogram).
  void NoteOnnxAdmitted(Metrics& m, const std::string& model,
                        const runtime::RunMemoryEstimate& e) const;
  // The budget less what the loaded models hold; 0 when no budget is configured.
  std::int64_t available_bytes() const;
  // Waits for room for `bytes` (see the file comment); nullopt at the deadline or on cancel.
  std::optional<Reservation> Reserve(std::int64_t bytes, Clock::time_point deadline,
                                     const std::atomic<bool>* cancel);

  // Records a job that failed for memory despite its estimate (truegreen_memory_failures_total).
  void CountFailure(Metrics& m, const std::string& model) const;
  // The budget, what the models hold, the running jobs' estimates and, per image model and batch
  // size, the largest square side that fits, per generic model its last and largest estimate
  // ("onnx_models") (the /v1/capabilities "memory" object).
  common::Json ToJson() const;
  // Declares the truegreen_memory_* families (once, at server construction).
  static void Declare(Metrics& m);
  // Sets the gauges (each /metrics render).
  void Export(Metrics& m) const;

 private:
  void Release(std::int64_t bytes);
  // The estimator of generic model `model` (null when it has none); the estimate itself runs
  // outside mu_ (shape inference can take milliseconds).
  std::shared_ptr<OnnxMemoryModel> FindOnnx(const std::string& model) const;
  std::int64_t AvailableLocked() const { return budget_.bytes - held_; }

  std::atomic<bool> configured_{false};
  sd::MemoryBudget budget_;
  std::int64_t held_ = 0;
  std::map<std::string, sd::SdMemoryModel> models_;
  std::map<std::string, std::shared_ptr<OnnxMemoryModel>> onnx_models_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::int64_t in_use_ = 0;         // sum of running reservations (mu_)
  int running_ = 0;                 // reservations alive (mu_)
  std::int64_t last_estimate_ = 0;  // the latest admitted run's estimate (mu_)
};

// True when `s` is a failure to allocate memory (ORT's "Failed to allocate memory", bad_alloc,
// CUDA out of memory): the job fails alone with a 503 naming memory.
bool IsMemoryFailure(const common::Status& s);

}  // namespace tg::server
