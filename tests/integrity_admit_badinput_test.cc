// Bad input to admit/doctor/diff: malformed, truncated, wrongly typed, unknown-field, missing,
// unreadable and oversized matrix and snapshot files. Every case exits 2 with a message naming the
// file (and the field or line where there is one), and never crashes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/test_util.h"

namespace tg {
namespace {

using ::testing::HasSubstr;

constexpr const char* kSnapshot = R"({"schema_version": "truegreen.snapshot/v1"})";

struct Bad {
  std::string name;
  std::string matrix;               // content of matrix.yaml ("" = use a valid one)
  std::string snapshot;             // content of snap.json ("" = use a valid one)
  std::vector<std::string> expect;  // substrings of stderr
};

TEST(AdmitBadInput, MalformedFilesExit2NamingFileAndField) {
  const std::string ok_matrix = "name: m\ndevices: {count: 0}\n";
  std::vector<Bad> cases = {
      {"yaml syntax", "cuda: {runtime: \"13.0\"\n", "", {"matrix.yaml:", "invalid YAML"}},
      {"truncated yaml", "driver:\n  minimum: \"580.6", "", {"matrix.yaml:"}},
      {"wrong type",
       "devices:\n  count: [1]\n",
       "",
       {"matrix.yaml:2:", "devices.count", "expected an integer"}},
      {"unknown field",
       "name: m\ncuda:\n  runtim: \"13.0\"\n",
       "",
       {"matrix.yaml:3:3", "unknown field 'cuda.runtim'"}},
      {"bad version", "tensorrt: \"ten\"\n", "", {"matrix.yaml:1:", "field 'tensorrt'"}},
      {"binary garbage", std::string("\x00\xff\xfe\x01", 4), "", {"matrix.yaml"}},
      {"json syntax", ok_matrix, "{\"schema_version\": ", {"snap.json:", "invalid JSON"}},
      {"json wrong type",
       ok_matrix,
       R"({"schema_version": "truegreen.snapshot/v1", "nvml": {"device_count": "two"}})",
       {"snap.json", "nvml.device_count"}},
      {"json unknown field",
       ok_matrix,
       R"({"schema_version": "truegreen.snapshot/v1", "nvmll": {}})",
       {"snap.json", "nvmll"}},
      {"json not an object", ok_matrix, "[1, 2, 3]", {"snap.json"}},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.name);
    testing::TempDir dir;
    testing::WriteFile(dir / "matrix.yaml", c.matrix);
    testing::WriteFile(dir / "snap.json", c.snapshot.empty() ? kSnapshot : c.snapshot);
    for (const char* cmd : {"admit", "doctor"}) {
      testing::ProcessResult r = testing::RunTruegreen(
          {cmd, "--matrix", dir / "matrix.yaml", "--snapshot", dir / "snap.json"});
      EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.out << r.err;
      for (const auto& e : c.expect) EXPECT_THAT(r.err, HasSubstr(e)) << cmd;
    }
  }
}

TEST(AdmitBadInput, MissingUnreadableAndHugeFiles) {
  testing::TempDir dir;
  testing::WriteFile(dir / "snap.json", kSnapshot);
  testing::WriteFile(dir / "m.yaml", "name: m\n");
  std::filesystem::create_directory(dir / "adir");
  testing::WriteFile(dir / "huge.yaml", "name: m\n");
  std::filesystem::resize_file(dir / "huge.yaml", 100ull << 20);  // sparse 100 MB
  testing::WriteFile(dir / "huge.json", "{}");
  std::filesystem::resize_file(dir / "huge.json", 100ull << 20);
  struct Case {
    std::vector<std::string> args;
    std::string expect;
  } cases[] = {
      {{"admit", "--matrix", dir / "nope.yaml", "--snapshot", dir / "snap.json"}, "nope.yaml"},
      {{"admit", "--matrix", dir / "adir", "--snapshot", dir / "snap.json"}, "adir"},
      {{"admit", "--matrix", dir / "huge.yaml", "--snapshot", dir / "snap.json"}, "huge.yaml"},
      {{"admit", "--matrix", dir / "m.yaml", "--snapshot", dir / "nope.json"}, "nope.json"},
      {{"admit", "--matrix", dir / "m.yaml", "--snapshot", dir / "huge.json"}, "huge.json"},
      {{"--policy", dir / "nope.yaml", "doctor", "--snapshot", dir / "snap.json"}, "nope.yaml"},
      {{"diff", dir / "snap.json", dir / "huge.json"}, "huge.json"},
      {{"diff", dir / "nope.json", dir / "snap.json"}, "nope.json"},
      {{"logscan", dir / "nope.log"}, "nope.log"},
      {{"logscan", dir / "adir"}, "adir"},
  };
  for (const Case& c : cases) {
    testing::ProcessResult r = testing::RunTruegreen(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args[0] << " " << c.expect << "\n" << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.expect));
  }
}

TEST(AdmitBadInput, SnapshotFileIsJudgedWithoutProbing) {
  // A hand-written snapshot of a node without anything: admit reads it, never probes.
  testing::TempDir dir;
  testing::WriteFile(dir / "snap.json", kSnapshot);
  testing::ProcessResult r =
      testing::RunTruegreen({"admit", "--snapshot", dir / "snap.json"});  // production matrix
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("FAIL  driver.library"));
  EXPECT_THAT(r.out, HasSubstr("verdict: NOT ACCELERATED"));
}

}  // namespace
}  // namespace tg
