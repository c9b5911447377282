// Project rules that a reviewer would otherwise have to remember: only runtime/ includes ONNX
// Runtime headers, no file grows past the size budget, no package-registry host names appear
// anywhere in the tracked tree (we fetch by package name and pin by sha256), and nothing the build
// or the tests use lives outside the clone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/strings.h"
#include "tests/support/code_scan.h"
#include "tests/support/test_util.h"

namespace tg {
namespace {
namespace fs = std::filesystem;
using testing::CodeOnly;
using testing::FilesUnder;

TEST(HouseRulesTest, OnlyRuntimeIncludesOrtHeaders) {
  fs::path src = fs::path(testing::SourceDir()) / "src";
  std::regex ort_include(R"re(#\s*include\s*[<"](onnxruntime_|runtime/ort_api\.h))re");
  std::vector<std::string> offenders;
  for (const auto& f : FilesUnder(src, {".cc", ".h"})) {
    if (f.parent_path().filename() == "runtime") continue;
    std::string text = testing::ReadFile(f.string());
    if (std::regex_search(text, ort_include)) offenders.push_back(f.string());
  }
  EXPECT_TRUE(offenders.empty()) << "ORT headers included outside src/runtime/: "
                                 << ::testing::PrintToString(offenders);
}

TEST(HouseRulesTest, SourceFilesStayUnderSizeBudget) {
  constexpr int kMaxLines = 1000;  // house style: files under 1000 lines
  std::vector<std::string> offenders;
  for (const char* dir : {"src", "tests", "benchmarks", "tools"}) {
    for (const auto& f : FilesUnder(fs::path(testing::SourceDir()) / dir, {".cc", ".h"})) {
      std::ifstream in(f);
      int lines = 0;
      std::string line;
      while (std::getline(in, line)) ++lines;
      if (lines > kMaxLines) offenders.push_back(f.string() + " (" + std::to_string(lines) + ")");
    }
  }
  EXPECT_TRUE(offenders.empty()) << ::testing::PrintToString(offenders);
}

// The functions defined in `source` longer than `max_lines` (from the first line of the
// signature to the closing brace), as "line N: L lines". A brace block counts as a function when
// the text before it has a parameter list and is not a namespace, type or initializer.
std::vector<std::string> LongFunctions(const std::string& source, int max_lines) {
  const std::string code = CodeOnly(source);
  static const std::regex kNotAFunction(R"re(^\s*(namespace|struct|class|enum|union|extern)\b)re");
  std::vector<std::string> out;
  struct Open {
    bool function;
    int line;
  };
  std::vector<Open> stack;
  std::string head;
  int head_line = 0, line = 1;
  auto in_function = [&] {
    for (const Open& o : stack) {
      if (o.function) return true;
    }
    return false;
  };
  for (char c : code) {
    if (c == '\n') ++line;
    if (c == '{') {
      const std::string before_paren = head.substr(0, head.find('('));
      const bool function = !in_function() && head.find('(') != std::string::npos &&
                            !std::regex_search(head, kNotAFunction) &&
                            before_paren.find('=') == std::string::npos;
      stack.push_back({function, function ? head_line : line});
      head.clear();
      head_line = 0;
    } else if (c == '}' || c == ';') {
      if (c == '}' && !stack.empty()) {
        const Open o = stack.back();
        stack.pop_back();
        if (o.function && line - o.line + 1 > max_lines) {
          out.push_back("line " + std::to_string(o.line) + ": " +
                        std::to_string(line - o.line + 1) + " lines");
        }
      }
      head.clear();
      head_line = 0;
    } else if (!in_function()) {
      if (head_line == 0 && !std::isspace(static_cast<unsigned char>(c))) head_line = line;
      head += c == '\n' ? ' ' : c;
    }
  }
  return out;
}

TEST(HouseRulesTest, TheFunctionCheckerFindsLongFunctions) {
  std::string body;
  for (int i = 0; i < 85; ++i) body += "  x += \"}{\"; // }\n";
  const std::string src = "namespace a {\nint F(int x) {\n" + body +
                          "  return x;\n}\nconst int kT[] = {1,\n2};\nstruct S {\n  int G() {\n" +
                          "    return 1;\n  }\n};\n}  // namespace a\n";
  EXPECT_EQ(LongFunctions(src, 80), std::vector<std::string>{"line 2: 88 lines"});
  EXPECT_TRUE(LongFunctions(src, 88).empty());
  // A raw string with braces and a preprocessor line with parentheses do not confuse it.
  EXPECT_TRUE(LongFunctions("#if defined(X)\nconst char* k = R\"(}{)\";\nint H() { return 0; }\n"
                            "#endif\n",
                            1)
                  .empty());
}

TEST(HouseRulesTest, FunctionsStayUnder80Lines) {
  // House style: functions under 80 lines. Tests are exempt (their case tables are data).
  std::vector<std::string> offenders;
  int files = 0;
  for (const char* dir : {"src", "benchmarks", "tools"}) {
    for (const auto& f : FilesUnder(fs::path(testing::SourceDir()) / dir, {".cc", ".h"})) {
      if (f.filename().string().ends_with("_test.cc")) continue;
      ++files;
      for (const std::string& o : LongFunctions(testing::ReadFile(f.string()), 80)) {
        offenders.push_back(f.string() + " " + o);
      }
    }
  }
  EXPECT_GT(files, 100) << "the scan found almost no sources";
  EXPECT_TRUE(offenders.empty()) << ::testing::PrintToString(offenders);
}

TEST(HouseRulesTest, NoRegistryHostNamesInTrackedFiles) {
  auto r = testing::RunProcess({"/usr/bin/git", "-C", testing::SourceDir(), "ls-files"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Built from pieces so this file does not itself contain the names it looks for.
  const std::vector<std::string> hosts = {
      std::string("registry.") + "npmjs.org", std::string("deb.") + "debian.org",
      std::string("security.") + "debian.org", std::string("pypi.") + "org",
      std::string("files.") + "pythonhosted.org"};
  std::istringstream files(r.out);
  std::string rel;
  std::vector<std::string> offenders;
  while (std::getline(files, rel)) {
    fs::path p = fs::path(testing::SourceDir()) / rel;
    if (!fs::is_regular_file(p) || fs::file_size(p) > (4u << 20)) continue;
    std::string text = testing::ReadFile(p.string());
    for (const auto& h : hosts) {
      if (text.find(h) != std::string::npos) offenders.push_back(rel + ": " + h);
    }
  }
  EXPECT_TRUE(offenders.empty()) << ::testing::PrintToString(offenders);
}

// A user's clone has nothing beside it: the build, the tests, the demo and the binary read only
// what the repository holds ("clone alone"). CI's checkout happens to have a sibling
// folder of reference material; nothing may depend on it.
TEST(HouseRulesTest, NothingReadsOutsideTheClone) {
  auto r = testing::RunProcess({"/usr/bin/git", "-C", testing::SourceDir(), "ls-files", "--",
                                "CMakeLists.txt", "CMakePresets.json", "Makefile", "cmake",
                                "scripts", "tools", "src", "tests", "benchmarks", ".ci", "deploy"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Built from pieces so this file does not itself contain the path it looks for.
  const std::vector<std::string> needles = {std::string("../") + "shared",
                                            std::string("\"..\", \"") + "shared"};
  std::istringstream files(r.out);
  std::string rel;
  std::vector<std::string> offenders;
  int checked = 0;
  while (std::getline(files, rel)) {
    fs::path p = fs::path(testing::SourceDir()) / rel;
    if (!fs::is_regular_file(p) || fs::file_size(p) > (1u << 20)) continue;
    ++checked;
    std::istringstream text(testing::ReadFile(p.string()));
    std::string line;
    for (int n = 1; std::getline(text, line); ++n) {
      for (const auto& needle : needles) {
        if (line.find(needle) != std::string::npos) {
          offenders.push_back(rel + ":" + std::to_string(n) + ": " + line);
        }
      }
    }
  }
  EXPECT_GT(checked, 100) << "git ls-files listed too few build inputs: " << r.out.size();
  EXPECT_TRUE(offenders.empty()) << ::testing::PrintToString(offenders);
}

// Comments in src/ say what the code does and why, not which issue asked for it: an issue number
// is history a reader cannot act on (the tracker is not part of the clone).
// The word issue (or issues) followed by a number, with or without '#': a reference into this
// project's tracker. A URL into another project's tracker (".../issues/123") does not match.
const std::regex& IssueNumberPattern() {
  static const std::regex kPattern(R"re(\b[Ii]ssues? *#?[0-9]+)re");
  return kPattern;
}

TEST(HouseRulesTest, SourceCommentsCarryNoIssueHistory) {
  const std::regex& issue_re = IssueNumberPattern();
  std::vector<std::string> offenders;
  int files = 0;
  for (const auto& f : FilesUnder(fs::path(testing::SourceDir()) / "src", {".cc", ".h"})) {
    ++files;
    std::istringstream text(testing::ReadFile(f.string()));
    std::string line;
    for (int n = 1; std::getline(text, line); ++n) {
      const std::size_t comment = line.find("//");
      if (comment == std::string::npos) continue;
      const std::string tail = line.substr(comment);
      if (std::regex_search(tail, issue_re)) {
        offenders.push_back(f.string() + ":" + std::to_string(n) + ": " + line);
      }
    }
  }
  EXPECT_GT(files, 100) << "the scan found almost no sources";
  EXPECT_TRUE(offenders.empty()) << ::testing::PrintToString(offenders);
  // The pattern itself: history matches, a word that merely starts the same does not. The
  // strings are built from pieces so this file passes its own rule.
  const std::string word = "iss" + std::string("ue");
  EXPECT_TRUE(std::regex_search("// (" + word + " 14 §3)", issue_re));
  EXPECT_TRUE(std::regex_search("// I" + word.substr(1) + "s 11 and 13", issue_re));
  EXPECT_TRUE(std::regex_search("see " + word + " #12", issue_re));
  EXPECT_FALSE(std::regex_search("// re" + word + " 3 requests", issue_re));
  EXPECT_FALSE(std::regex_search("// the " + word + " is 3 bytes", issue_re));
  // A link to another project's tracker is a source, not history: it stays allowed.
  EXPECT_FALSE(std::regex_search("https://github.com/o/r/" + word + "s/123", issue_re));
}

// Tests, benchmarks, scripts and docs follow the same rule as src/: they say what is checked or
// measured, not which issue asked for it, on every line (not only comments: a doc is all text).
// Test data (tests/data, which quotes public bug reports) is exempt; a doc that needs another
// project's bug report links to it by URL, which the pattern allows.
TEST(HouseRulesTest, TestsBenchScriptsAndDocsCarryNoIssueHistory) {
  const fs::path root = testing::SourceDir();
  std::vector<fs::path> files;
  for (const char* dir : {"tests", "benchmarks", "scripts", "tools"}) {
    for (const auto& f : FilesUnder(root / dir, {".cc", ".h", ".sh", ".py", ".yaml"})) {
      const std::string rel = f.lexically_relative(root).string();
      if (rel.starts_with("tests/data/") || rel.starts_with("tests/fuzz_corpus/")) continue;
      files.push_back(f);
    }
  }
  for (const auto& f : FilesUnder(root / "docs", {".md"})) files.push_back(f);
  files.push_back(root / "README.md");
  std::vector<std::string> offenders;
  for (const auto& f : files) {
    std::istringstream text(testing::ReadFile(f.string()));
    std::string line;
    for (int n = 1; std::getline(text, line); ++n) {
      if (std::regex_search(line, IssueNumberPattern())) {
        offenders.push_back(f.lexically_relative(root).string() + ":" + std::to_string(n) + ": " +
                            line);
      }
    }
  }
  EXPECT_GT(files.size(), 100u) << "the scan found almost no files";
  EXPECT_TRUE(offenders.empty()) << ::testing::PrintToString(offenders);
}

// The CLIP merges file the tokenizer tests and the tiny pipelines are built from ships with its
// licence, unmodified (sha256 of OpenAI's bpe_simple_vocab_16e6.txt.gz).
TEST(HouseRulesTest, ClipMergesShipWithTheirLicence) {
  std::string gz = testing::ClipMergesFile();
  ASSERT_TRUE(fs::is_regular_file(gz)) << gz;
  fs::path licence = fs::path(gz).parent_path() / "LICENSE";
  ASSERT_TRUE(fs::is_regular_file(licence)) << licence;
  EXPECT_NE(testing::ReadFile(licence.string()).find("MIT License"), std::string::npos);
  auto r = testing::RunProcess({"/usr/bin/sha256sum", gz});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, 64),
            "924691ac288e54409236115652ad4aa250f48203de50a9e4722a6ecd48d6804a");
}

}  // namespace
}  // namespace tg

// ---- Module dependency order: derived from the includes, never from a list. ----
namespace tg {
namespace {

// What each module under src/ may include besides itself: common <- probe <- policy <- runtime <-
// sd <- server/bench/cli; audit <- policy; deploy <- audit. A module not in this table fails the
// test, so a new module has to be placed in the order deliberately.
const std::map<std::string, std::set<std::string>>& AllowedModuleDeps() {
  static const std::map<std::string, std::set<std::string>> kAllowed = {
      {"common", {}},
      {"probe", {"common"}},
      {"policy", {"common", "probe"}},
      {"audit", {"common", "probe", "policy"}},
      {"deploy", {"common", "probe", "policy", "audit"}},
      {"runtime", {"common", "probe", "policy"}},
      {"sd", {"common", "probe", "policy", "runtime"}},
      {"server", {"common", "probe", "policy", "runtime", "sd"}},
      {"bench", {"common", "probe", "policy", "runtime", "sd"}},
      {"cli", {"common", "probe", "policy", "runtime", "sd", "audit", "deploy", "server", "bench"}},
  };
  return kAllowed;
}

TEST(HouseRulesTest, ModuleIncludesFollowTheDependencyOrder) {
  const std::filesystem::path src = std::filesystem::path(testing::SourceDir()) / "src";
  const std::regex include_re(R"re(^\s*#\s*include\s*"([a-z_0-9]+)/([^"]+)")re");
  std::vector<std::string> offenders;
  int includes_seen = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(src)) {
    const std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".cc" && ext != ".h")) continue;
    const std::string module = e.path().lexically_relative(src).begin()->string();
    auto allowed = AllowedModuleDeps().find(module);
    if (allowed == AllowedModuleDeps().end()) {
      offenders.push_back(e.path().string() + ": module '" + module + "' is not in the order");
      continue;
    }
    std::ifstream in(e.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      std::smatch m;
      if (!std::regex_search(line, m, include_re)) continue;
      const std::string target = m[1].str(), header = m[2].str();
      if (!std::filesystem::is_directory(src / target)) continue;  // tests/, third-party dirs
      ++includes_seen;
      const std::string where = e.path().string() + ":" + std::to_string(n) + ": ";
      if (target != module && !allowed->second.contains(target)) {
        offenders.push_back(where + module + " includes " + target + "/" + header +
                            " against the order common <- probe <- policy <- runtime <- sd <- "
                            "server/bench/cli; audit <- policy; deploy <- audit");
      }
      if (target != module && header.ends_with("_internal.h")) {
        offenders.push_back(where + module + " includes another module's internal header " +
                            target + "/" + header);
      }
    }
  }
  EXPECT_GT(includes_seen, 50) << "the include scan found almost nothing: is the regex wrong?";
  EXPECT_TRUE(offenders.empty()) << ::testing::PrintToString(offenders);
}

// The module order as docs/ARCHITECTURE.md states it ("a ← b ← c/d ← e, and f ← g"): each module
// may include the modules before it in a chain and what those may include.
std::map<std::string, std::set<std::string>> ParseModuleOrder(const std::string& text) {
  std::map<std::string, std::set<std::string>> allowed;
  std::string rest = text;
  std::vector<std::string> chains;
  for (std::size_t at; (at = rest.find(", and ")) != std::string::npos;) {
    chains.push_back(rest.substr(0, at));
    rest = rest.substr(at + 6);
  }
  chains.push_back(rest);
  const std::string arrow = " \u2190 ";
  for (bool changed = true; changed;) {  // until the transitive closure stops growing
    changed = false;
    for (const std::string& chain : chains) {
      std::vector<std::string> before;
      std::string c = chain + arrow;
      for (std::size_t at; (at = c.find(arrow)) != std::string::npos;
           c = c.substr(at + arrow.size())) {
        std::vector<std::string> level;
        std::stringstream ss(c.substr(0, at));
        for (std::string m; std::getline(ss, m, '/');) level.push_back(m);
        for (const std::string& m : level) {
          auto& a = allowed[m];
          const std::size_t n = a.size();
          for (const std::string& b : before) {
            a.insert(b);
            const auto deps = allowed[b];
            a.insert(deps.begin(), deps.end());
          }
          changed = changed || a.size() != n;
        }
        before.insert(before.end(), level.begin(), level.end());
      }
    }
  }
  return allowed;
}

TEST(HouseRulesTest, ArchitectureDocStatesTheModuleOrderTheIncludesFollow) {
  const std::string doc = testing::ReadFile(testing::SourceDir() + "/docs/ARCHITECTURE.md");
  const std::string lead = "Dependencies run one way: ";
  const std::size_t at = doc.find(lead);
  ASSERT_NE(at, std::string::npos) << "docs/ARCHITECTURE.md no longer states the module order";
  const std::size_t end = doc.find(';', at);
  ASSERT_NE(end, std::string::npos);
  std::string order = doc.substr(at + lead.size(), end - at - lead.size());
  for (char& c : order) c = c == '\n' ? ' ' : c;
  EXPECT_EQ(ParseModuleOrder(order), AllowedModuleDeps()) << "stated: " << order;
  // The parser itself: a chain, a shared level and a second chain.
  const auto parsed = ParseModuleOrder("a \u2190 b/c \u2190 d, and b \u2190 e");
  EXPECT_EQ(parsed.at("d"), (std::set<std::string>{"a", "b", "c"}));
  EXPECT_EQ(parsed.at("e"), (std::set<std::string>{"a", "b"}));
  EXPECT_TRUE(parsed.at("a").empty());
}

// A test named in a doc or a comment ("ConfigTest.JsonParseBuildsTheSameDocumentAsNlohmann", as
// gtest spells it) exists: a renamed or removed test cannot leave a pointer to nothing behind.
TEST(HouseRulesTest, TestsNamedInDocsAndCommentsExist) {
  const fs::path root = testing::SourceDir();
  const std::regex test_re(R"re(^TEST(_F|_P)?\((\w+),\s*(\w+)\))re");
  std::set<std::string> tests, suites;
  std::vector<fs::path> sources;
  for (const char* dir : {"src", "tests", "benchmarks", "scripts", "tools"}) {
    for (const auto& f : FilesUnder(root / dir, {".cc", ".h", ".sh", ".py"})) sources.push_back(f);
  }
  for (const auto& f : sources) {
    if (!f.filename().string().ends_with("_test.cc")) continue;
    std::istringstream text(testing::ReadFile(f.string()));
    for (std::string line; std::getline(text, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, test_re)) continue;
      suites.insert(m[2].str());
      tests.insert(m[2].str() + "." + m[3].str());
    }
  }
  for (const auto& f : FilesUnder(root / "docs", {".md"})) sources.push_back(f);
  sources.push_back(root / "README.md");
  const std::regex name_re(R"re(\b([A-Z][A-Za-z0-9]*)\.([A-Z][A-Za-z0-9]+)\b)re");
  std::vector<std::string> missing;
  int named = 0;
  for (const auto& f : sources) {
    const std::string text = testing::ReadFile(f.string());
    for (std::sregex_iterator it(text.begin(), text.end(), name_re), e; it != e; ++it) {
      if (!suites.contains((*it)[1].str())) continue;
      ++named;
      if (!tests.contains((*it)[0].str())) {
        missing.push_back(f.lexically_relative(root).string() + ": " + (*it)[0].str());
      }
    }
  }
  EXPECT_GT(tests.size(), 300u) << "the TEST scan found almost nothing: is the regex wrong?";
  EXPECT_GT(named, 3) << "no test is named anywhere: is the regex wrong?";
  EXPECT_TRUE(missing.empty()) << ::testing::PrintToString(missing);
}

// docs/PERFORMANCE.md is where every benchmark's command and figures live: it names each
// benchmarks/*_bench.cc and benchmarks/*.sh (helper libraries, *_lib.sh, aside), every BM_
// benchmark it quotes is one the bench sources define, and every repository path it names exists.
TEST(HouseRulesTest, PerformanceDocCoversTheBenchmarksThatExist) {
  const fs::path root = testing::SourceDir();
  const std::string doc = testing::ReadFile((root / "docs/PERFORMANCE.md").string());
  std::string sources;
  std::vector<std::string> offenders;
  for (const auto& f : FilesUnder(root / "benchmarks", {".cc", ".sh"})) {
    const std::string rel = f.lexically_relative(root).string();
    if (f.extension() == ".cc") sources += testing::ReadFile(f.string());
    const bool bench =
        rel.ends_with("_bench.cc") || (rel.ends_with(".sh") && !rel.ends_with("_lib.sh"));
    if (bench && doc.find(rel) == std::string::npos) {
      offenders.push_back(rel + " is not in docs/PERFORMANCE.md");
    }
  }
  const std::regex bm_re(R"re(\bBM_[A-Za-z0-9_]+)re");
  std::set<std::string> quoted;
  for (std::sregex_iterator it(doc.begin(), doc.end(), bm_re), e; it != e; ++it) {
    quoted.insert((*it)[0].str());
  }
  for (const std::string& bm : quoted) {
    if (!std::regex_search(sources, std::regex("\\b" + bm + "\\b"))) {
      offenders.push_back(bm + " is quoted but no benchmarks/*.cc defines it");
    }
  }
  const std::regex path_re(
      R"re(\b(benchmarks|scripts|tools|tests|docs|deploy|src)/[A-Za-z0-9_./-]*[A-Za-z0-9_])re");
  int paths = 0;
  for (std::sregex_iterator it(doc.begin(), doc.end(), path_re), e; it != e; ++it) {
    const std::string p = (*it)[0].str();
    ++paths;
    // A test binary is named without its .cc ("tests/sd_generator_test").
    if (!fs::exists(root / p) && !fs::exists(root / (p + ".cc"))) {
      offenders.push_back(p + " is named but does not exist");
    }
  }
  EXPECT_GT(quoted.size(), 10u) << "almost no BM_ names found: is the regex wrong?";
  EXPECT_GT(paths, 10) << "almost no paths found: is the regex wrong?";
  EXPECT_TRUE(offenders.empty()) << ::testing::PrintToString(offenders);
}

// Every build/bin/NAME a doc quotes is a binary the build makes: truegreen, a benchmark
// (benchmarks/NAME.cc), an integration test (tests/NAME.cc) or a module's unit tests (NAME =
// <module>_unit_tests or <module>_gpu_tests).
TEST(HouseRulesTest, DocsQuoteOnlyBinariesTheBuildMakes) {
  const fs::path root = testing::SourceDir();
  std::vector<fs::path> docs = FilesUnder(root / "docs", {".md"});
  docs.push_back(root / "README.md");
  const std::regex bin_re(R"re(build/bin/([a-z0-9_]+))re");
  const std::regex module_tests_re(R"re(([a-z]+)_(unit|gpu)_tests)re");
  std::vector<std::string> offenders;
  int quoted = 0;
  for (const auto& f : docs) {
    const std::string text = testing::ReadFile(f.string());
    for (std::sregex_iterator it(text.begin(), text.end(), bin_re), e; it != e; ++it) {
      const std::string name = (*it)[1].str();
      ++quoted;
      std::smatch m;
      const bool made = name == "truegreen" || fs::exists(root / "benchmarks" / (name + ".cc")) ||
                        fs::exists(root / "tests" / (name + ".cc")) ||
                        (std::regex_match(name, m, module_tests_re) &&
                         fs::is_directory(root / "src" / m[1].str()));
      if (!made) offenders.push_back(f.lexically_relative(root).string() + ": build/bin/" + name);
    }
  }
  EXPECT_GT(quoted, 5) << "almost no build/bin/ names found: is the regex wrong?";
  EXPECT_TRUE(offenders.empty()) << ::testing::PrintToString(offenders);
}

// The README's command table lists every command a user can run (hidden ones aside), each group's
// subcommands included ("`truegreen audit image\|dockerfile\|k8s`"), and nothing that is not one.
TEST(HouseRulesTest, ReadmeCommandTableListsTheCliCommands) {
  const std::string readme = testing::ReadFile(testing::SourceDir() + "/README.md");
  const std::size_t from = readme.find("\n## Commands\n");
  ASSERT_NE(from, std::string::npos) << "README no longer has its Commands section";
  std::istringstream rows(readme.substr(from, readme.find("\n## ", from + 1) - from));
  const std::regex code_re("`([^`]+)`");
  std::set<std::string> listed;
  for (std::string row; std::getline(rows, row);) {
    if (!row.starts_with("| `truegreen ")) continue;
    const std::string cell = row.substr(1, row.find(" | ") - 1);
    for (std::sregex_iterator it(cell.begin(), cell.end(), code_re), e; it != e; ++it) {
      std::vector<std::string> words = testing::CliWords((*it)[1].str());
      if (!words.empty() && words[0] == "truegreen") words.erase(words.begin());
      if (words.empty()) continue;
      std::vector<std::string> subs;
      if (words.size() > 1 && std::islower(static_cast<unsigned char>(words[1][0]))) {
        std::stringstream alternatives(words[1]);
        for (std::string s; std::getline(alternatives, s, '|');) {
          if (s.ends_with("\\")) s.pop_back();
          subs.push_back(s);
        }
      }
      if (subs.empty()) listed.insert(words[0]);
      for (const std::string& s : subs) listed.insert(words[0] + " " + s);
    }
  }
  std::set<std::string> commands;
  std::function<void(const common::Json&)> collect = [&](const common::Json& node) {
    if (node.value("hidden", false)) return;
    if (node["subcommands"].empty()) {
      commands.insert(node["path"].get<std::string>());
      return;
    }
    for (const auto& c : node["subcommands"]) collect(c);
  };
  collect(testing::CliTree());
  EXPECT_GT(commands.size(), 10u) << "the CLI tree has almost no commands";
  EXPECT_EQ(listed, commands) << "README's Commands table vs `truegreen __cli-tree`";
}

void CollectPolicyReaders(const common::Json& node, std::set<std::string>* out) {
  if (node.value("hidden", false)) return;
  if (node["subcommands"].empty()) {
    if (node.value("reads_policy", false)) out->insert(node["path"].get<std::string>());
    return;
  }
  for (const auto& c : node["subcommands"]) CollectPolicyReaders(c, out);
}

TEST(HouseRulesTest, ReadmeListsTheCommandsThatReadPolicy) {
  const std::string readme = testing::ReadFile(testing::SourceDir() + "/README.md");
  const std::size_t row = readme.find("| `--policy ");
  ASSERT_NE(row, std::string::npos) << "README no longer has the --policy row";
  const std::size_t from = readme.find("Read by ", row);
  const std::size_t to = readme.find(" (", from);
  ASSERT_TRUE(from != std::string::npos && to != std::string::npos);
  std::set<std::string> listed;
  const std::regex name_re("`([a-z0-9 -]+)`");
  const std::string list = readme.substr(from, to - from);
  for (std::sregex_iterator it(list.begin(), list.end(), name_re), e; it != e; ++it) {
    listed.insert((*it)[1].str());
  }
  std::set<std::string> readers;
  CollectPolicyReaders(testing::CliTree(), &readers);
  ASSERT_FALSE(readers.empty());
  // A listed name covers a command or a command group ("engines": engines build, engines verify).
  for (const std::string& r : readers) {
    bool covered = false;
    for (const std::string& l : listed) covered = covered || r == l || r.starts_with(l + " ");
    EXPECT_TRUE(covered) << "`" << r << "` reads --policy but the README does not say so";
  }
  for (const std::string& l : listed) {
    bool reads = false;
    for (const std::string& r : readers) reads = reads || r == l || r.starts_with(l + " ");
    EXPECT_TRUE(reads) << "the README says `" << l << "` reads --policy; it does not";
  }
}

}  // namespace
}  // namespace tg

namespace tg {
namespace {

// The non-zero exit codes named in `source`'s code (comments and strings ignored): every
// `kExit<Name>` other than kExitOk, as "line N: kExitName".
std::vector<std::string> ExitCodeNames(const std::string& source) {
  const std::string code = CodeOnly(source);
  static const std::regex name(R"(\bkExit([A-Z]\w*))");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(code.begin(), code.end(), name); it != std::sregex_iterator();
       ++it) {
    if ((*it)[1] == "Ok") continue;
    const auto line = std::count(code.begin(), code.begin() + it->position(), '\n') + 1;
    out.push_back("line " + std::to_string(line) + ": " + it->str());
  }
  return out;
}

TEST(HouseRulesTest, TheExitCodeCheckerFindsNamedCodes) {
  const std::string sample =
      "// kExitUsage in a comment\n"
      "int A() { return kExitOk; }\n"
      "int B(bool f) { return f ? common::kExitPerformance : kExitOk; }\n"
      "constexpr int kExitInterrupted = 130;  // kExitDrift\n"
      "const char* s = \"kExitAudit\";\n";
  EXPECT_EQ(ExitCodeNames(sample),
            (std::vector<std::string>{"line 3: kExitPerformance", "line 4: kExitInterrupted"}));
}

// One Status->exit mapping (common::ExitCodeFromStatus) and one result->exit mapping
// (common::ExitCodeFromOutcome): no other code picks a non-zero exit code by name, so a new
// result or a changed code is decided in one place. Tests are exempt (they state expectations).
TEST(HouseRulesTest, OnlyTheMappingsNameANonZeroExitCode) {
  const fs::path root(testing::SourceDir());
  const std::set<std::string> mappings = {"src/common/status.h", "src/common/status.cc",
                                          "src/common/outcome.cc"};
  std::vector<std::string> offenders;
  int mapping_hits = 0;
  for (const auto& f : FilesUnder(root / "src", {".cc", ".h"})) {
    const std::string rel = fs::relative(f, root).string();
    if (f.filename().string().ends_with("_test.cc")) continue;
    const std::vector<std::string> names = ExitCodeNames(testing::ReadFile(f.string()));
    if (mappings.count(rel)) {
      mapping_hits += static_cast<int>(names.size());
      continue;
    }
    for (const auto& n : names) offenders.push_back(rel + " " + n);
  }
  // The mappings themselves name every code: a scan that finds none there found nothing.
  EXPECT_GE(mapping_hits, 6) << "the scan did not see the mappings' exit codes";
  EXPECT_TRUE(offenders.empty())
      << "return common::ExitCodeFromOutcome(common::Outcome::k...) for a result (common/"
         "outcome.h), ReportError(status) for an error: "
      << ::testing::PrintToString(offenders);
}

// The literal non-zero exit codes in `source`'s code (comments and strings ignored), as
// "line N: text":
//  - every `exit(N)`, `_exit(N)`, `_Exit(N)` or `quick_exit(N)` (std:: or :: qualified or not)
//    with a non-zero integer literal, wherever it stands: each ends the process with that code;
//  - every `return N;` with a non-zero integer literal in the body of an exit path: `main`, a
//    function named in `exit_paths`, or, when `every_int_function` (a src/cli/ file), any function
//    declared to return `int` (command.h: a runner returns the process exit code, and so do the
//    helpers it returns through). Lambdas inside such a body count as the body. Other int
//    functions (a count, an HTTP status, a rank) are not exit paths and may return any literal.
std::vector<std::string> LiteralExitCodes(const std::string& source, bool every_int_function,
                                          const std::set<std::string>& exit_paths = {}) {
  const std::string code = CodeOnly(source);
  static const std::regex kNotAFunction(R"re(^\s*(namespace|struct|class|enum|union|extern)\b)re");
  static const std::regex kIntFunction(R"re((^|[^\w:])int\s+(\w+::)*(\w+)\s*\($)re");
  // [begin, end) offsets of the exit paths' bodies.
  std::vector<std::pair<std::size_t, std::size_t>> bodies;
  struct Open {
    bool function, exit_path;
    std::size_t at;
  };
  std::vector<Open> stack;
  std::string head;
  auto in_function = [&] {
    return std::any_of(stack.begin(), stack.end(), [](const Open& o) { return o.function; });
  };
  for (std::size_t i = 0; i < code.size(); ++i) {
    const char c = code[i];
    if (c == '{') {
      const std::size_t paren = head.find('(');
      const bool function = !in_function() && paren != std::string::npos &&
                            !std::regex_search(head, kNotAFunction) &&
                            head.substr(0, paren).find('=') == std::string::npos;
      bool exit_path = false;
      std::smatch m;
      const std::string signature = head.substr(0, paren == std::string::npos ? 0 : paren + 1);
      if (function && std::regex_search(signature, m, kIntFunction)) {
        const std::string name = m[3];
        exit_path = name == "main" || every_int_function || exit_paths.count(name) > 0;
      }
      stack.push_back({function, exit_path, i});
      head.clear();
    } else if (c == '}' || c == ';') {
      if (c == '}' && !stack.empty()) {
        if (stack.back().exit_path) bodies.emplace_back(stack.back().at, i);
        stack.pop_back();
      }
      head.clear();
    } else if (!in_function()) {
      head += c == '\n' ? ' ' : c;
    }
  }
  struct Hit {
    std::size_t at;
    std::string text;
  };
  std::vector<Hit> hits;
  static const std::regex kExitCall(
      R"re((^|[^\w.>:])((std)?::)?(_exit|exit|_Exit|quick_exit)\s*\(\s*([0-9]+)\s*\))re");
  for (auto it = std::sregex_iterator(code.begin(), code.end(), kExitCall);
       it != std::sregex_iterator(); ++it) {
    if (std::stoll((*it)[5]) == 0) continue;
    const auto lead = static_cast<std::size_t>(it->length(1));  // the character before the call
    hits.push_back({static_cast<std::size_t>(it->position()) + lead, it->str().substr(lead)});
  }
  static const std::regex kReturn(R"re(\breturn\s+([0-9]+)\s*;)re");
  for (auto it = std::sregex_iterator(code.begin(), code.end(), kReturn);
       it != std::sregex_iterator(); ++it) {
    const std::size_t at = static_cast<std::size_t>(it->position());
    if (std::stoll((*it)[1]) == 0) continue;
    const bool in_exit_path = std::any_of(
        bodies.begin(), bodies.end(), [&](const auto& b) { return b.first < at && at < b.second; });
    if (in_exit_path) hits.push_back({at, it->str()});
  }
  std::sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) { return a.at < b.at; });
  std::vector<std::string> out;
  for (const Hit& h : hits) {
    const auto line = std::count(code.begin(), code.begin() + static_cast<long>(h.at), '\n') + 1;
    out.push_back("line " + std::to_string(line) + ": " + h.text);
  }
  return out;
}

TEST(HouseRulesTest, TheLiteralExitCheckerFindsLiteralCodesInExitPaths) {
  const std::string sample =
      "// return 3; in a comment\n"
      "int main(int argc, char** argv) {\n"
      "  if (argc > 5) return 3;\n"
      "  const char* s = \"return 4;\";\n"
      "  return 0;\n"
      "}\n"
      "int Count(const std::vector<int>& v) { if (v.empty()) return 1; return 2; }\n"
      "int RunChild() {\n"
      "  auto f = [&]() -> int { return 7; };\n"
      "  return f();\n"
      "}\n"
      "void Die() { std::exit(2); }\n"
      "void Child() { ::_exit(127); }\n"
      "void Fine() { exit(0); app.exit(e); }\n"
      "int F() { return common::ExitCodeFromStatus(s); }\n";
  EXPECT_EQ(LiteralExitCodes(sample, false, {"RunChild"}),
            (std::vector<std::string>{"line 3: return 3;", "line 9: return 7;",
                                      "line 12: std::exit(2)", "line 13: ::_exit(127)"}));
  // In a src/cli/ file every int function is an exit path: Count's literals are codes there.
  EXPECT_EQ(LiteralExitCodes(sample, true).size(), 6u);
  EXPECT_EQ(LiteralExitCodes(sample, false).size(), 3u);  // RunChild not named: its 7 is no code
}

// The functions outside src/cli/ whose int value is a process's exit code: the bodies of the
// hidden child subcommands. Each must exist (a renamed one would silently leave the rule).
const std::set<std::string>& ExitPathsOutsideCli() {
  static const std::set<std::string> kPaths = {"RunCanaryChild"};
  return kPaths;
}

// No code picks a non-zero exit code as a literal either: a command's `return 3;` or an
// `exit(3)` would bypass the two mappings the named-code rule above protects. Tests are exempt.
TEST(HouseRulesTest, NoLiteralNonZeroExitCodeOutsideTheMappings) {
  const fs::path root(testing::SourceDir());
  const std::set<std::string> mappings = {"src/common/status.cc", "src/common/outcome.cc"};
  std::vector<std::string> offenders;
  std::set<std::string> paths_seen;
  int cli_files = 0;
  for (const auto& f : FilesUnder(root / "src", {".cc", ".h"})) {
    const std::string rel = fs::relative(f, root).string();
    if (f.filename().string().ends_with("_test.cc") || mappings.count(rel)) continue;
    const std::string text = testing::ReadFile(f.string());
    const bool cli = rel.starts_with("src/cli/");
    cli_files += cli ? 1 : 0;
    for (const auto& name : ExitPathsOutsideCli()) {
      if (text.find(" " + name + "(") != std::string::npos) paths_seen.insert(name);
    }
    for (const auto& o : LiteralExitCodes(text, cli, ExitPathsOutsideCli())) {
      offenders.push_back(rel + " " + o);
    }
  }
  EXPECT_GT(cli_files, 10) << "the scan did not see src/cli/";
  EXPECT_EQ(paths_seen, ExitPathsOutsideCli()) << "an exit path named here no longer exists";
  EXPECT_TRUE(offenders.empty())
      << "return common::ExitCodeFromOutcome(...) or ExitCodeFromStatus(...), or ReportError(s): "
      << ::testing::PrintToString(offenders);
}

}  // namespace
}  // namespace tg
