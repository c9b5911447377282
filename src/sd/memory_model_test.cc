// The memory model's arithmetic (fit, estimate, tiling choice, largest fitting size, the refusal
// message, the budget's sources) on synthetic numbers; the estimate against measured peaks is
// tests/sd_memory_estimate_test.cc.
#include "sd/memory_model.h"

#include <gtest/gtest.h>

#include <vector>

namespace tg::sd {
namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;
constexpr std::int64_t kMiB = std::int64_t{1} << 20;

TEST(FitActivations, RecoversTheCoefficientsOfExactSamples) {
  const ActivationFit truth{50e6, 2e4, 3.0};
  std::vector<ActivationSample> s;
  for (auto [rows, t] : {std::pair{2, 1024}, {4, 1024}, {2, 2304}, {2, 4096}}) {
    s.push_back({rows, t, truth.Bytes(rows, t)});
  }
  const ActivationFit f = FitActivations(s);
  EXPECT_NEAR(f.c0, truth.c0, 1e3);
  EXPECT_NEAR(f.c1, truth.c1, 1.0);
  EXPECT_NEAR(f.c2, truth.c2, 1e-3);
  // Extrapolated to 1536x1024 at two rows: the T² term dominates and is kept exactly.
  EXPECT_NEAR(f.Bytes(2, 24576), truth.Bytes(2, 24576), 1e-6 * truth.Bytes(2, 24576));
}

TEST(FitActivations, NeverReturnsANegativeTerm) {
  // Samples that shrink with T would fit a negative slope: the fit keeps only terms >= 0.
  std::vector<ActivationSample> s = {{2, 1024, 900e6}, {2, 2304, 500e6}, {2, 4096, 400e6}};
  const ActivationFit f = FitActivations(s);
  EXPECT_GE(f.c0, 0.0);
  EXPECT_GE(f.c1, 0.0);
  EXPECT_GE(f.c2, 0.0);
  EXPECT_GT(f.Bytes(2, 1024), 0.0);
  EXPECT_EQ(FitActivations({}).Bytes(8, 1 << 20), 0.0);
}

SdMemoryModel Model() {
  // UNet: 20 MB + rows·(2e4·T + 4·T²) bytes; VAE: 10 MB + 3e4·T + 8·T².
  return SdMemoryModel({20e6, 2e4, 4.0}, {10e6, 3e4, 8.0}, 400 * kMiB);
}

TEST(SdMemoryModel, EstimateIsTheLargerPhasePlusTheHostBuffers) {
  const SdMemoryModel m = Model();
  const JobEstimate e = m.Estimate({512, 512, 2, true, false});
  const double t = 64.0 * 64.0;
  EXPECT_EQ(e.unet_bytes, std::llround(20e6 + 4 * (2e4 * t + 4 * t * t)));
  EXPECT_EQ(e.vae_bytes, std::llround(10e6 + 3e4 * t + 8 * t * t));
  EXPECT_EQ(e.host_bytes, 2 * 512 * 512 * 10);
  EXPECT_EQ(e.job_bytes, std::max(e.unet_bytes, e.vae_bytes + e.host_bytes));
  // Without guidance the UNet runs half the rows.
  EXPECT_LT(m.Estimate({512, 512, 2, false, false}).unet_bytes, e.unet_bytes);
}

TEST(SdMemoryModel, TiledDecodeHoldsOneTilesActivations) {
  const SdMemoryModel m = Model();
  const JobEstimate whole = m.Estimate({1536, 1024, 1, true, false});
  const JobEstimate tiled = m.Estimate({1536, 1024, 1, true, true});
  EXPECT_LT(tiled.vae_bytes, whole.vae_bytes / 4);
  EXPECT_EQ(tiled.unet_bytes, whole.unet_bytes);
  // Above kVaeTileAutoPixels the decode always tiles; below, only when the whole one does not fit.
  EXPECT_TRUE(ChooseVaeTiling(m, {1536, 1024, 1, true, false}, 100 * kGiB));
  EXPECT_FALSE(ChooseVaeTiling(m, {512, 512, 1, true, false}, 100 * kGiB));
  const std::int64_t whole768 = m.Estimate({768, 768, 1, false, false}).admit_bytes;
  EXPECT_TRUE(ChooseVaeTiling(m, {768, 768, 1, false, false}, whole768 - 1));
}

TEST(SdMemoryModel, LargestFittingSizeAndBatchAreTheEdgeOfTheBudget) {
  const SdMemoryModel m = Model();
  const std::int64_t avail = 2 * kGiB;
  const auto sq = LargestSizeThatFits(m, 1.0, 1, true, avail);
  ASSERT_TRUE(sq.has_value());
  EXPECT_EQ(sq->first, sq->second);
  EXPECT_EQ(sq->first % 8, 0);
  EXPECT_LE(EstimateWithTiling(m, {sq->first, sq->second, 1, true, false}, avail).admit_bytes,
            avail);
  EXPECT_GT(
      EstimateWithTiling(m, {sq->first + 8, sq->second + 8, 1, true, false}, avail).admit_bytes,
      avail);
  const auto wide = LargestSizeThatFits(m, 1.5, 1, true, avail);
  ASSERT_TRUE(wide.has_value());
  EXPECT_NEAR(static_cast<double>(wide->first) / wide->second, 1.5, 0.05);
  // More images per run: a smaller largest size.
  EXPECT_LT(LargestSizeThatFits(m, 1.0, 8, true, avail)->first, sq->first);
  const int n = MaxImagesThatFit(m, {512, 512, 1, true, false}, avail, kMaxBatch);
  EXPECT_GE(n, 1);
  if (n < kMaxBatch) {
    EXPECT_GT(EstimateWithTiling(m, {512, 512, n + 1, true, false}, avail).admit_bytes, avail);
  }
  EXPECT_EQ(MaxImagesThatFit(m, {2048, 2048, 1, true, false}, 1 * kMiB, kMaxBatch), 0);
  EXPECT_FALSE(LargestSizeThatFits(m, 1.0, 1, true, 1 * kMiB).has_value());
}

TEST(SdMemoryModel, RefusalNamesSizeNeedBudgetAndWhatFits) {
  const SdMemoryModel m = Model();
  MemoryBudget b;
  b.bytes = 2 * kGiB;
  b.source = "--memory-budget";
  EXPECT_TRUE(CheckOneImageFits(m, {512, 512, 1, true, false}, b, 400 * kMiB).ok());
  const common::Status s = CheckOneImageFits(m, {1536, 1024, 1, true, false}, b, 400 * kMiB);
  ASSERT_EQ(s.code(), common::StatusCode::kInvalidArg);
  const std::string& msg = s.message();
  EXPECT_NE(msg.find("size 1536x1024 needs an estimated "), std::string::npos) << msg;
  EXPECT_NE(msg.find("the memory budget is 2.00 GiB (--memory-budget)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("400 MiB of it held by the loaded models"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the largest size that fits is "), std::string::npos) << msg;
  EXPECT_NE(msg.find("at this aspect ratio"), std::string::npos) << msg;
  b.bytes = 401 * kMiB;
  EXPECT_NE(CheckOneImageFits(m, {256, 256, 1, true, false}, b, 400 * kMiB)
                .message()
                .find("no size fits"),
            std::string::npos);
}

TEST(ResolveBudget, FlagThenGpuThenCgroupThenMemAvailable) {
  probe::HostMemory host;
  host.cgroup_limit_bytes = 8 * kGiB;
  host.cgroup_limit_file = "/sys/fs/cgroup/memory.max";
  host.mem_available_bytes = 20 * kGiB;
  auto b = ResolveBudget(2 * kGiB, host, std::nullopt, std::nullopt, kGiB);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->bytes, 2 * kGiB);
  EXPECT_EQ(b->source, "--memory-budget");
  b = ResolveBudget(std::nullopt, host, 10 * kGiB, 2 * kGiB, kGiB);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->device);
  EXPECT_EQ(b->reserve, 12 * kGiB / 10);
  EXPECT_EQ(b->bytes, 12 * kGiB - b->reserve);
  b = ResolveBudget(std::nullopt, host, std::nullopt, std::nullopt, kGiB);
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->device);
  EXPECT_EQ(b->bytes, 8 * kGiB - 8 * kGiB / 10);
  EXPECT_NE(b->source.find("cgroup /sys/fs/cgroup/memory.max"), std::string::npos) << b->source;
  host.cgroup_limit_bytes.reset();
  b = ResolveBudget(std::nullopt, host, std::nullopt, std::nullopt, kGiB);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->bytes, 21 * kGiB - 21 * kGiB / 10);
  EXPECT_NE(b->source.find("MemAvailable"), std::string::npos);
  // A small limit keeps at least kMinReserveBytes back.
  host.cgroup_limit_bytes = kGiB;
  EXPECT_EQ(ResolveBudget(std::nullopt, host, std::nullopt, std::nullopt, 0)->reserve,
            kMinReserveBytes);
  host = {};
  host.unavailable = "nothing";
  const auto none = ResolveBudget(std::nullopt, host, std::nullopt, std::nullopt, kGiB);
  EXPECT_EQ(none.status().code(), common::StatusCode::kInvalidArg);
  EXPECT_NE(none.status().message().find("--memory-budget"), std::string::npos);
}

TEST(FormatBytes, BinaryUnits) {
  EXPECT_EQ(FormatBytes(2 * kGiB), "2.00 GiB");
  EXPECT_EQ(FormatBytes(1536 * kMiB), "1.50 GiB");
  EXPECT_EQ(FormatBytes(400 * kMiB), "400 MiB");
}

}  // namespace
}  // namespace tg::sd
