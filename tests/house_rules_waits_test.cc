// House rules about waiting: shell scripts under pipefail never pipe into a reader that stops
// early, and the server's lifecycle waits on conditions, not on sleeps. Each rule has a self-test
// proving it can fail.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "common/strings.h"
#include "tests/support/code_scan.h"
#include "tests/support/test_util.h"

namespace tg {
namespace {
namespace fs = std::filesystem;

// A shell script under `set -o pipefail` must not pipe into a reader that stops early (head,
// grep -q/-m, awk's exit, sed's q): once the writer's output passes the pipe buffer it dies of
// SIGPIPE and the whole pipeline fails with 141, on machines with more output than this one (the
// image build failed that way on a larger ldconfig cache). Read all, or use a here-string.
std::vector<std::string> EarlyExitPipes(const std::string& script) {
  static const std::regex kEarly(
      R"re(\|\s*(head\b|grep\s+(-[A-Za-z]*[qm]|--quiet|--max-count)|awk\b[^|]*\bexit\b|sed\b[^|]*[0-9/]q\b))re");
  std::vector<std::string> out;
  if (script.find("pipefail") == std::string::npos) return out;
  std::istringstream text(script);
  std::string line;
  for (int n = 1; std::getline(text, line); ++n) {
    const std::string code = line.substr(0, line.find(" #"));
    if (common::Trim(code).starts_with("#")) continue;
    if (std::regex_search(code, kEarly)) out.push_back("line " + std::to_string(n) + ": " + line);
  }
  return out;
}

TEST(HouseRulesTest, ThePipeCheckerFindsEarlyExitingReaders) {
  const std::string sample =
      "set -euo pipefail\n"
      "ldconfig -p | awk '$1 == n {print; exit}'\n"
      "ldd x | grep -q san\n"
      "find . | head -n1\n"
      "# ls | head\n"
      "ldconfig -p | awk '$1 == n && !f {print; f = 1}'\n"
      "grep -q san <<<\"${deps}\"\n"
      "x | sed -n 1,16p\n"
      "grep -m1 foo file\n";
  EXPECT_EQ(EarlyExitPipes(sample),
            (std::vector<std::string>{"line 2: ldconfig -p | awk '$1 == n {print; exit}'",
                                      "line 3: ldd x | grep -q san", "line 4: find . | head -n1"}));
  EXPECT_TRUE(EarlyExitPipes("ls | head -n1\n").empty()) << "no pipefail: the status is head's";
}

TEST(HouseRulesTest, NoPipefailScriptPipesIntoAnEarlyExitingReader) {
  const fs::path root(testing::SourceDir());
  std::vector<std::string> offenders;
  int scripts = 0;
  for (const char* dir : {"scripts", "benchmarks", "tests", "tools", ".ci", "deploy"}) {
    for (const auto& f : testing::FilesUnder(root / dir, {".sh"})) {
      const std::string rel = fs::relative(f, root).string();
      if (rel.starts_with("tests/data/")) continue;
      ++scripts;
      for (const auto& o : EarlyExitPipes(testing::ReadFile(f.string()))) {
        offenders.push_back(rel + " " + o);
      }
    }
  }
  EXPECT_GT(scripts, 10) << "the scan found almost no scripts";
  EXPECT_TRUE(offenders.empty()) << ::testing::PrintToString(offenders);
}

// The server's lifecycle waits on conditions, not on time: the drain on the transport's last
// answer, Run on its signal and wake-up descriptors. A sleep or a timed poll in src/server/ would
// bring back the guessed pauses (a drain that sleeps 100 ms hoping the last bytes are out).
std::vector<std::string> TimedWaits(const std::string& code) {
  static const std::regex kTimed(
      R"re(\b(sleep_for|sleep_until|usleep|nanosleep|sigtimedwait)\s*\()re");
  std::vector<std::string> out;
  std::istringstream text(code);
  std::string line;
  for (int n = 1; std::getline(text, line); ++n) {
    const std::string c = line.substr(0, line.find("//"));
    if (std::regex_search(c, kTimed)) out.push_back("line " + std::to_string(n) + ": " + line);
  }
  return out;
}

TEST(HouseRulesTest, TheTimedWaitCheckerFindsSleeps) {
  EXPECT_EQ(TimedWaits("a();\n  std::this_thread::sleep_for(ms);\n// usleep(5)\nsigtimedwait(&s, "
                       "nullptr, &ts);\n")
                .size(),
            2u);
  EXPECT_TRUE(TimedWaits("cv.wait_for(l, limit, pred);\npoll(fds, 2, -1);\n").empty());
}

TEST(HouseRulesTest, TheServerWaitsOnConditionsNotSleeps) {
  const fs::path root(testing::SourceDir());
  std::vector<std::string> offenders;
  int files = 0;
  for (const auto& f : testing::FilesUnder(root / "src" / "server", {".cc", ".h"})) {
    if (f.filename().string().ends_with("_test.cc")) continue;
    ++files;
    for (const auto& o : TimedWaits(testing::ReadFile(f.string()))) {
      offenders.push_back(fs::relative(f, root).string() + " " + o);
    }
  }
  EXPECT_GT(files, 10) << "the scan did not see src/server/";
  EXPECT_TRUE(offenders.empty()) << ::testing::PrintToString(offenders);
}

}  // namespace
}  // namespace tg
