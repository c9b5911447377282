// `logscan --patterns FILE` limits: at most kMaxUserPatterns patterns and kMaxUserPatternNodes
// YAML nodes, counted on the parser's events before a tree is built, so a file of 10^5 patterns
// is refused in memory a small multiple of its size (the child's peak RSS is checked).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include "policy/logscan.h"
#include "tests/support/test_util.h"

namespace tg {
namespace {

using ::testing::HasSubstr;

std::string Patterns(std::size_t n) {
  std::string y = "patterns:\n";
  for (std::size_t i = 0; i < n; ++i) {
    y += "  - id: app.p" + std::to_string(i) + "\n    regex: \"marker" + std::to_string(i) +
         " seen\"\n    category: app\n    advice: look\n";
  }
  return y;
}

TEST(LogscanPatternLimits, AThousandPatternsLoadAndTheNextIsRefusedAtItsLine) {
  testing::TempDir d;
  testing::WriteFile(d / "ok.yaml", Patterns(policy::kMaxUserPatterns));
  auto ok = policy::LogScanner::WithUserPatterns(d / "ok.yaml");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ((*ok)->patterns().size(), policy::LogPatterns().size() + policy::kMaxUserPatterns);
  EXPECT_EQ((*ok)->Match("marker999 seen").size(), 1u);

  testing::WriteFile(d / "over.yaml", Patterns(policy::kMaxUserPatterns + 1));
  auto over = policy::LogScanner::WithUserPatterns(d / "over.yaml");
  ASSERT_FALSE(over.ok());
  // Item 1001 starts on line 2 + 4 * 1000.
  EXPECT_THAT(over.status().message(), HasSubstr(d / "over.yaml" + ":4002:"));
  EXPECT_THAT(over.status().message(), HasSubstr("more than 1000 patterns"));

  // Flow style is counted the same way.
  std::string flow = "patterns: [";
  for (int i = 0; i <= 1000; ++i) flow += "{id: a" + std::to_string(i) + ", regex: x},";
  testing::WriteFile(d / "flow.yaml", flow + "]\n");
  auto f = policy::LogScanner::WithUserPatterns(d / "flow.yaml");
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(f.status().message(), HasSubstr("more than 1000 patterns"));
}

TEST(LogscanPatternLimits, NodeCountIsBoundedToo) {
  // One pattern with 20000 extra keys: few patterns, but a tree of 40000 nodes.
  testing::TempDir d;
  std::string y = "patterns:\n  - id: a\n    regex: x\n    category: c\n    advice: z\n";
  for (int i = 0; i < 20000; ++i) y += "    k" + std::to_string(i) + ": v\n";
  testing::WriteFile(d / "wide.yaml", y);
  auto s = policy::LogScanner::WithUserPatterns(d / "wide.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("more than 16000 YAML nodes"));
  EXPECT_THAT(s.status().message(), HasSubstr(d / "wide.yaml" + ":"));
}

TEST(LogscanPatternLimits, HundredThousandPatternsAreRefusedInBoundedMemory) {
  testing::TempDir d;
  const std::string big = Patterns(100000);  // ~7 MB of YAML (a tree of it took 445 MB)
  testing::WriteFile(d / "huge.yaml", big);
  testing::WriteFile(d / "x.log", "INFO ok\n");
  testing::ProcessResult r =
      testing::RunTruegreen({"logscan", d / "x.log", "--patterns", d / "huge.yaml"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.out + r.err, HasSubstr("more than 1000 patterns"));
  EXPECT_THAT(r.out + r.err, HasSubstr("huge.yaml:4002:"));
  struct rusage ru {};
  getrusage(RUSAGE_CHILDREN, &ru);
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "peak RSS not meaningful under ASan (shadow memory); refused as above";
#else
  // The file (7 MB) is read whole; 64 MiB leaves room for the binary and the built-in table.
  EXPECT_LT(ru.ru_maxrss, 64 * 1024)
      << "peak RSS of the child in KiB, file of " << big.size() << " bytes";
#endif
}

}  // namespace
}  // namespace tg
