#include "server/onnx_memory.h"

#include <algorithm>
#include <cstdio>

#include "runtime/tensor.h"

namespace tg::server {

using common::Json;

std::string ShapesText(const InputShapes& shapes) {
  std::string s;
  for (const auto& [name, dims] : shapes) {
    s += (s.empty() ? "" : " ") + name + runtime::ShapeToString(dims);
  }
  return s;
}

std::string BytesText(std::int64_t bytes) {
  if (bytes >= runtime::kSaturatedBytes) return "over 2 EiB (a size that overflows)";
  char buf[48];
  const double v = static_cast<double>(bytes);
  if (bytes < 1024) {
    std::snprintf(buf, sizeof(buf), "%lld B", static_cast<long long>(bytes));
  } else if (bytes < (1 << 20)) {
    std::snprintf(buf, sizeof(buf), "%.1f KiB", v / 1024.0);
  } else if (bytes < (std::int64_t{1} << 30)) {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", v / static_cast<double>(1 << 20));
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", v / static_cast<double>(1 << 30));
  }
  return buf;
}

runtime::RunMemoryEstimate OnnxMemoryModel::Estimate(const InputShapes& shapes,
                                                     std::int64_t input_bytes) {
  const std::string key = ShapesText(shapes);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (auto it = cache_.find(key); it != cache_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  runtime::RunMemoryEstimate e;
  auto r = runtime::EstimateRunMemory(model_, shapes);
  if (r.ok()) {
    e = std::move(r).value();
  } else {
    e.input_bytes = e.sum_bytes = e.peak_bytes = input_bytes;
    e.complete = false;
    e.incomplete_reason = "shape inference failed at these shapes, only the inputs are counted: " +
                          r.status().message();
  }
  std::lock_guard<std::mutex> l(mu_);
  if (cache_.count(key) == 0) {
    lru_.emplace_front(key, e);
    cache_[key] = lru_.begin();
    if (lru_.size() > kMaxCachedShapes) {
      cache_.erase(lru_.back().first);
      lru_.pop_back();
    }
  }
  return e;
}

void OnnxMemoryModel::NoteAdmitted(const runtime::RunMemoryEstimate& e) {
  std::lock_guard<std::mutex> l(mu_);
  last_ = e.peak_bytes;
  max_ = std::max(max_, e.peak_bytes);
  last_complete_ = e.complete;
  last_reason_ = e.incomplete_reason;
}

std::int64_t OnnxMemoryModel::last_bytes() const {
  std::lock_guard<std::mutex> l(mu_);
  return last_;
}

std::int64_t OnnxMemoryModel::max_bytes() const {
  std::lock_guard<std::mutex> l(mu_);
  return max_;
}

Json OnnxMemoryModel::ToJson() const {
  std::lock_guard<std::mutex> l(mu_);
  Json j = {{"estimate", "onnx shape inference"},
            {"last_estimate_bytes", last_},
            {"max_estimate_bytes", max_},
            {"last_estimate_complete", last_complete_},
            {"cached_shapes", lru_.size()}};
  if (!last_complete_) j["last_incomplete_reason"] = last_reason_;
  return j;
}

}  // namespace tg::server
