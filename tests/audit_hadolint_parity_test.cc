// hadolint parity, measured on hadolint's own rule specs: every case of every id truegreen claims
// (tests/data/hadolint/cases.tsv, extracted from hadolint/hadolint's test/Hadolint/Rule/*Spec.hs
// by tests/data/hadolint/extract_cases.py, source line per case) is run through
// `audit dockerfile`'s rules and compared with hadolint's expectation. A case counts as agreeing
// when truegreen reports a finding whose message carries the id ("[DL3004]") exactly when
// hadolint's spec says the rule catches. `onBuild` cases wrap every RUN in ONBUILD, as hadolint's
// helper does. Cases listed in kDeliberate differ on purpose (docs/AUDIT_CONFIG.md says why).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>
#include <set>
#include <sstream>

#include "audit/dockerfile/dockerfile_audit.h"
#include "audit/dockerfile/dockerfile_parser.h"
#include "common/strings.h"
#include "tests/support/test_util.h"

namespace tg::testing {
namespace {

// Deliberate differences (spec line, with " (onBuild)" for the ONBUILD variant) and why; each is
// listed in docs/AUDIT_CONFIG.md.
const std::map<std::string, std::string>& Deliberate() {
  static const std::map<std::string, std::string> k = {
      {"test/Hadolint/Rule/DL3002Spec.hs:77", "only the shipped stage's last USER matters"},
      {"test/Hadolint/Rule/DL3009Spec.hs:31 (onBuild)", "a build stage's caches do not ship"},
      {"test/Hadolint/Rule/DL3009Spec.hs:71 (onBuild)", "a build stage's caches do not ship"},
      {"test/Hadolint/Rule/DL3060Spec.hs:96 (onBuild)", "a build stage's caches do not ship"},
      {"test/Hadolint/Rule/DL4000Spec.hs:15",
       "MAINTAINER before FROM is not a Dockerfile BuildKit builds: exit 2"},
  };
  return k;
}

struct Case {
  std::string id, source, text;
  bool catches = false, onbuild = false;
};

std::string Unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    char c = s[++i];
    out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
  }
  return out;
}

std::vector<Case> ReadCases() {
  std::istringstream in(ReadFile(SourceDir() + "/tests/data/hadolint/cases.tsv"));
  std::vector<Case> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream ls(line);
    for (std::string x; std::getline(ls, x, '\t');) f.push_back(x);
    if (f.size() != 5) continue;
    out.push_back({f[0], f[3] + (f[2] == "1" ? " (onBuild)" : ""), Unescape(f[4]),
                   f[1] == "catches", f[2] == "1"});
  }
  return out;
}

std::string Prepare(const Case& c) {
  std::string out;
  bool has_from = false;
  std::istringstream in(c.text);
  for (std::string line; std::getline(in, line);) {
    const std::string up = common::Upper(std::string_view(line).substr(0, 5));
    if (up.rfind("FROM ", 0) == 0) has_from = true;
    if (c.onbuild && up.rfind("RUN ", 0) == 0) line = "ONBUILD " + line;
    out += line + "\n";
  }
  return has_from ? out : "FROM debian:12\n" + out;
}

// Returns whether truegreen reports `id`, or nullopt when truegreen refuses the Dockerfile.
std::optional<bool> TruegreenCatches(const Case& c, std::string* why) {
  TempDir d;
  const std::string text = Prepare(c);
  WriteFile(d / "Dockerfile", text);
  WriteFile(d / ".dockerignore", "*\n");
  auto df = audit::ParseDockerfile(text, d / "Dockerfile");
  if (!df.ok()) {
    *why = df.status().message();
    return std::nullopt;
  }
  auto rep = audit::AuditDockerfile(*df, {d / "Dockerfile", d.path()});
  if (!rep.ok()) {
    *why = rep.status().message();
    return std::nullopt;
  }
  for (const auto& f : rep->findings) {
    if (f.message.find("[" + c.id + "]") != std::string::npos) return true;
  }
  return false;
}

TEST(HadolintParity, AgreementPerIdOnHadolintsOwnSpecs) {
  std::vector<Case> cases = ReadCases();
  ASSERT_GE(cases.size(), 150u) << "tests/data/hadolint/cases.tsv is incomplete";
  std::map<std::string, std::pair<int, int>> per_id;  // id -> (agree, total)
  std::string report;
  for (const Case& c : cases) {
    std::string why;
    std::optional<bool> got = TruegreenCatches(c, &why);
    bool agree = got.has_value() && *got == c.catches;
    auto& [a, t] = per_id[c.id];
    ++t;
    auto deliberate = Deliberate().find(c.source);
    if (agree) {
      ++a;
      EXPECT_EQ(deliberate, Deliberate().end()) << c.source << " now agrees: drop it from the list";
    } else if (deliberate != Deliberate().end()) {
      report += fmt::format("  {} {}: deliberate ({})\n", c.id, c.source, deliberate->second);
    } else {
      ADD_FAILURE() << c.id << " " << c.source << " disagrees with hadolint";
      report += fmt::format("  {} {}: hadolint {}, truegreen {}\n    {}\n", c.id, c.source,
                            c.catches ? "catches" : "passes",
                            got ? (*got ? "catches" : "passes") : "refuses: " + why,
                            Prepare(c).substr(0, 200));
    }
  }
  std::string table;
  int agree_all = 0, total_all = 0;
  for (const auto& [id, at] : per_id) {
    table += fmt::format("  {}: {}/{} ({:.0f} %)\n", id, at.first, at.second,
                         100.0 * at.first / at.second);
    agree_all += at.first;
    total_all += at.second;
  }
  // Printed in every run: the agreement per id and each disagreeing case with its spec line.
  std::printf("hadolint parity (%d/%d cases agree):\n%s%s", agree_all, total_all, table.c_str(),
              report.c_str());
  // Every case that is not a listed deliberate difference agrees (checked above, case by case).
  EXPECT_EQ(total_all - agree_all, static_cast<int>(Deliberate().size())) << table << report;
}

}  // namespace
}  // namespace tg::testing
