#include "policy/logscan.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>

#include "common/strings.h"

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
    const std::string upper = common::Upper(p.positive);
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
    const std::optional<common::Outcome> o = LogCategoryOutcome(p.category);
    ASSERT_TRUE(o.has_value()) << p.id << " (" << p.category << ") has no result";
    const int code = common::ExitCodeFromOutcome(*o);
    EXPECT_TRUE(code == 3 || code == 4 || code == 5)
        << p.id << " (" << p.category << ") -> " << code;
  }
  EXPECT_FALSE(LogCategoryOutcome("no-such-category").has_value());
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
  // A user pattern's category (no result of its own) fails like an integrity finding.
  s.per_category = {{"memcpy", 3}, {"my-own-category", 1}};
  EXPECT_EQ(LogScanOutcome(s), common::Outcome::kNotAccelerated);
  EXPECT_EQ(LogScanExitCode(s), 3);
  // A category counted zero times decides nothing.
  s.per_category = {{"cpu-fallback", 0}, {"memcpy", 1}};
  EXPECT_EQ(LogScanExitCode(s), 5);
}

}  // namespace
}  // namespace tg::policy

namespace tg::policy {
namespace {

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  return path;
}

TEST(LogScanTest, UserPatternsAreMergedWithTheBuiltIns) {
  std::string path = WriteTemp("user_patterns.yaml",
                               "patterns:\n"
                               "  - id: app.oom\n"
                               "    regex: \"cuda out of memory\\\\. tried to allocate\"\n"
                               "    category: memory\n"
                               "    advice: lower the batch size\n"
                               "    needle: out of memory\n"
                               "  - id: app.slow\n"
                               "    regex: \"step took [0-9]{4,} ?ms\"\n"
                               "    category: latency\n"
                               "    advice: profile the step\n");
  auto s = LogScanner::WithUserPatterns(path);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ((*s)->patterns().size(), LogPatterns().size() + 2);
  auto m = (*s)->Match("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_STREQ(m[0]->id, "app.oom");
  EXPECT_STREQ(m[0]->category, "memory");
  ASSERT_EQ((*s)->Match("step took 12345 ms").size(), 1u);
  EXPECT_TRUE((*s)->Match("step took 12 ms").empty());
  // Built-ins still match.
  EXPECT_FALSE((*s)->Match("Failed to initialize NVML: Unknown Error").empty());
}

TEST(LogScanTest, BrokenUserPatternFilesNameLineAndField) {
  struct Case {
    const char* text;
    const char* field;
    const char* line;
  } cases[] = {
      {"patterns:\n  - id: a\n    regex: \"(unclosed\"\n    category: c\n    advice: x\n", "regex",
       ":3:"},
      {"patterns:\n  - id: ort.nodes_not_assigned\n    regex: x\n    category: c\n    advice: x\n",
       "id", ":2:"},
      {"patterns:\n  - id: a\n    regex: x\n    category: c\n", "advice", ":2:"},
      {"patterns:\n  - id: a\n    regex: x\n    category: c\n    advice: x\n    needle: ABC\n",
       "needle", ":6:"},
      {"patterns:\n  - id: a\n    regex: x\n    category: c\n    advice: x\n    colour: red\n",
       "colour", ":"},
      {"patterns: 3\n", "patterns", ":1:"},
  };
  for (const auto& c : cases) {
    std::string path = WriteTemp("bad_patterns.yaml", c.text);
    auto s = LogScanner::WithUserPatterns(path);
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_NE(s.status().message().find(c.field), std::string::npos) << s.status().message();
    EXPECT_NE(s.status().message().find(path + c.line), std::string::npos) << s.status().message();
  }
}

}  // namespace
}  // namespace tg::policy

namespace tg::policy {
namespace {

// The block prefilter skips chunks without a match: findings on chunk boundaries, after long
// lines and near the end are still found at the right line numbers.
TEST(LogScanTest, BlockPrefilterKeepsEveryMatchAndLineNumber) {
  std::string log;
  std::vector<std::int64_t> expected;
  for (int i = 1; i <= 60000; ++i) {
    if (i % 9973 == 0 || i == 60000) {
      log += "Failed to initialize NVML: Unknown Error\n";
      expected.push_back(i);
    } else if (i % 7001 == 0) {
      log += std::string(70000, 'y') + "\n";  // longer than a line may be
    } else {
      log += "INFO request id=" + std::to_string(i) + " status=200 latency_ms=3.2\n";
    }
  }
  std::FILE* f = fmemopen(log.data(), log.size(), "r");
  ASSERT_NE(f, nullptr);
  std::vector<std::int64_t> got;
  LogScanSummary sum = ScanLogStream(f, [&](const LogMatch& m) { got.push_back(m.line); });
  std::fclose(f);
  EXPECT_EQ(sum.lines, 60000);
  EXPECT_EQ(got, expected);
}

}  // namespace
}  // namespace tg::policy

namespace tg::policy {
namespace {

struct TextScan {
  LogScanSummary summary;
  std::vector<LogMatch> matches;
};

TextScan ScanText(const std::string& text) {
  TextScan t;
  std::FILE* f = fmemopen(const_cast<char*>(text.data()), text.size(), "r");
  EXPECT_NE(f, nullptr);
  if (f == nullptr) return t;
  t.summary = ScanLogStream(f, [&](const LogMatch& m) { t.matches.push_back(m); });
  std::fclose(f);
  return t;
}

// Wordings quoted in public ONNX Runtime, TensorRT, NVML and Docker reports that an earlier table
// missed, each at the exit code its meaning calls for.
TEST(LogScanTest, ReportedWordingsAreFoundAtTheirExitCode) {
  struct Case {
    std::string line;
    int exit_code;
  };
  std::vector<Case> cases = {
      {"EP Error: [ONNXRuntimeError] : 1 : FAIL : TensorRT EP failed to create engine from "
       "network. when using ['TensorrtExecutionProvider', 'CUDAExecutionProvider', "
       "'CPUExecutionProvider']\nFalling back to ['CUDAExecutionProvider', "
       "'CPUExecutionProvider'] and retrying.",
       3},
      {"2024-05-01 10:00:00.1 [V:onnxruntime:, session_state.cc:1152 "
       "VerifyEachNodeIsAssignedToAnEp]"
       " All nodes have been placed on [CPUExecutionProvider].",
       3},
      {"[E:onnxruntime:Default, tensorrt_execution_provider.h:88 log] [2024-01-01 00:00:00 ERROR] "
       "[TensorRT EP] could not deserialize engine from cache",
       5},
      {"could not load NVML library: libnvidia-ml.so.1: cannot open shared object file: No such "
       "file or directory",
       3},
      {"docker: Error response from daemon: could not select device driver \"\" with "
       "capabilities: [[gpu]].",
       3},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.line);
    TextScan t = ScanText(c.line + "\n");
    EXPECT_FALSE(t.matches.empty());
    EXPECT_EQ(LogScanExitCode(t.summary), c.exit_code);
  }
}

TEST(LogScanTest, KeyPhraseWrappedAcrossLinesIsFound) {
  const std::string phrase =
      "[W:onnxruntime:, session_state.cc:1280 VerifyEachNodeIsAssignedToAnEp] Some nodes were not "
      "assigned to the preferred execution providers which may or may not have an negative impact";
  // Wrapped where a space was (a word-wrapping console) and inside a word (a fixed-width one).
  for (std::size_t cut : {phrase.find(" assigned"), phrase.find("igned to") - 1}) {
    SCOPED_TRACE(cut);
    std::string wrapped = "info: starting\n" + phrase.substr(0, cut) + "\n" +
                          phrase.substr(cut + (phrase[cut] == ' ' ? 1 : 0)) + "\ninfo: ready\n";
    TextScan t = ScanText(wrapped);
    ASSERT_EQ(t.matches.size(), 1u) << wrapped;
    EXPECT_STREQ(t.matches[0].pattern->id, "ort.nodes_not_assigned");
    EXPECT_EQ(t.matches[0].line, 2);  // reported at the line where the phrase starts
    EXPECT_EQ(LogScanExitCode(t.summary), 3);
    EXPECT_EQ(t.summary.lines, 4);
  }
  // Unrelated neighbouring lines do not combine into findings.
  TextScan healthy = ScanText(
      "[I:onnxruntime:, inference_session.cc:1722 Initialize] Initializing session.\n"
      "Some nodes were\nplaced by the scheduler on node gpu-1\n"
      "0 Memcpy nodes are added to the graph main_graph for CUDAExecutionProvider\n");
  EXPECT_TRUE(healthy.matches.empty()) << healthy.matches.size();
}

}  // namespace
}  // namespace tg::policy
