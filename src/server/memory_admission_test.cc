// MemoryAdmission: the refusal, the part size of a split batch, concurrent reservations waiting
// for memory (and giving up at the deadline), the capabilities object and the gauges.
#include "server/memory_admission.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace tg::server {
namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

void Configure(MemoryAdmission& a, std::int64_t budget, std::int64_t held) {
  sd::MemoryBudget b;
  b.bytes = budget;
  b.source = "--memory-budget";
  a.Configure(b, held);
  // UNet: 20 MB + rows·(2e4·T + 4·T²) bytes; VAE: 10 MB + 3e4·T + 8·T².
  a.SetModel("sd15", sd::SdMemoryModel({20e6, 2e4, 4.0}, {10e6, 3e4, 8.0}, held));
}

TEST(MemoryAdmission, RefusesASizeThatCannotFitAndSplitsABatch) {
  MemoryAdmission a;
  Configure(a, 2 * kGiB, kGiB / 2);
  EXPECT_TRUE(a.Check("sd15", {512, 512, 1, true, false}).ok());
  const common::Status s = a.Check("sd15", {1536, 1024, 1, true, false});
  EXPECT_EQ(s.code(), common::StatusCode::kInvalidArg);
  EXPECT_NE(s.message().find("size 1536x1024"), std::string::npos) << s.message();
  // A model without a memory model is admitted as before.
  EXPECT_TRUE(a.Check("other", {2048, 2048, 1, true, false}).ok());
  EXPECT_EQ(a.PartImages("other", {2048, 2048, 1, true, false}, 8), 8);
  const int part = a.PartImages("sd15", {512, 512, 1, true, false}, 8);
  EXPECT_GE(part, 1);
  EXPECT_LT(part, 8);
  const auto e = a.Estimate("sd15", {512, 512, part, true, false});
  ASSERT_TRUE(e.has_value());
  EXPECT_LE(e->admit_bytes, 2 * kGiB - kGiB / 2);
}

TEST(MemoryAdmission, ConcurrentRunsWaitUntilTheirSumFits) {
  MemoryAdmission a;
  Configure(a, 2 * kGiB, 0);
  const auto far = Clock::now() + std::chrono::seconds(30);
  auto r1 = a.Reserve(1500LL << 20, far, nullptr);
  ASSERT_TRUE(r1.has_value());
  // A second run of 1 GiB does not fit beside the first: it waits until the first is released.
  std::atomic<bool> started{false};
  std::thread t([&] {
    auto r2 = a.Reserve(kGiB, far, nullptr);
    started = r2.has_value();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(started.load());
  EXPECT_EQ(a.ToJson()["in_use_bytes"].get<std::int64_t>(), 1500LL << 20);
  r1.reset();
  t.join();
  EXPECT_TRUE(started.load());
  EXPECT_EQ(a.ToJson()["in_use_bytes"].get<std::int64_t>(), 0);
  EXPECT_EQ(a.ToJson()["running_jobs"].get<int>(), 0);
}

TEST(MemoryAdmission, AWaitingRunGivesUpAtItsDeadlineOrCancel) {
  MemoryAdmission a;
  Configure(a, 2 * kGiB, 0);
  auto r1 = a.Reserve(1500LL << 20, Clock::now() + std::chrono::seconds(30), nullptr);
  ASSERT_TRUE(r1.has_value());
  const auto t0 = Clock::now();
  EXPECT_FALSE(a.Reserve(kGiB, t0 + std::chrono::milliseconds(150), nullptr).has_value());
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(150));
  std::atomic<bool> cancel{true};
  EXPECT_FALSE(a.Reserve(kGiB, t0 + std::chrono::seconds(30), &cancel).has_value());
  // A run alone always starts, whatever its estimate (the refusal happened before it queued).
  r1.reset();
  EXPECT_TRUE(a.Reserve(10 * kGiB, t0, nullptr).has_value());
}

TEST(MemoryAdmission, CapabilitiesAndMetricsShowBudgetUseAndLargestSizes) {
  MemoryAdmission a;
  Configure(a, 2 * kGiB, kGiB / 2);
  Metrics m;
  MemoryAdmission::Declare(m);
  auto r = a.Reserve(100 << 20, Clock::now() + std::chrono::seconds(1), nullptr);
  const common::Json j = a.ToJson();
  EXPECT_EQ(j["budget_bytes"].get<std::int64_t>(), 2 * kGiB);
  EXPECT_EQ(j["held_bytes"].get<std::int64_t>(), kGiB / 2);
  EXPECT_EQ(j["in_use_bytes"].get<std::int64_t>(), 100 << 20);
  const common::Json& sizes = j["models"]["sd15"]["largest_square_size_per_batch"];
  ASSERT_EQ(sizes.size(), 8u);
  const int one = std::stoi(sizes["1"].get<std::string>());
  const int eight = std::stoi(sizes["8"].get<std::string>());
  EXPECT_GT(one, eight);
  a.Export(m);
  EXPECT_EQ(m.Value("truegreen_memory_budget_bytes", {}), 2.0 * kGiB);
  EXPECT_EQ(m.Value("truegreen_memory_in_use_bytes", {}), 100.0 * (1 << 20));
  EXPECT_EQ(
      m.Value("truegreen_memory_largest_square_side_pixels", {{"model", "sd15"}, {"batch", "1"}}),
      one);
  a.CountFailure(m, "sd15");
  EXPECT_EQ(m.Value("truegreen_memory_failures_total", {{"model", "sd15"}}), 1.0);
  EXPECT_FALSE(MemoryAdmission().ToJson()["configured"].get<bool>());
}

TEST(IsMemoryFailure, NamesOfAllocationFailures) {
  using common::Status;
  EXPECT_TRUE(IsMemoryFailure(
      Status::Unavailable("Failed to allocate memory for requested buffer of size 123456")));
  EXPECT_TRUE(IsMemoryFailure(Status::Unavailable("CUDA failure 2: out of memory")));
  EXPECT_TRUE(IsMemoryFailure(Status::Unavailable("std::bad_alloc")));
  EXPECT_FALSE(IsMemoryFailure(Status::Unavailable("invalid input shape")));
}

}  // namespace
}  // namespace tg::server
