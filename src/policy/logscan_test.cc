#include "policy/logscan.h"

#include <gtest/gtest.h>

#include <set>

namespace tg::policy {
namespace {

bool Matches(const LogScanner& s, const LogPattern& p, const std::string& line) {
  for (const LogPattern* m : s.Match(line)) {
    if (m == &p) return true;
  }
  return false;
}

// Every pattern in the table matches its positive sample and not its negative sample.
TEST(LogScanTest, EveryPatternHasAPositiveAndANegativeLine) {
  LogScanner s;
  std::set<std::string> ids;
  ASSERT_GE(LogPatterns().size(), 15u);
  for (const LogPattern& p : LogPatterns()) {
    SCOPED_TRACE(p.id);
    EXPECT_TRUE(ids.insert(p.id).second) << "duplicate id";
    EXPECT_TRUE(Matches(s, p, p.positive)) << p.positive;
    EXPECT_FALSE(Matches(s, p, p.negative)) << p.negative;
    // Case does not matter: logs vary in capitalisation.
    std::string upper = p.positive;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_TRUE(Matches(s, p, upper)) << upper;
  }
}

TEST(LogScanTest, CoversTheRequiredCategories) {
  std::set<std::string> cats;
  for (const LogPattern& p : LogPatterns()) cats.insert(p.category);
  for (const char* c : {"provider-load-failure", "node-assignment", "memcpy", "cpu-fallback",
                        "tensorrt-engine", "tensorrt-version-mismatch", "tensorrt-engine-rebuild",
                        "driver-too-old", "driver-library-mismatch", "cudnn-version-mismatch"}) {
    EXPECT_TRUE(cats.count(c)) << c;
  }
}

TEST(LogScanTest, CleanLinesDoNotMatch) {
  LogScanner s;
  for (const char* line : {"", "INFO server started on :8000",
                           "[I:onnxruntime:, inference_session.cc] Session created",
                           "All nodes placed on [CUDAExecutionProvider]. Number of nodes: 1200",
                           "TensorRT engine loaded from cache in 1.2 s"}) {
    EXPECT_TRUE(s.Match(line).empty()) << line;
  }
}

TEST(LogScanTest, StreamCountsLinesAndHandlesHugeLines) {
  std::string log = "ok\n";
  log += std::string(200 * 1024, 'x') + " Force fallback to CPU execution for node: late\n";
  log += "Force fallback to CPU execution for node: n1\r\n";
  log += "no newline at end: 2 Memcpy nodes are added to the graph g";
  std::FILE* f = fmemopen(log.data(), log.size(), "r");
  ASSERT_NE(f, nullptr);
  std::vector<LogMatch> got;
  LogScanSummary sum = ScanLogStream(f, [&](const LogMatch& m) { got.push_back(m); });
  std::fclose(f);
  EXPECT_EQ(sum.lines, 4);
  // The match beyond kMaxLineBytes in line 2 is not seen (only the head of a long line is
  // scanned); line 3 (CRLF) and line 4 (no final newline) are.
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].line, 3);
  EXPECT_STREQ(got[0].pattern->id, "ort.force_cpu_fallback");
  EXPECT_EQ(got[0].text, "Force fallback to CPU execution for node: n1");
  EXPECT_EQ(got[1].line, 4);
  EXPECT_STREQ(got[1].pattern->category, "memcpy");
  EXPECT_EQ(sum.matches, 2);
}

TEST(LogScanTest, EveryCategoryMapsToADocumentedExitCode) {
  for (const LogPattern& p : LogPatterns()) {
    const int code = LogCategoryExitCode(p.category);
    EXPECT_TRUE(code == common::kExitIntegrity || code == common::kExitDrift ||
                code == common::kExitPerformance)
        << p.id << " (" << p.category << ") -> " << code;
  }
  EXPECT_EQ(LogCategoryExitCode("no-such-category"), common::kExitInternal);
}

TEST(LogScanTest, ScanExitCodeIsTheMostSevereFinding) {
  LogScanSummary s;
  EXPECT_EQ(LogScanExitCode(s), common::kExitOk);
  s.per_category = {{"memcpy", 3}};
  EXPECT_EQ(LogScanExitCode(s), common::kExitPerformance);
  s.per_category.emplace_back("cudnn-version-mismatch", 1);
  EXPECT_EQ(LogScanExitCode(s), common::kExitDrift);
  s.per_category.emplace_back("cpu-fallback", 1);
  EXPECT_EQ(LogScanExitCode(s), common::kExitIntegrity);
}

}  // namespace
}  // namespace tg::policy
