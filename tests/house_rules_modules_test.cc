// House rules on the module pages (tests/house_rules_test.cc has the rest): each module has one
// paragraph, in its src/<module>/README.md, linked from docs/ARCHITECTURE.md; the paragraph states
// the modules its files include and names every public header; every file a module page names
// exists.
#include <gtest/gtest.h>

#include <filesystem>
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
using testing::FilesUnder;

// Whether `name` is a file in the module folder `dir` or in one of its rooms (src/audit/k8s/).
bool InModule(const fs::path& dir, const std::string& name) {
  if (fs::exists(dir / name)) return true;
  if (!fs::is_directory(dir)) return false;
  for (const auto& room : fs::directory_iterator(dir)) {
    if (room.is_directory() && fs::exists(room.path() / name)) return true;
  }
  return false;
}

// The module map and the module pages: docs/ARCHITECTURE.md and each src/<module>/README.md, as
// paths relative to the repository root.
std::vector<std::string> ModuleDocs() {
  std::vector<std::string> docs = {"docs/ARCHITECTURE.md"};
  std::set<std::string> modules;
  for (const auto& e : fs::directory_iterator(fs::path(testing::SourceDir()) / "src")) {
    if (e.is_directory()) modules.insert(e.path().filename().string());
  }
  for (const std::string& m : modules) docs.push_back("src/" + m + "/README.md");
  return docs;
}

// Each module has one paragraph ("**name** (depends on ...)"), in its own src/<module>/README.md,
// one for each folder under src/ and none for a module that does not exist; docs/ARCHITECTURE.md
// links every README. Every header or source file a doc names exists: a bare name ("session.h")
// in the paragraph's module folder or one of its rooms, a path with a folder
// ("benchmarks/sd_step_bench.cc", "tools/gen_sd.py", "../src/sd/README.md") from the repository
// root, from src/ or from the doc's folder.
TEST(HouseRulesTest, ModulePagesHaveAParagraphPerModuleNamingExistingFiles) {
  const fs::path root = testing::SourceDir();
  const std::regex head_re(R"re(^\*\*([a-z]+)\*\* \(depends on)re");
  const std::regex file_re(R"re(([A-Za-z0-9_./]*[A-Za-z0-9_])\.(h|cc|py|sh|md)\b)re");
  std::set<std::string> paragraphs;
  std::vector<std::string> offenders;
  int names_checked = 0;
  const std::string map = testing::ReadFile((root / "docs/ARCHITECTURE.md").string());
  for (const std::string& rel : ModuleDocs()) {
    const fs::path doc_dir = (root / rel).parent_path();
    if (!fs::is_regular_file(root / rel)) {
      offenders.push_back(rel + " does not exist");
      continue;
    }
    if (rel.starts_with("src/") && map.find("(../" + rel + ")") == std::string::npos) {
      offenders.push_back("docs/ARCHITECTURE.md does not link ../" + rel);
    }
    std::istringstream doc(testing::ReadFile((root / rel).string()));
    std::string module, line;
    for (int n = 1; std::getline(doc, line); ++n) {
      std::smatch m;
      if (std::regex_search(line, m, head_re)) {
        module = m[1].str();
        if (!paragraphs.insert(module).second) offenders.push_back("two paragraphs for " + module);
        if (rel != "src/" + module + "/README.md") {
          offenders.push_back(rel + ":" + std::to_string(n) + ": the paragraph of " + module +
                              " belongs in src/" + module + "/README.md");
        }
      } else if (line.empty() || line.starts_with("#")) {
        module.clear();
      }
      for (std::sregex_iterator it(line.begin(), line.end(), file_re), e; it != e; ++it) {
        const std::string name = (*it)[0].str();
        if ((*it).position(0) > 0 && line[(*it).position(0) - 1] == '>') continue;  // <area>_x.cc
        ++names_checked;
        const bool exists = name.find('/') != std::string::npos
                                ? fs::exists(root / name) || fs::exists(root / "src" / name) ||
                                      fs::exists(doc_dir / name)
                                : !module.empty() && InModule(root / "src" / module, name);
        if (!exists && (name.find('/') != std::string::npos || !module.empty())) {
          offenders.push_back(rel + ":" + std::to_string(n) + ": " + name + " does not exist" +
                              (module.empty() ? "" : " (in the " + module + " paragraph)"));
        }
      }
    }
  }
  std::set<std::string> modules;
  for (const auto& e : fs::directory_iterator(root / "src")) {
    if (e.is_directory()) modules.insert(e.path().filename().string());
  }
  EXPECT_EQ(paragraphs, modules) << "the module paragraphs (src/<module>/README.md) vs src/";
  EXPECT_GT(names_checked, 50) << "the scan found almost no file names: is the regex wrong?";
  EXPECT_TRUE(offenders.empty()) << ::testing::PrintToString(offenders);
}

// The module paragraphs: module -> the paragraph's text, from its "**name** (depends on ...)" line
// to the next blank line, lines joined with spaces.
std::map<std::string, std::string> ArchitectureParagraphs() {
  const std::regex head_re(R"re(^\*\*([a-z]+)\*\* \(depends on)re");
  std::map<std::string, std::string> out;
  for (const std::string& rel : ModuleDocs()) {
    const fs::path path = fs::path(testing::SourceDir()) / rel;
    if (!fs::is_regular_file(path)) continue;
    std::istringstream doc(testing::ReadFile(path.string()));
    std::string module;
    for (std::string line; std::getline(doc, line);) {
      std::smatch m;
      if (std::regex_search(line, m, head_re)) module = m[1].str();
      if (line.empty() || line.starts_with("#")) module.clear();
      if (!module.empty()) out[module] += line + " ";
    }
  }
  return out;
}

// The modules whose headers `module`'s files include (itself aside).
std::set<std::string> IncludedModules(const std::string& module) {
  const fs::path src = fs::path(testing::SourceDir()) / "src";
  const std::regex include_re(R"re(^\s*#\s*include\s*"([a-z_0-9]+)/)re");
  std::set<std::string> out;
  for (const auto& f : FilesUnder(src / module, {".cc", ".h"})) {
    std::istringstream text(testing::ReadFile(f.string()));
    for (std::string line; std::getline(text, line);) {
      std::smatch m;
      if (std::regex_search(line, m, include_re) && m[1].str() != module &&
          fs::is_directory(src / m[1].str())) {
        out.insert(m[1].str());
      }
    }
  }
  return out;
}

// Each paragraph's "(depends on a, b; ...)" names exactly the modules its files include:
// "nothing" for none, "every module" for all the others.
TEST(HouseRulesTest, ArchitectureDocStatesEachModulesDirectDependencies) {
  const auto paragraphs = ArchitectureParagraphs();
  ASSERT_GT(paragraphs.size(), 5u) << "almost no module paragraphs (src/<module>/README.md)";
  const std::regex deps_re(R"re(\(depends on ([^;)]*))re");
  for (const auto& [module, text] : paragraphs) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(text, m, deps_re)) << module;
    std::set<std::string> stated;
    const std::string list = m[1].str();
    if (list == "every module") {
      for (const auto& [other, unused] : paragraphs) {
        if (other != module) stated.insert(other);
      }
    } else if (list != "nothing") {
      for (const std::string& d : common::Split(list, ',', common::SplitMode::kTrimSkipEmpty)) {
        stated.insert(d);
      }
    }
    EXPECT_EQ(stated, IncludedModules(module)) << module << ": stated \"" << list << "\"";
  }
}

// Each public header (neither *_internal.h nor a test fixture, *_test_*.h) is named in its
// module's paragraph, so a new header cannot land without its place in the description.
TEST(HouseRulesTest, ArchitectureDocNamesEveryPublicHeader) {
  const auto paragraphs = ArchitectureParagraphs();
  std::vector<std::string> missing;
  int headers = 0;
  for (const auto& [module, text] : paragraphs) {
    for (const auto& h : FilesUnder(fs::path(testing::SourceDir()) / "src" / module, {".h"})) {
      const std::string name = h.filename().string();
      if (name.ends_with("_internal.h") || name.find("_test_") != std::string::npos) continue;
      ++headers;
      const std::regex named("(^|[^A-Za-z0-9_])" +
                             std::regex_replace(name, std::regex("\\."), "\\.") +
                             "($|[^A-Za-z0-9_])");
      if (!std::regex_search(text, named)) missing.push_back(module + "/" + name);
    }
  }
  EXPECT_GT(headers, 50) << "the scan found almost no headers";
  EXPECT_TRUE(missing.empty()) << "not named in their module's paragraph (src/<module>/README.md): "
                               << ::testing::PrintToString(missing);
}

}  // namespace
}  // namespace tg
