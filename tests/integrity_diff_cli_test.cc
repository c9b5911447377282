// `truegreen diff` end to end: equal, changed/added/removed by path (human and JSON), --ignore,
// bad input; and a real probe snapshot diffed against itself.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/config.h"
#include "policy/snapshot_diff.h"
#include "tests/support/test_util.h"

namespace tg {
namespace {

using ::testing::HasSubstr;

constexpr const char* kA = R"({
  "schema_version": "truegreen.snapshot/v1", "taken_at": "2025-01-01T00:00:00Z",
  "env": {"NVIDIA_VISIBLE_DEVICES": "all"},
  "nvml": {"driver_version": "580.65.06", "devices": [{"index": 0, "name": "NVIDIA H100"}]},
  "onnxruntime": {"provider_libraries": [{"provider": "CUDAExecutionProvider", "cuda_major": 13}]}
})";
constexpr const char* kB = R"({
  "schema_version": "truegreen.snapshot/v1", "taken_at": "2025-02-02T00:00:00Z",
  "env": {"NVIDIA_VISIBLE_DEVICES": "all", "CUDA_VISIBLE_DEVICES": "0"},
  "nvml": {"driver_version": "570.86.15", "devices": []},
  "onnxruntime": {"provider_libraries": [{"provider": "CUDAExecutionProvider", "cuda_major": 12}]}
})";

TEST(DiffCli, EqualSnapshotsExitZero) {
  testing::TempDir dir;
  testing::WriteFile(dir / "a.json", kA);
  // Same content, other key order, other taken_at.
  std::string a2 = kA;
  a2.replace(a2.find("2025-01-01"), 10, "2030-12-31");
  testing::WriteFile(dir / "a2.json", a2);
  testing::ProcessResult r = testing::RunTruegreen({"diff", dir / "a.json", dir / "a2.json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("equal"));
}

TEST(DiffCli, DifferencesByPath) {
  testing::TempDir dir;
  testing::WriteFile(dir / "a.json", kA);
  testing::WriteFile(dir / "b.json", kB);
  testing::ProcessResult r = testing::RunTruegreen({"diff", dir / "a.json", dir / "b.json"});
  EXPECT_EQ(r.exit_code, 4) << r.err;  // differ: drift between the two
  EXPECT_THAT(r.out, HasSubstr("~ nvml.driver_version: \"580.65.06\" -> \"570.86.15\""));
  EXPECT_THAT(r.out, HasSubstr("+ env.CUDA_VISIBLE_DEVICES: \"0\""));
  EXPECT_THAT(r.out, HasSubstr("- nvml.devices[0]:"));
  EXPECT_THAT(r.out,
              HasSubstr("~ onnxruntime.provider_libraries[CUDAExecutionProvider].cuda_major: 13 "
                        "-> 12"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("taken_at")));

  testing::ProcessResult j =
      testing::RunTruegreen({"--json", "diff", dir / "a.json", dir / "b.json"});
  EXPECT_EQ(j.exit_code, 4);
  auto doc = common::ParseJson(j.out, "stdout");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ((*doc)["equal"], false);
  EXPECT_EQ((*doc)["added"], 1);
  EXPECT_EQ((*doc)["removed"], 1);
  EXPECT_EQ((*doc)["changed"], 2);

  testing::ProcessResult ig =
      testing::RunTruegreen({"diff", dir / "a.json", dir / "b.json", "--ignore", "nvml", "--ignore",
                             "env", "--ignore", "onnxruntime.provider_libraries"});
  EXPECT_EQ(ig.exit_code, 0) << ig.out;
}

TEST(DiffCli, BadInputExitsTwo) {
  testing::TempDir dir;
  testing::WriteFile(dir / "a.json", kA);
  testing::WriteFile(dir / "bad.json", R"({"schema_version": "truegreen.snapshot/v1", "nvml": 3})");
  testing::ProcessResult r = testing::RunTruegreen({"diff", dir / "a.json", dir / "bad.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("bad.json"));
  EXPECT_THAT(r.err, HasSubstr("nvml"));
  testing::ProcessResult one = testing::RunTruegreen({"diff", dir / "a.json"});
  EXPECT_EQ(one.exit_code, 2);
}

TEST(DiffCli, RealProbeSnapshotDiffsCleanAgainstItself) {
  testing::TempDir dir;
  testing::ProcessResult p = testing::RunTruegreen({"--json", "probe"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  testing::WriteFile(dir / "a.json", p.out);
  testing::ProcessResult r = testing::RunTruegreen({"diff", dir / "a.json", dir / "a.json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // The same node with the driver taken away differs exactly where expected.
  auto j = common::ParseJson(p.out, "probe");
  ASSERT_TRUE(j.ok());
  (*j)["nvml"]["driver_version"] = "999.1.1";
  testing::WriteFile(dir / "b.json", j->dump());
  testing::ProcessResult d = testing::RunTruegreen({"diff", dir / "a.json", dir / "b.json"});
  EXPECT_EQ(d.exit_code, 4);
  EXPECT_THAT(d.out, HasSubstr("nvml.driver_version"));
  EXPECT_THAT(d.out, HasSubstr("1 difference(s)"));
}

}  // namespace
}  // namespace tg
