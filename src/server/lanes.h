// Bounded per-model (per-lane) queues with worker threads and dynamic batching.
//
// A Lane owns `concurrency` worker threads and a FIFO of at most `capacity` jobs. Submit() never
// blocks: a full queue is refused (the caller answers 429). A worker takes the oldest job and, when
// max_batch > 1, waits up to `batch_delay` for more jobs with the same batch_key, then hands the
// batch to the lane's BatchFn. max_batch counts Job::units (1 per request by default; an SD
// request counts its images), so a batch's units never exceed it, except a single job larger than
// max_batch, which runs alone; a queued job too large for the batch being filled stays queued, in
// order, for the next one. Jobs whose deadline passed while queued are expired (ExpireFn,
// answered 504) instead of being run. Drain() stops accepting, lets the workers finish every
// queued job, and joins them.
//
// Time (the batching window, deadlines) is read from a common::Clock, the real one unless a test
// passes a FakeClock; waits still block on the lane's condition variable, each bounded by the
// time left on that clock, so a submitted job, Drain, or the real time passing rechecks it.
//
// Thread safety: every method may be called from any thread. The BatchFn runs on worker threads
// and must complete every job it is given (exactly once).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"

namespace tg::server {

using Clock = std::chrono::steady_clock;

struct Job {
  virtual ~Job() = default;
  std::string batch_key;  // jobs are batched together only when keys are equal
  int units = 1;          // what this job counts against the lane's max_batch (>= 1)
  Clock::time_point enqueued;
  Clock::time_point deadline;
  std::atomic<bool> cancel{false};  // set at the deadline; SD checks it between steps
};

class Lane {
 public:
  using BatchFn = std::function<void(std::vector<std::shared_ptr<Job>>&)>;
  using ExpireFn = std::function<void(const std::shared_ptr<Job>&)>;

  // `clock` is not owned and must outlive the lane (default: the process's real clock). Job
  // enqueued/deadline times are points of that clock.
  Lane(std::string name, int capacity, int concurrency, int max_batch,
       std::chrono::milliseconds batch_delay, BatchFn run, ExpireFn expire,
       common::Clock* clock = common::RealClock());
  ~Lane();  // Drain()
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

  // False when the queue is full or the lane is draining.
  bool Submit(std::shared_ptr<Job> job);
  void Drain();
  const std::string& name() const { return name_; }
  int depth() const;      // queued, not yet running
  int in_flight() const;  // running now

 private:
  void Worker();
  void Reaper();
  std::vector<std::shared_ptr<Job>> TakeBatch(std::unique_lock<std::mutex>& lock);

  std::string name_;
  int capacity_;
  int max_batch_;
  std::chrono::milliseconds batch_delay_;
  BatchFn run_;
  ExpireFn expire_;
  common::Clock* const clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  int running_ = 0;
  std::vector<std::thread> workers_;
  std::thread reaper_;
};

}  // namespace tg::server
