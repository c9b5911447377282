// House rules on where code sits (tests/house_rules_test.cc has the rest): a module with rooms
// (src/audit/<room>/) keeps every file in a room and includes across rooms only in the stated
// direction; no two headers in src/ share a base name; a .cc implements only headers of its own
// name. Each rule is a function over file names and texts, and each has a self-test showing that
// it can fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/code_scan.h"
#include "tests/support/test_util.h"

namespace tg {
namespace {
namespace fs = std::filesystem;

// Source files (.cc, .h) under `dir`, as paths relative to `dir` -> text.
std::map<std::string, std::string> SourcesUnder(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".cc" && ext != ".h")) continue;
    out[e.path().lexically_relative(dir).string()] = testing::ReadFile(e.path().string());
  }
  return out;
}

// The rooms of src/audit and the rooms each may include besides itself: report is the base
// (findings, caps, formats, suppressions, rule ids, the shared detectors); image, dockerfile and
// k8s are the three audits and never include one another, as src/audit/README.md states.
const std::map<std::string, std::set<std::string>>& AuditRooms() {
  static const std::map<std::string, std::set<std::string>> kRooms = {
      {"report", {}},
      {"image", {"report"}},
      {"dockerfile", {"report"}},
      {"k8s", {"report"}},
  };
  return kRooms;
}

// Offences against the room order in `files` (paths relative to src/, with their texts): a file of
// `module` outside every room, in a room not in `rooms`, or including "<module>/<room>/..." of a
// room it may not include. Files of other modules are checked only for what they include: a room's
// header is included by its full path ("audit/k8s/k8s_audit.h"), never as "audit/k8s_audit.h".
std::vector<std::string> RoomOffences(const std::string& module,
                                      const std::map<std::string, std::set<std::string>>& rooms,
                                      const std::map<std::string, std::string>& files) {
  const std::regex include_re("^\\s*#\\s*include\\s*\"" + module + "/([^\"]+)\"");
  std::vector<std::string> out;
  for (const auto& [rel, text] : files) {
    const fs::path p(rel);
    const bool mine = p.begin()->string() == module;
    std::string room;
    if (mine) {
      auto it = std::next(p.begin());
      if (std::next(it) == p.end()) {
        out.push_back(rel + ": not in a room of " + module + "/");
        continue;
      }
      room = it->string();
      if (!rooms.contains(room)) {
        out.push_back(rel + ": room '" + room + "' is not in the order");
        continue;
      }
    }
    std::istringstream lines(text);
    std::string line;
    for (int n = 1; std::getline(lines, line); ++n) {
      std::smatch m;
      if (!std::regex_search(line, m, include_re)) continue;
      const std::string target = m[1].str();
      const std::size_t slash = target.find('/');
      const std::string where = rel + ":" + std::to_string(n) + ": ";
      if (slash == std::string::npos) {
        out.push_back(where + "includes " + module + "/" + target + ", which is in no room");
        continue;
      }
      const std::string to = target.substr(0, slash);
      if (mine && to != room && !rooms.at(room).contains(to)) {
        out.push_back(where + room + " includes " + module + "/" + target +
                      " against the room order");
      }
    }
  }
  return out;
}

TEST(HouseRulesLayoutTest, AuditRoomsIncludeOnlyTheirOwnAndTheBaseRoom) {
  const fs::path src = fs::path(testing::SourceDir()) / "src";
  std::map<std::string, std::string> files = SourcesUnder(src);
  std::map<std::string, std::string> with_tests = files;
  for (const auto& [rel, text] : SourcesUnder(fs::path(testing::SourceDir()) / "tests")) {
    with_tests["../tests/" + rel] = text;
  }
  for (const auto& [rel, text] : SourcesUnder(fs::path(testing::SourceDir()) / "benchmarks")) {
    with_tests["../benchmarks/" + rel] = text;
  }
  int audit_files = 0;
  for (const auto& [rel, text] : files) audit_files += rel.starts_with("audit/") ? 1 : 0;
  EXPECT_GT(audit_files, 50) << "the scan found almost no audit sources";
  EXPECT_TRUE(fs::is_directory(src / "audit" / "report"));
  const std::vector<std::string> offences = RoomOffences("audit", AuditRooms(), with_tests);
  EXPECT_TRUE(offences.empty()) << ::testing::PrintToString(offences);
}

TEST(HouseRulesLayoutTest, TheRoomCheckerFindsEachOffence) {
  const std::map<std::string, std::set<std::string>> rooms = {
      {"base", {}}, {"a", {"base"}}, {"b", {"base"}}};
  const std::map<std::string, std::string> files = {
      {"m/base/x.h", "#include <string>\n"},
      {"m/a/y.cc", "#include \"m/a/y.h\"\n#include \"m/base/x.h\"\n"},  // allowed
      {"m/b/z.cc", "\n  #include \"m/a/y.h\"\n"},                       // sideways
      {"m/base/w.cc", "#include \"m/b/z.h\"\n"},                        // upwards
      {"m/loose.cc", "int x;\n"},                                       // in no room
      {"m/c/v.cc", "int y;\n"},                                         // unknown room
      {"other/u.cc", "#include \"m/x.h\"\n#include \"m/a/y.h\"\n"},     // flat path
  };
  EXPECT_EQ(RoomOffences("m", rooms, files),
            (std::vector<std::string>{
                "m/b/z.cc:2: b includes m/a/y.h against the room order",
                "m/base/w.cc:1: base includes m/b/z.h against the room order",
                "m/c/v.cc: room 'c' is not in the order",
                "m/loose.cc: not in a room of m/",
                "other/u.cc:1: includes m/x.h, which is in no room",
            }));
}

// ---- One header per base name, one header per .cc. ----

// Headers under src/ that share a base name ("server/config.h" and "common/config.h"): each group
// as "config.h: common/config.h server/config.h". `headers` are paths relative to src/.
std::vector<std::string> SharedHeaderNames(const std::vector<std::string>& headers) {
  std::map<std::string, std::set<std::string>> by_name;
  for (const std::string& h : headers) by_name[fs::path(h).filename().string()].insert(h);
  std::vector<std::string> out;
  for (const auto& [name, paths] : by_name) {
    if (paths.size() < 2) continue;
    std::string group = name + ":";
    for (const std::string& p : paths) group += " " + p;
    out.push_back(group);
  }
  return out;
}

TEST(HouseRulesLayoutTest, NoTwoHeadersShareABaseName) {
  std::vector<std::string> headers;
  for (const auto& [rel, text] : SourcesUnder(fs::path(testing::SourceDir()) / "src")) {
    if (rel.ends_with(".h")) headers.push_back(rel);
  }
  EXPECT_GT(headers.size(), 100u) << "the scan found almost no headers";
  const std::vector<std::string> shared = SharedHeaderNames(headers);
  EXPECT_TRUE(shared.empty()) << ::testing::PrintToString(shared);
  // The checker itself.
  EXPECT_EQ(SharedHeaderNames({"a/x.h", "b/x.h", "b/y.h", "c/d/x.h", "c/y_x.h"}),
            (std::vector<std::string>{"x.h: a/x.h b/x.h c/d/x.h"}));
}

// What a .cc implements. A header declares, at namespace scope (a line starting in column 0 of its
// code: Google style does not indent namespaces), the free functions whose name is followed by '('
// and the classes it defines ("class X {", "struct X {"). A .cc implements a header when it
// defines, at namespace scope outside an anonymous namespace, a free function that this header and
// no other declares, or a member ("X::F(") of a class that this header and no other defines. The
// rule: a .cc implements only headers of its own name, where foo.h and foo_internal.h are of name
// foo and foo.cc or foo_<part>.cc carries it (kustomize_patch.cc implements kustomize.h).
// Declarations and definitions are read from the code with comments, strings and preprocessor lines
// blanked.
struct Implementation {
  std::string cc, header, what;
  bool operator==(const Implementation&) const = default;
};

// Lines of `code` (CodeOnly's output) that start in column 0 at namespace scope, outside any
// anonymous namespace, with their line numbers.
std::vector<std::pair<int, std::string>> NamespaceScopeLines(const std::string& code) {
  std::vector<std::pair<int, std::string>> out;
  std::vector<bool> named_namespace;  // one entry per open brace
  std::string head;                   // text since the last ';', '{' or '}'
  std::istringstream lines(code);
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    const bool scope = std::all_of(named_namespace.begin(), named_namespace.end(),
                                   [](bool named) { return named; });
    if (scope && !line.empty() && !std::isspace(static_cast<unsigned char>(line[0]))) {
      out.emplace_back(n, line);
    }
    for (char c : line + "\n") {
      if (c == '{') {
        static const std::regex kNamed(R"re(^\s*(inline\s+)?namespace\s+[\w:]+\s*$)re");
        named_namespace.push_back(std::regex_search(head, kNamed));
        head.clear();
      } else if (c == '}' || c == ';') {
        if (c == '}' && !named_namespace.empty()) named_namespace.pop_back();
        head.clear();
      } else {
        head += c;
      }
    }
  }
  return out;
}

// `files`: paths relative to src/ -> code (CodeOnly's output). Every implementation of a header of
// another name, except of the headers in `hook_tables`.
std::vector<Implementation> ForeignImplementations(const std::map<std::string, std::string>& files,
                                                   const std::set<std::string>& hook_tables) {
  static const std::regex kSkip(
      R"re(^(namespace|using|return|template|typedef|extern|enum|static_assert|friend)\b)re");
  static const std::regex kClass(R"re(^(class|struct)\s+(\[\[\w+\]\]\s+)?(\w+)\b[^;]*$)re");
  static const std::regex kFunction(R"re((^|[\s*&>:])(~?\w+)\s*\()re");
  static const std::regex kMember(R"re((^|[\s*&>])(\w+)::(~?\w+)\s*\()re");
  std::map<std::string, std::set<std::string>> functions, classes;  // name -> headers
  for (const auto& [rel, code] : files) {
    if (!rel.ends_with(".h")) continue;
    for (const auto& [n, line] : NamespaceScopeLines(code)) {
      std::smatch m;
      if (std::regex_search(line, kSkip)) continue;
      if (std::regex_search(line, m, kClass)) {
        classes[m[3].str()].insert(rel);
      } else if (std::regex_search(line, m, kFunction) &&
                 line.substr(0, m.position(2)).find('=') == std::string::npos) {
        functions[m[2].str()].insert(rel);
      }
    }
  }
  auto stem = [](const std::string& path, const char* ext) {
    std::string s = fs::path(path).filename().string();
    s.resize(s.size() - std::string(ext).size());
    return s.ends_with("_internal") ? s.substr(0, s.size() - 9) : s;
  };
  std::vector<Implementation> out;
  for (const auto& [rel, code] : files) {
    if (!rel.ends_with(".cc")) continue;
    const std::string cc = stem(rel, ".cc");
    std::set<std::string> reported;
    for (const auto& [n, line] : NamespaceScopeLines(code)) {
      std::smatch m;
      if (std::regex_search(line, kSkip)) continue;
      std::string header, what;
      if (std::regex_search(line, m, kMember)) {
        auto it = classes.find(m[2].str());
        if (it == classes.end() || it->second.size() != 1) continue;
        header = *it->second.begin();
        what = m[2].str() + "::" + m[3].str();
      } else if (std::regex_search(line, m, kFunction) &&
                 line.substr(0, m.position(2)).find('=') == std::string::npos) {
        auto it = functions.find(m[2].str());
        if (it == functions.end() || it->second.size() != 1) continue;
        header = *it->second.begin();
        what = m[2].str();
      } else {
        continue;
      }
      const std::string h = stem(header, ".h");
      if (cc == h || cc.starts_with(h + "_") || hook_tables.contains(header)) continue;
      if (reported.insert(header).second) out.push_back({rel, header, what});
    }
  }
  return out;
}

TEST(HouseRulesLayoutTest, EachSourceFileImplementsOnlyHeadersOfItsName) {
  const fs::path src = fs::path(testing::SourceDir()) / "src";
  std::map<std::string, std::string> files;
  for (const auto& [rel, text] : SourcesUnder(src)) {
    if (rel.ends_with("_test.cc") || rel.ends_with("_fuzz.cc")) continue;
    files[rel] = testing::CodeOnly(text);
  }
  // cli/command.h and cli/command_areas.h are the command areas' registration hooks: each declares
  // one Register<Area>Commands per area, defined in that area's file.
  const std::vector<Implementation> foreign =
      ForeignImplementations(files, {"cli/command.h", "cli/command_areas.h"});
  std::vector<std::string> offences;
  for (const Implementation& i : foreign) {
    offences.push_back(i.cc + " implements " + i.header + " (" + i.what + ")");
  }
  EXPECT_TRUE(offences.empty()) << ::testing::PrintToString(offences);
  // The scan sees the implementations that are allowed: the headers of a part-named file.
  const std::vector<Implementation> all = ForeignImplementations(files, {});
  EXPECT_GT(all.size(), foreign.size()) << "the hook tables were not seen";
}

TEST(HouseRulesLayoutTest, TheImplementationCheckerFindsForeignDefinitions) {
  const std::map<std::string, std::string> files = {
      {"m/a.h", "namespace tg::m {\nint Parse(int x);\nclass Reader {\n  int Read();\n};\n}\n"},
      {"m/b.h", "namespace tg::m {\nvoid Walk();\nint Shared();\n}\n"},
      {"m/c.h", "namespace tg::m {\nint Shared();\n}\n"},
      {"m/a_internal.h", "namespace tg::m {\nvoid Helper();\n}\n"},
      // a.cc implements a.h, a_internal.h and (foreign) b.h.
      {"m/a.cc",
       "namespace tg::m {\nint Parse(int x) {\n  return x;\n}\nint Reader::Read() {\n"
       "  return 1;\n}\nvoid Helper() {}\nvoid Walk() {}\nint Shared() { return 0; }\n}\n"},
      // a_fields.cc implements a.h; its own Walk in an anonymous namespace is no definition of
      // b.h's.
      {"m/a_fields.cc",
       "namespace tg::m {\nnamespace {\nvoid Walk() {}\n}  // namespace\n"
       "int Reader::Read2() {\n  return 2;\n}\n}\n"},
      // x.cc defines a member of a.h's class.
      {"m/x.cc", "namespace tg::m {\nint Reader::Read() { return 0; }\n}\n"},
  };
  EXPECT_EQ(ForeignImplementations(files, {}),
            (std::vector<Implementation>{{"m/a.cc", "m/b.h", "Walk"},
                                         {"m/x.cc", "m/a.h", "Reader::Read"}}));
  EXPECT_EQ(ForeignImplementations(files, {"m/b.h", "m/a.h"}), std::vector<Implementation>{});
}

}  // namespace
}  // namespace tg
