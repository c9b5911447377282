// Project rules that a reviewer would otherwise have to remember: only runtime/ includes ONNX
// Runtime headers, no file grows past the size budget, no package-registry host names appear
// anywhere in the tracked tree (we fetch by package name and pin by sha256), and nothing the build
// or the tests use lives outside the clone.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/test_util.h"

namespace tg {
namespace {
namespace fs = std::filesystem;

std::vector<fs::path> FilesUnder(const fs::path& root, const std::vector<std::string>& exts) {
  std::vector<fs::path> out;
  if (!fs::exists(root)) return out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    std::string ext = e.path().extension().string();
    for (const auto& want : exts) {
      if (ext == want) out.push_back(e.path());
    }
  }
  return out;
}

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
  for (const char* dir : {"src", "tests", "bench", "tools"}) {
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

// `text` with comments, string and character literals (raw strings included) and preprocessor
// lines blanked out, newlines kept, so braces can be counted.
std::string CodeOnly(const std::string& text) {
  std::string out;
  const std::size_t n = text.size();
  std::size_t i = 0;
  auto keep_newlines = [&](std::size_t from, std::size_t to) {
    for (std::size_t k = from; k < to && k < n; ++k) {
      if (text[k] == '\n') out += '\n';
    }
  };
  bool line_start = true;
  while (i < n) {
    const char c = text[i];
    if (line_start && (c == ' ' || c == '\t')) {
      out += c;
      ++i;
      continue;
    }
    if (line_start && c == '#') {  // a preprocessor line (continuations are rare enough)
      std::size_t e = text.find('\n', i);
      i = e == std::string::npos ? n : e;
      continue;
    }
    line_start = c == '\n';
    if (text.compare(i, 2, "//") == 0) {
      std::size_t e = text.find('\n', i);
      i = e == std::string::npos ? n : e;
    } else if (text.compare(i, 2, "/*") == 0) {
      std::size_t e = text.find("*/", i + 2);
      e = e == std::string::npos ? n : e + 2;
      keep_newlines(i, e);
      i = e;
    } else if (c == 'R' && i + 1 < n && text[i + 1] == '"' &&
               (i == 0 ||
                !(std::isalnum(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '_'))) {
      const std::size_t open = text.find('(', i + 2);
      const std::string end = ")" + text.substr(i + 2, open - i - 2) + "\"";
      std::size_t e = open == std::string::npos ? n : text.find(end, open);
      e = e == std::string::npos ? n : e + end.size();
      keep_newlines(i, e);
      out += "\"\"";
      i = e;
    } else if (c == '"' ||
               (c == '\'' && !(i > 0 && std::isxdigit(static_cast<unsigned char>(text[i - 1]))))) {
      std::size_t j = i + 1;
      while (j < n && text[j] != c && text[j] != '\n') j += text[j] == '\\' ? 2 : 1;
      out += "\"\"";
      i = j + 1;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
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
  for (const char* dir : {"src", "bench", "tools"}) {
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
                                "scripts", "tools", "src", "tests", "bench", ".ci", "deploy"});
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

// Comments in src/ say what the code does and why, not which issue asked for it: "issue 11" is
// history a reader cannot act on (the tracker is not part of the clone).
TEST(HouseRulesTest, SourceCommentsCarryNoIssueHistory) {
  const std::regex issue_re(R"re(\b[Ii]ssues? *#?[0-9]+)re");
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
  // The pattern itself: history matches, a word that merely starts the same does not.
  EXPECT_TRUE(std::regex_search(std::string("// (issue 14 §3)"), issue_re));
  EXPECT_TRUE(std::regex_search(std::string("// Issues 11 and 13"), issue_re));
  EXPECT_FALSE(std::regex_search(std::string("// reissue 3 requests"), issue_re));
  EXPECT_FALSE(std::regex_search(std::string("// the issue is 3 bytes"), issue_re));
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
// sd <- server/bench/cli; audit <- policy. A module not in this table fails the test, so a new
// module has to be placed in the order deliberately.
const std::map<std::string, std::set<std::string>>& AllowedModuleDeps() {
  static const std::map<std::string, std::set<std::string>> kAllowed = {
      {"common", {}},
      {"probe", {"common"}},
      {"policy", {"common", "probe"}},
      {"audit", {"common", "probe", "policy"}},
      {"runtime", {"common", "probe", "policy"}},
      {"sd", {"common", "probe", "policy", "runtime"}},
      {"server", {"common", "probe", "policy", "runtime", "sd"}},
      {"bench", {"common", "probe", "policy", "runtime", "sd"}},
      {"cli", {"common", "probe", "policy", "runtime", "sd", "audit", "server", "bench"}},
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
                            "server/bench/cli; audit <- policy");
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
