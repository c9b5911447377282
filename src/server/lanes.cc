#include "server/lanes.h"

#include <algorithm>

namespace tg::server {

Lane::Lane(std::string name, int capacity, int concurrency, int max_batch,
           std::chrono::milliseconds batch_delay, BatchFn run, ExpireFn expire,
           common::Clock* clock)
    : name_(std::move(name)),
      capacity_(capacity),
      max_batch_(max_batch < 1 ? 1 : max_batch),
      batch_delay_(batch_delay),
      run_(std::move(run)),
      expire_(std::move(expire)),
      clock_(clock) {
  for (int i = 0; i < concurrency; ++i) workers_.emplace_back([this] { Worker(); });
  reaper_ = std::thread([this] { Reaper(); });
}

Lane::~Lane() { Drain(); }

bool Lane::Submit(std::shared_ptr<Job> job) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopping_ || static_cast<int>(queue_.size()) >= capacity_) return false;
    queue_.push_back(std::move(job));
  }
  cv_.notify_all();
  return true;
}

void Lane::Drain() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) {
    if (t.joinable()) t.join();
  }
  workers_.clear();
  if (reaper_.joinable()) reaper_.join();
}

// Answers queued jobs at their deadline, so a client behind a long job gets its 504 on time.
void Lane::Reaper() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    auto next = Clock::time_point::max();
    std::vector<std::shared_ptr<Job>> expired;
    const auto now = clock_->Now();
    for (auto it = queue_.begin(); it != queue_.end();) {
      if ((*it)->deadline <= now) {
        expired.push_back(*it);
        it = queue_.erase(it);
      } else {
        next = std::min(next, (*it)->deadline);
        ++it;
      }
    }
    if (!expired.empty()) {
      lock.unlock();
      for (auto& j : expired) expire_(j);
      lock.lock();
      continue;
    }
    if (next == Clock::time_point::max()) {
      cv_.wait(lock);
    } else {
      // Bounded by the time left on the lane's clock (a fake one does not move by itself).
      cv_.wait_for(lock, next - now);
    }
  }
}

int Lane::depth() const {
  std::lock_guard<std::mutex> l(mu_);
  return static_cast<int>(queue_.size());
}

int Lane::in_flight() const {
  std::lock_guard<std::mutex> l(mu_);
  return running_;
}

// Called with the lock held and a non-empty queue. Waiting for batch companions releases the lock;
// the head job is taken out first so no other worker can start it.
std::vector<std::shared_ptr<Job>> Lane::TakeBatch(std::unique_lock<std::mutex>& lock) {
  std::vector<std::shared_ptr<Job>> batch;
  batch.push_back(queue_.front());
  queue_.pop_front();
  int units = std::max(1, batch.front()->units);
  if (max_batch_ == 1 || units >= max_batch_) return batch;
  const std::string key = batch.front()->batch_key;
  const auto until = clock_->Now() + batch_delay_;
  // Moves queued jobs with the same batch key into the batch while their units fit in
  // max_batch_; one that does not fit is left in place for a later batch.
  auto sweep = [&] {
    for (auto it = queue_.begin(); it != queue_.end() && units < max_batch_;) {
      const int u = std::max(1, (*it)->units);
      if ((*it)->batch_key == key && units + u <= max_batch_) {
        units += u;
        batch.push_back(*it);
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
  };
  while (true) {
    sweep();
    if (units >= max_batch_ || stopping_) break;
    // The sweep above ran after the last wake-up, so jobs that arrived as the window closed
    // are in.
    const auto left = until - clock_->Now();
    if (left <= Clock::duration::zero()) break;
    cv_.wait_for(lock, left);
  }
  return batch;
}

void Lane::Worker() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping and drained
    std::vector<std::shared_ptr<Job>> batch = TakeBatch(lock);
    ++running_;
    lock.unlock();
    // Jobs that waited past their deadline are answered without running.
    std::vector<std::shared_ptr<Job>> live;
    const auto now = clock_->Now();
    for (auto& j : batch) {
      if (now >= j->deadline) {
        expire_(j);
      } else {
        live.push_back(std::move(j));
      }
    }
    if (!live.empty()) run_(live);
    lock.lock();
    --running_;
  }
}

}  // namespace tg::server
