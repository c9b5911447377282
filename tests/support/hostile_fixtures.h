// The inputs the hostile-input tables (tests/hostile_*_test.cc) share: the one fixture folder of
// a test binary and the "@/" spelling its cases use for it, random field text with invalid
// UTF-8, and bench run files. Header-only; test thread only.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>

#include "tests/support/test_util.h"

namespace tg::testing {

// `s` with every "@/" replaced by `dir` + "/": a case names its fixtures before the folder exists.
inline std::string ExpandFixtureDir(std::string s, const std::string& dir) {
  for (std::size_t p = 0; (p = s.find("@/", p)) != std::string::npos; p += dir.size()) {
    s.replace(p, 1, dir);
  }
  return s;
}

// A gtest Environment owning a binary's fixture folder: SetUp creates it, stores its path in
// *dir and calls `make` to fill it; TearDown removes it. `dir` must outlive the environment.
class FixtureDirEnvironment : public ::testing::Environment {
 public:
  FixtureDirEnvironment(std::string* dir, std::function<void()> make)
      : dir_(dir), make_(std::move(make)) {}
  void SetUp() override {
    folder_ = std::make_unique<TempDir>();
    *dir_ = folder_->path();
    make_();
  }
  void TearDown() override { folder_.reset(); }

 private:
  std::string* dir_;
  std::function<void()> make_;
  std::unique_ptr<TempDir> folder_;
};

// 1..24 bytes for a text field: printable ASCII that needs no quoting in YAML, JSON or a path (no
// '/', quotes, ':', '#', '\\', space), or a byte with the high bit set (mostly invalid UTF-8).
inline std::string RandomFieldText(std::mt19937* rng) {
  std::string s;
  const int n = 1 + static_cast<int>((*rng)() % 24);
  for (int i = 0; i < n; ++i) {
    unsigned char c = (*rng)() % 2 ? static_cast<unsigned char>(0x80 + (*rng)() % 128)
                                   : static_cast<unsigned char>(0x30 + (*rng)() % 0x4b);
    if (c == '\\' || c == '"' || c == ':' || c == '#') c = 'x';
    s.push_back(static_cast<char>(c));
  }
  return s;
}

// A bench run file (bench --out) of `points` points with `windows` windows each.
inline std::string BenchRunFile(int points = 1, int windows = 1,
                                const std::string& size = "512x512") {
  const std::string hist =
      R"({"unit": "us", "lowest": 1, "highest": 3600000000, "significant_digits": 3,
          "buckets": [[1000, 10]]})";
  std::string s = R"({"format": "truegreen-bench/1", "points": [)";
  for (int p = 0; p < points; ++p) {
    s += std::string(p ? "," : "") + R"({"concurrency": )" + std::to_string(p + 1) +
         R"(, "batch": 1, "size": ")" + size +
         R"(", "steps": 20, "ok": 10, "errors": {}, "measured_s": 1.0, "windows": [)";
    for (int w = 0; w < windows; ++w) {
      s += std::string(w ? "," : "") + R"({"throughput": 1.0, "latency_mean_us": 1000})";
    }
    s += R"(], "latency": )" + hist + R"(, "service": )" + hist + "}";
  }
  return s + "]}";
}

}  // namespace tg::testing
