// A bounded, expiring store of generated images for `response_format: "url"`: each image is kept
// under a random 128-bit token (32 hex digits, from OpenSSL's RAND_bytes) and served at
// /v1/images/files/<token>.png until its time-to-live passes or newer images push it out (the
// store never holds more than `max_bytes`; the oldest go first). Nothing is written to disk.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/status.h"

namespace tg::server {

inline constexpr const char* kImageStorePrefix = "/v1/images/files/";

class ImageStore {
 public:
  using Clock = std::chrono::steady_clock;
  ImageStore(std::uint64_t max_bytes, std::chrono::seconds ttl)
      : max_bytes_(max_bytes), ttl_(ttl) {}

  // Keeps `png` and returns its token. INVALID_ARG when the image alone is over max_bytes (it
  // can never be stored: the request has to ask for the image inline), UNAVAILABLE when no
  // random bytes could be drawn.
  [[nodiscard]] common::Result<std::string> Put(std::string png, Clock::time_point now);
  // The image of `token`, or null when unknown or expired.
  std::shared_ptr<const std::string> Get(const std::string& token, Clock::time_point now);
  std::uint64_t bytes() const;
  std::chrono::seconds ttl() const { return ttl_; }

 private:
  void EvictLocked(Clock::time_point now);  // mu_ held

  struct Entry {
    std::shared_ptr<const std::string> png;
    Clock::time_point expires;
  };
  const std::uint64_t max_bytes_;
  const std::chrono::seconds ttl_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> images_;
  std::deque<std::string> order_;  // tokens, oldest first
  std::uint64_t bytes_ = 0;
};

}  // namespace tg::server
