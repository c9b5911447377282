// The values the docs state are the code's values: every default and every range in
// docs/SERVER.md's flag table is compared with serve's option tables (server::ServeConfig{}'s
// fields through ServeOptionValues, and ServeOptionRanges, the rows the CLI shows in --help and
// checks), and every "(default)" of README's global-option table with cli::GlobalOptions{}. A doc
// that drifts from the code fails here, naming the flag, the doc's value and the code's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command.h"
#include "common/strings.h"
#include "server/serve_config.h"
#include "tests/support/test_util.h"

namespace tg::testing {
namespace {

// The rows of the first Markdown table after the line `header` (the header row itself and the
// |---| line skipped), each as its cells, trimmed; "\|" inside a cell stays a literal '|'.
std::vector<std::vector<std::string>> TableAfter(const std::string& markdown,
                                                 const std::string& header) {
  std::vector<std::vector<std::string>> rows;
  std::size_t at = markdown.find(header);
  if (at == std::string::npos) return rows;
  at = markdown.find('\n', at);
  bool in_table = false;
  while (at != std::string::npos && at + 1 < markdown.size()) {
    const std::size_t end = markdown.find('\n', at + 1);
    const std::string line = markdown.substr(at + 1, end - at - 1);
    at = end;
    if (line.empty() || line[0] != '|') {
      if (in_table) break;
      continue;
    }
    const bool first = !in_table;
    in_table = true;
    if (first || line.rfind("| ---", 0) == 0) continue;  // the header and its rule
    std::vector<std::string> cells;
    std::string cell;
    for (std::size_t i = 1; i < line.size(); ++i) {
      if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
        cell += '|';
        ++i;
      } else if (line[i] == '|') {
        cells.emplace_back(common::Trim(cell));
        cell.clear();
      } else {
        cell += line[i];
      }
    }
    rows.push_back(cells);
  }
  return rows;
}

// The flags a cell names ("`--host`, `--port`" -> {"--host", "--port"}).
std::vector<std::string> FlagsIn(const std::string& cell) {
  static const std::regex flag("`(--[a-z0-9-]+)");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(cell.begin(), cell.end(), flag); it != std::sregex_iterator();
       ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

// A documented number in the unit of `range` ("10 s" for a ms flag is 10000, "1 MiB" 1048576,
// "not gated" 0, and --memory-budget's "read", unset: the budget is read from the machine, 0);
// nullopt when `text` states no number.
std::optional<double> DocNumber(const std::string& text, const server::ServeOptionRange& range) {
  if (text.rfind("not gated", 0) == 0) return 0.0;
  if (text == "read" && std::string_view(range.flag) == "--memory-budget") return 0.0;
  static const std::regex number(R"(^([0-9]+(\.[0-9]+)?)\s*(KiB|MiB|GiB|ms|s)?\b)");
  std::smatch m;
  if (!std::regex_search(text, m, number)) return std::nullopt;
  double v = std::stod(m[1]);
  const std::string suffix = m[3];
  const std::string unit = range.unit;
  if (suffix == "KiB") v *= 1024;
  if (suffix == "MiB") v *= 1024 * 1024;
  if (suffix == "GiB") v *= 1024.0 * 1024 * 1024;
  if (suffix == "s" && unit.rfind("ms", 0) == 0) v *= 1000;
  return v;
}

// serve's flags whose default is text, with ServeConfig{}'s value ("" = none: the doc's cell is
// empty or says where the value comes from, "the ... matrix").
std::map<std::string, std::string> TextDefaults() {
  const server::ServeConfig c;
  return {{"--models", c.models_dir},
          {"--matrix", c.matrix},
          {"--host", c.host},
          {"--port-file", c.port_file},
          {"--exit-on-fail", c.exit_on_fail ? "true" : "false"},
          {"--token-file", c.token},
          {"--model-alias", ""},
          {"--access-log", c.access_log},
          {"--fault-file", c.fault_file}};
}

// Every disagreement between SERVER.md's flag table (`markdown`) and the code, as one line each.
std::vector<std::string> ServeTableMismatches(const std::string& markdown) {
  std::vector<std::string> out;
  const auto rows = TableAfter(markdown, "## Flags and environment");
  if (rows.empty()) return {"no flag table after '## Flags and environment'"};
  std::map<std::string, double> code;
  for (const auto& [flag, v] : server::ServeOptionValues(server::ServeConfig{})) code[flag] = v;
  const auto text = TextDefaults();
  std::set<std::string> documented;
  for (const auto& row : rows) {
    if (row.size() < 3) {
      out.push_back("a row without three cells: " + (row.empty() ? "" : row[0]));
      continue;
    }
    const std::vector<std::string> flags = FlagsIn(row[0]);
    // "4, 256" gives each of two flags its own default; one value serves them all.
    std::vector<std::string> defaults = common::Split(row[1], ',', common::SplitMode::kKeepEmpty);
    for (auto& d : defaults) d = std::string(common::Trim(d));
    if (defaults.size() != flags.size()) defaults.assign(flags.size(), row[1]);
    for (std::size_t i = 0; i < flags.size(); ++i) {
      const std::string& flag = flags[i];
      documented.insert(flag);
      std::string doc = defaults[i];
      doc.erase(std::remove(doc.begin(), doc.end(), '`'), doc.end());
      if (const auto* range = server::FindServeOptionRange(flag)) {
        const auto v = DocNumber(doc, *range);
        double want = code.at(flag);
        // "0 = 256" in the range's unit: 0 in the code is the documented 256.
        std::smatch zero;
        const std::string unit = range->unit;
        if (want == 0 && std::regex_search(unit, zero, std::regex(R"(0 = ([0-9]+))"))) {
          want = std::stod(zero[1]);
        }
        if (!v || std::fabs(*v - want) > 1e-9 * std::max(1.0, std::fabs(want))) {
          out.push_back(flag + ": the doc's default is '" + doc + "', the code's " +
                        std::to_string(want));
        }
      } else if (auto t = text.find(flag); t != text.end()) {
        const std::string word = doc.substr(0, doc.find_first_of(" ("));
        const bool ok =
            t->second.empty() ? (doc.empty() || doc.rfind("the ", 0) == 0) : word == t->second;
        if (!ok) {
          out.push_back(flag + ": the doc's default is '" + doc + "', the code's '" + t->second +
                        "'");
        }
      } else {
        out.push_back(flag + ": a flag this test does not know (add its default to the check)");
      }
    }
    // Every range the row states ("(50..600000)", "(0..1]") is one of its flags' ranges.
    static const std::regex kRange(R"(([0-9][0-9.]*)\.\.([0-9][0-9.]*[0-9]|[0-9]))");
    for (auto it = std::sregex_iterator(row[2].begin(), row[2].end(), kRange);
         it != std::sregex_iterator(); ++it) {
      const double lo = std::stod((*it)[1]), hi = std::stod((*it)[2]);
      bool found = false;
      for (const auto& flag : flags) {
        const auto* r = server::FindServeOptionRange(flag);
        found = found || (r != nullptr && r->lo == lo && r->hi == hi);
      }
      if (!found) out.push_back(row[0] + ": the range " + it->str() + " is none of its flags'");
    }
  }
  for (const auto& r : server::ServeOptionRanges()) {
    if (!documented.count(r.flag)) out.push_back(std::string(r.flag) + ": not in the table");
  }
  return out;
}

TEST(DocsValuesTest, ServerFlagTableStatesTheCodesDefaultsAndRanges) {
  const std::string doc = ReadFile(SourceDir() + "/docs/SERVER.md");
  EXPECT_EQ(ServeTableMismatches(doc), std::vector<std::string>{});
}

TEST(DocsValuesTest, TheServerTableCheckFindsAWrongDefaultAWrongRangeAndAMissingFlag) {
  const std::string doc = ReadFile(SourceDir() + "/docs/SERVER.md");
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string d = doc;
    const std::size_t at = d.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? d : d.replace(at, from.size(), to);
  };
  // The value SERVER.md once stated for --large-pixels.
  const auto wrong_default = ServeTableMismatches(
      replaced("| `--large-pixels` | 589824 (768²) |", "| `--large-pixels` | 262144 |"));
  ASSERT_EQ(wrong_default.size(), 1u) << ::testing::PrintToString(wrong_default);
  EXPECT_EQ(wrong_default[0].rfind("--large-pixels: the doc's default is '262144'", 0), 0u);
  // A unit: 10 s is 10000 ms; 10 ms is not.
  EXPECT_EQ(ServeTableMismatches(replaced("10 s, 30 s, 60 s", "10 ms, 30 s, 60 s")).size(), 1u);
  EXPECT_EQ(ServeTableMismatches(replaced("(50..600000)", "(50..60000)")).size(), 1u);
  EXPECT_EQ(ServeTableMismatches(replaced("| `--io-threads` | 2 | HTTP I/O threads |\n", "")),
            std::vector<std::string>{"--io-threads: not in the table"});
  EXPECT_EQ(ServeTableMismatches(replaced("`-` (stderr)", "`off`")).size(), 1u);
}

// README's global options: each "X (default)" is GlobalOptions{}'s value of its flag.
std::vector<std::string> ReadmeGlobalDefaultMismatches(const std::string& markdown) {
  const cli::GlobalOptions g;
  const std::map<std::string, std::string> code = {{"--policy", g.policy},
                                                   {"--log-format", g.log_format},
                                                   {"--log-level", g.log_level},
                                                   {"--color", g.color}};
  std::vector<std::string> out;
  int defaults = 0;
  static const std::regex kDefault(R"(`?([a-z]+)`? \(default\))");
  for (const auto& row : TableAfter(markdown, "Global options, accepted before or after")) {
    if (row.size() < 2) continue;
    std::smatch m;
    if (!std::regex_search(row[1], m, kDefault)) continue;
    ++defaults;
    const auto flags = FlagsIn(row[0]);
    const auto it = flags.empty() ? code.end() : code.find(flags[0]);
    if (it == code.end()) {
      out.push_back(row[0] + ": a default for a flag this test does not know");
    } else if (it->second != m[1]) {
      out.push_back(it->first + ": the README's default is '" + m[1].str() + "', the code's '" +
                    it->second + "'");
    }
  }
  if (defaults == 0) out.push_back("no '(default)' in README's global-option table");
  return out;
}

TEST(DocsValuesTest, ReadmeGlobalOptionDefaultsAreTheCodes) {
  const std::string readme = ReadFile(SourceDir() + "/README.md");
  EXPECT_EQ(ReadmeGlobalDefaultMismatches(readme), std::vector<std::string>{});
  std::string drifted = readme;
  const std::size_t at = drifted.find("warn (default)");
  ASSERT_NE(at, std::string::npos);
  drifted.replace(at, 4, "info");
  EXPECT_EQ(
      ReadmeGlobalDefaultMismatches(drifted),
      std::vector<std::string>{"--log-level: the README's default is 'info', the code's 'warn'"});
}

}  // namespace
}  // namespace tg::testing
