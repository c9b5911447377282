#include "server/image_store.h"

#include <openssl/rand.h>

#include "common/strings.h"

namespace tg::server {

using common::Result;
using common::Status;

Result<std::string> ImageStore::Put(std::string png, Clock::time_point now) {
  if (png.size() > max_bytes_) {
    return Status::InvalidArg("the image (" + std::to_string(png.size()) +
                              " bytes) is larger than the whole image store (--image-store-bytes " +
                              std::to_string(max_bytes_) + ")");
  }
  unsigned char raw[16];
  if (RAND_bytes(raw, sizeof(raw)) != 1) {
    return Status::Unavailable("no random bytes for an image token (OpenSSL RAND_bytes)");
  }
  std::string token = common::HexLower(raw, sizeof(raw));
  std::lock_guard<std::mutex> l(mu_);
  bytes_ += png.size();
  images_[token] = {std::make_shared<const std::string>(std::move(png)), now + ttl_};
  order_.push_back(token);
  EvictLocked(now);
  return token;
}

std::shared_ptr<const std::string> ImageStore::Get(const std::string& token,
                                                   Clock::time_point now) {
  std::lock_guard<std::mutex> l(mu_);
  EvictLocked(now);
  auto it = images_.find(token);
  return it == images_.end() ? nullptr : it->second.png;
}

std::uint64_t ImageStore::bytes() const {
  std::lock_guard<std::mutex> l(mu_);
  return bytes_;
}

void ImageStore::EvictLocked(Clock::time_point now) {
  // Oldest first: it expires first (one TTL for all) and is the one to drop when over budget.
  while (!order_.empty()) {
    auto it = images_.find(order_.front());
    if (it != images_.end() && it->second.expires > now && bytes_ <= max_bytes_) break;
    if (it != images_.end()) {
      bytes_ -= it->second.png->size();
      images_.erase(it);
    }
    order_.pop_front();
  }
}

}  // namespace tg::server
