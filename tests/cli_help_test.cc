// Help and naming, walked over the CLI definition (`truegreen __cli-tree`):
//   - every command's --help (and `truegreen help CMD`) exits 0 and shows the global options and
//     an example; placeholders name their kind (FILE, DIR);
//   - an unknown command says so and suggests the nearest one;
//   - every `truegreen ...` that an advice, fix or example string in src/ names (and every
//     example) uses only commands and flags that exist.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "common/config.h"
#include "tests/support/test_util.h"

namespace tg {
namespace {

using ::testing::HasSubstr;
using testing::ProcessResult;
using testing::RunTruegreen;

common::Json Tree() { return testing::CliTree(); }

void Visible(const common::Json& node, std::vector<const common::Json*>* out) {
  for (const auto& c : node["subcommands"]) {
    if (c.value("hidden", false)) continue;
    out->push_back(&c);
    Visible(c, out);
  }
}

std::vector<std::string> Words(const std::string& path) { return testing::CliWords(path); }

TEST(CliHelp, EveryCommandHelpShowsGlobalOptionsAndAnExample) {
  common::Json tree = Tree();
  std::vector<const common::Json*> cmds;
  Visible(tree, &cmds);
  ASSERT_GT(cmds.size(), 15u);
  for (const common::Json* c : cmds) {
    const std::string path = (*c)["path"];
    std::vector<std::string> args = Words(path);
    args.push_back("--help");
    ProcessResult h = RunTruegreen(args);
    EXPECT_EQ(h.exit_code, 0) << path << ": " << h.err;
    for (const char* global : {"--json", "--lib-path", "--policy", "--log-format", "--color"}) {
      EXPECT_THAT(h.out, HasSubstr(global)) << path;
    }
    EXPECT_THAT(h.out, HasSubstr("Example:\n  truegreen ")) << path;
    std::vector<std::string> help_args = {"help"};
    for (const auto& w : Words(path)) help_args.push_back(w);
    ProcessResult via_help = RunTruegreen(help_args);
    EXPECT_EQ(via_help.exit_code, 0) << path << ": " << via_help.err;
    EXPECT_EQ(via_help.out, h.out) << path;
  }
  ProcessResult top = RunTruegreen({"help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_THAT(top.out, HasSubstr("doctor"));
  EXPECT_THAT(top.out, HasSubstr("Exit codes:"));
}

TEST(CliHelp, PlaceholdersNameTheirKind) {
  common::Json tree = Tree();
  std::vector<const common::Json*> cmds = {&tree};
  Visible(tree, &cmds);
  const std::regex path_like(R"(\b(file|folder|directory|dir)\b)", std::regex::icase);
  for (const common::Json* c : cmds) {
    for (const auto& o : (*c)["options"]) {
      if (!o.value("takes_value", false)) continue;
      const std::string type = o.value("type_name", "");
      const std::string where =
          (*c)["path"].get<std::string>() + " " + o["name"].get<std::string>();
      EXPECT_FALSE(type.empty()) << where;
      if (std::regex_search(o.value("description", ""), path_like)) {
        EXPECT_TRUE(type.find("FILE") != std::string::npos ||
                    type.find("DIR") != std::string::npos ||
                    type.find("IMAGE") != std::string::npos)
            << where << " takes a path but its placeholder is " << type;
      }
    }
  }
}

TEST(CliHelp, UnknownCommandSaysSoAndSuggestsTheNearest) {
  ProcessResult r = RunTruegreen({"doctr"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown command 'doctr'"));
  EXPECT_THAT(r.err, HasSubstr("did you mean 'doctor'"));
  ProcessResult nested = RunTruegreen({"audit", "dokerfile", "x"});
  EXPECT_EQ(nested.exit_code, 2);
  EXPECT_THAT(nested.err, HasSubstr("did you mean 'audit dockerfile'"));
  ProcessResult help = RunTruegreen({"help", "genrate"});
  EXPECT_EQ(help.exit_code, 2);
  EXPECT_THAT(help.err, HasSubstr("did you mean 'generate'"));
  // Option values are not mistaken for commands.
  EXPECT_NE(RunTruegreen({"--log-level", "error", "--policy", "dev", "doctor"}).exit_code, 2);
}

// --- advice strings and examples name only what exists ----------------------------------------

using testing::CheckCommandLine;  // tests/support/test_util.h (shared with audit_k8s tests)

TEST(CliHelp, AdviceStringsAndExamplesNameOnlyExistingCommandsAndFlags) {
  common::Json tree = Tree();
  // Every example in the CLI definition.
  std::vector<const common::Json*> cmds;
  Visible(tree, &cmds);
  int examples = 0;
  for (const common::Json* c : cmds) {
    const std::string ex = c->value("example", "");
    if (ex.empty()) continue;
    ++examples;
    EXPECT_EQ(CheckCommandLine(tree, ex), "") << "example of " << (*c)["path"] << ": " << ex;
  }
  EXPECT_GE(examples, 15);
  // Every `truegreen ...` quoted in a string or comment in src/.
  const std::regex quoted("`(truegreen [^`]+)`");
  int checked = 0;
  std::string problems;
  for (const auto& e :
       std::filesystem::recursive_directory_iterator(testing::SourceDir() + "/src")) {
    const std::string p = e.path().string();
    if (!e.is_regular_file() || !(p.ends_with(".cc") || p.ends_with(".h"))) continue;
    if (p.ends_with("_test.cc")) continue;
    const std::string text = testing::ReadFile(p);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), quoted);
         it != std::sregex_iterator(); ++it) {
      const std::string line = (*it)[1];
      // A line break or a quote: the command is assembled at run time, not one literal line.
      if (line.find_first_of("\n\"") != std::string::npos) continue;
      ++checked;
      const std::string why = CheckCommandLine(tree, line);
      if (!why.empty()) problems += p + ": `" + line + "`: " + why + "\n";
    }
  }
  EXPECT_GT(checked, 10);
  EXPECT_EQ(problems, "");
}

TEST(CliHelp, ColourFollowsTheTerminalAndNoColor) {
  // `script` gives the command a pseudo-terminal for stdout: auto means colour there.
  if (testing::RunProcess({"/usr/bin/script", "--version"}).exit_code != 0) {
    GTEST_SKIP() << "util-linux script(1) not available to provide a terminal";
  }
  const std::string cmd = testing::TruegreenPath() + " --policy dev doctor";
  ProcessResult tty = testing::RunProcess({"/usr/bin/script", "-qec", cmd, "/dev/null"},
                                          {{"NO_COLOR", testing::kUnset}});
  EXPECT_THAT(tty.out, HasSubstr("\033[")) << tty.out;
  ProcessResult no_color =
      testing::RunProcess({"/usr/bin/script", "-qec", cmd, "/dev/null"}, {{"NO_COLOR", "1"}});
  EXPECT_THAT(no_color.out, ::testing::Not(HasSubstr("\033["))) << no_color.out;
}

}  // namespace
}  // namespace tg
