#include "server/serve_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "tests/support/test_util.h"

namespace tg::server {
namespace {

using testing::TempDir;
using testing::WriteFile;

TEST(ModelRepositoryTest, ReadsEveryEntryKindSortedByName) {
  TempDir d;
  WriteFile(d / "sd/model_index.json", "{}");
  WriteFile(d / "b/model.onnx", "x");
  WriteFile(d / "b/config.yaml",
            "max_batch: 4\nbatch_delay_ms: 3\nwarmup:\n  - {x: [2, 8]}\ncanary_p95_ms: 7.5\n");
  WriteFile(d / "a.onnx", "x");
  WriteFile(d / "a.yaml", "max_batch: 2\n");
  WriteFile(d / "README.txt", "not a model");
  auto r = LoadModelRepository(d.path());
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].name, "a");
  EXPECT_EQ((*r)[0].max_batch, 2);
  EXPECT_EQ((*r)[1].name, "b");
  EXPECT_EQ((*r)[1].kind, ModelKind::kOnnx);
  EXPECT_EQ((*r)[1].batch_delay_ms, 3);
  ASSERT_EQ((*r)[1].warmup.size(), 1u);
  EXPECT_EQ((*r)[1].warmup[0].at("x"), (std::vector<std::int64_t>{2, 8}));
  EXPECT_EQ((*r)[1].canary_p95_ms.value_or(0), 7.5);
  EXPECT_FALSE((*r)[1].canary_p50_ms.has_value());
  EXPECT_EQ((*r)[2].kind, ModelKind::kStableDiffusion);
}

TEST(ModelRepositoryTest, ErrorsNameTheFileLineAndField) {
  TempDir d;
  WriteFile(d / "m/model.onnx", "x");
  WriteFile(d / "m/config.yaml", "max_batch: 2\nmax_btach: 3\n");
  auto r = LoadModelRepository(d.path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("config.yaml:2"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("max_btach"), std::string::npos);

  WriteFile(d / "m/config.yaml", "max_batch: 0\n");
  r = LoadModelRepository(d.path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("max_batch"), std::string::npos) << r.status().message();

  WriteFile(d / "m/config.yaml", "warmup:\n  - {x: [1, -3]}\n");
  r = LoadModelRepository(d.path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("warmup.x"), std::string::npos) << r.status().message();
}

TEST(ModelRepositoryTest, SdPipelineBatchingDefaultsAndConfig) {
  TempDir d;
  WriteFile(d / "sd/model_index.json", "{}");
  auto r = LoadModelRepository(d.path());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0].max_batch, 8);  // images per UNet batch
  EXPECT_EQ((*r)[0].batch_delay_ms, 0);
  WriteFile(d / "sd/config.yaml", "max_batch: 4\nbatch_delay_ms: 20\ncanary_p50_ms: 900\n");
  r = LoadModelRepository(d.path());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0].max_batch, 4);
  EXPECT_EQ((*r)[0].batch_delay_ms, 20);
  EXPECT_EQ((*r)[0].canary_p50_ms.value_or(0), 900);
  for (const char* bad :
       {"max_batch: 9\n", "max_batch: 0\n", "batch_delay_ms: -1\n", "warmup:\n  - {x: [1]}\n"}) {
    WriteFile(d / "sd/config.yaml", bad);
    r = LoadModelRepository(d.path());
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("config.yaml:1"), std::string::npos)
        << r.status().message();
  }
}

TEST(ModelRepositoryTest, RejectsMissingEmptyAndUnusableFolders) {
  TempDir d;
  EXPECT_EQ(LoadModelRepository(d / "nope").status().code(), common::StatusCode::kNotFound);
  EXPECT_EQ(LoadModelRepository(d.path()).status().code(), common::StatusCode::kInvalidArg);
  std::filesystem::create_directories(d / "empty_model");
  auto r = LoadModelRepository(d.path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("empty_model"), std::string::npos);
}

TEST(ServeConfigTest, RangesAreChecked) {
  ServeConfig c;
  c.models_dir = "/m";
  EXPECT_TRUE(ValidateServeConfig(c).ok());
  c.limits.queue_size = 0;
  EXPECT_NE(ValidateServeConfig(c).message().find("--queue-size"), std::string::npos);
  c.limits.queue_size = 4;
  c.port = 70000;
  EXPECT_NE(ValidateServeConfig(c).message().find("--port"), std::string::npos);
  c.port = 0;
  c.canary.drift_tolerance = 0.5;
  EXPECT_FALSE(ValidateServeConfig(c).ok());
  c.canary.drift_tolerance = 3.0;
  for (double bad : {0.0, -0.1, 1.5}) {
    c.canary.min_gpu_utilization = bad;
    EXPECT_NE(ValidateServeConfig(c).message().find("--canary-min-gpu-utilization"),
              std::string::npos)
        << bad;
  }
  c.canary.min_gpu_utilization = 1.0;
  EXPECT_TRUE(ValidateServeConfig(c).ok());
  c.gpu_sample_interval_ms = 10;
  EXPECT_NE(ValidateServeConfig(c).message().find("--gpu-sample-interval-ms"), std::string::npos);
}

// One table holds serve's ranges (the CLI shows and checks the same rows): Validate answers with
// the row's bounds, keeps the holes inside them, and has a row for every number it checks.
TEST(ServeConfigTest, ValidateChecksTheRangeTableAndItsHoles) {
  ServeConfig c;
  c.models_dir = "/m";
  c.port = 65536;
  EXPECT_EQ(ValidateServeConfig(c).message(), "--port 65536 is outside 0..65535");
  c.port = 0;
  c.canary.drift_tolerance = 0.5;
  EXPECT_EQ(ValidateServeConfig(c).message(), "--canary-drift-tolerance 0.5 is outside 1..1000000");
  c.canary.drift_tolerance = 1e6;
  EXPECT_TRUE(ValidateServeConfig(c).ok());
  c.limits.large_pixels = 0;
  EXPECT_EQ(ValidateServeConfig(c).message(), "--large-pixels 0 is outside 1..2147483647");
  c.limits.large_pixels = 1;
  for (int bad : {1, 255, 1025, -1}) {
    c.canary.size = bad;
    EXPECT_EQ(ValidateServeConfig(c).message(),
              "--canary-size " + std::to_string(bad) + " is outside 256..1024");
  }
  for (int good : {0, 256, 1024}) {
    c.canary.size = good;
    EXPECT_TRUE(ValidateServeConfig(c).ok()) << good;
  }
  c.canary.p95_ms = 3600001;
  EXPECT_EQ(ValidateServeConfig(c).message(), "--canary-p95-ms 3600001 is outside 0..3600000");
  const ServeOptionRange* r = FindServeOptionRange("--image-store-bytes");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->lo, 1048576);
  EXPECT_EQ(FindServeOptionRange("--models"), nullptr);
  std::set<std::string> flags;
  for (const ServeOptionRange& row : ServeOptionRanges()) {
    EXPECT_TRUE(flags.insert(row.flag).second) << row.flag;
    EXPECT_LE(row.lo, row.hi) << row.flag;
  }
}

TEST(ServeConfigTest, TokenFileFirstLineTrimmed) {
  TempDir d;
  WriteFile(d / "t", "abc \nsecond\n");
  auto t = ReadTokenFile(d / "t");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, "abc");
  WriteFile(d / "e", "\n");
  EXPECT_FALSE(ReadTokenFile(d / "e").ok());
}

}  // namespace
}  // namespace tg::server
