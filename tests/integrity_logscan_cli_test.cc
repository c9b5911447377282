// `truegreen logscan` end to end: file and stdin, line numbers and categories, exit codes, and a
// large streamed log.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/config.h"
#include "policy/logscan.h"
#include "tests/support/test_util.h"

namespace tg {
namespace {

using ::testing::HasSubstr;

TEST(LogscanCli, ReportsEveryMatchWithLineAndCategory) {
  testing::TempDir dir;
  std::string log = "2025-01-01 INFO starting\n";
  for (const auto& p : policy::LogPatterns()) log += std::string(p.positive) + "\n";
  testing::WriteFile(dir / "server.log", log);
  testing::ProcessResult r = testing::RunTruegreen({"--json", "logscan", dir / "server.log"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  auto j = common::ParseJson(r.out, "stdout");
  ASSERT_TRUE(j.ok()) << r.out;
  EXPECT_EQ((*j)["lines"], policy::LogPatterns().size() + 1);
  // Each pattern's sample is found on its own line (line 1 is clean).
  int line = 1;
  for (const auto& p : policy::LogPatterns()) {
    ++line;
    bool found = false;
    for (const auto& f : (*j)["findings"]) {
      if (f["line"] == line && f["pattern"] == p.id && f["category"] == p.category) found = true;
    }
    EXPECT_TRUE(found) << p.id << " on line " << line;
  }
  testing::ProcessResult h = testing::RunTruegreen({"logscan", dir / "server.log"});
  EXPECT_EQ(h.exit_code, 3);
  EXPECT_THAT(h.out, HasSubstr("server.log:2: [provider-load-failure]"));
  EXPECT_THAT(h.out, HasSubstr("finding(s)"));
}

TEST(LogscanCli, CleanLogExitsZeroAndStdinWorks) {
  testing::ProcessResult clean =
      testing::RunTruegreen({"logscan", "-"}, {}, "INFO ready\nINFO request 1 ok\n");
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  EXPECT_THAT(clean.out, HasSubstr("2 line(s), 0 finding(s)"));
  testing::ProcessResult dirty = testing::RunTruegreen(
      {"logscan"}, {},
      "ok\nCUDA failure 35: CUDA driver version is insufficient for CUDA runtime "
      "version\n");
  EXPECT_EQ(dirty.exit_code, 4);  // a driver older than the runtime: version drift
  EXPECT_THAT(dirty.out, HasSubstr("-:2: [driver-too-old]"));
}

TEST(LogscanCli, LargeLogIsStreamed) {
  testing::TempDir dir;
  std::string chunk;
  for (int i = 0; i < 1000; ++i) {
    chunk += "2025-01-01T00:00:00Z INFO request id=" + std::to_string(i) + " latency_ms=12.5\n";
  }
  std::string log;
  for (int i = 0; i < 40; ++i) log += chunk;  // 40k lines, ~2.5 MB
  log +=
      "[W:onnxruntime:, transformer_memcpy.cc:83 ApplyImpl] 3 Memcpy nodes are added to the "
      "graph main_graph for CUDAExecutionProvider\n";
  testing::WriteFile(dir / "big.log", log);
  testing::ProcessResult r = testing::RunTruegreen({"--json", "logscan", dir / "big.log"});
  EXPECT_EQ(r.exit_code, 5);  // Memcpy nodes only: the slow path
  auto j = common::ParseJson(r.out, "stdout");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["lines"], 40001);
  ASSERT_EQ((*j)["findings"].size(), 1u);
  EXPECT_EQ((*j)["findings"][0]["line"], 40001);
  EXPECT_EQ((*j)["categories"]["memcpy"], 1);
}

}  // namespace
}  // namespace tg
