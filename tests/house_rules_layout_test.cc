// House rules on where code sits (tests/house_rules_test.cc has the rest): a module with rooms
// (src/audit/<room>/) keeps every file in a room and includes across rooms only in the stated
// direction. Each rule is a function over file names and texts, and each has a self-test showing
// that it can fail.
#include <gtest/gtest.h>

#include <filesystem>
#include <iterator>
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
// k8s are the three audits and never include one another. docs/ARCHITECTURE.md and
// src/audit/README.md state the same direction.
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

}  // namespace
}  // namespace tg
