// Dockerfile parser: continuations, comments, directives, heredocs, forms, stages, ARG expansion,
// .dockerignore semantics, and bad input.
#include "audit/dockerfile/dockerfile_parser.h"

#include <gtest/gtest.h>

#include "audit/dockerfile/dockerfile_ignore.h"

namespace tg::audit {
namespace {

Dockerfile MustParse(const std::string& text, std::map<std::string, std::string> args = {}) {
  auto r = ParseDockerfile(text, "Dockerfile", args);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : Dockerfile{};
}

TEST(DockerfileParser, ContinuationsCommentsAndLines) {
  Dockerfile df = MustParse(
      "# a comment\n"
      "FROM base@sha256:" +
      std::string(64, 'a') +
      " AS build\n"
      "RUN apt-get update \\\n"
      "# comment inside the continuation\n"
      "\n"
      "    && apt-get install -y gcc \\\n"
      "    && rm -rf /var/lib/apt/lists/*\n"
      "FROM scratch\n"
      "COPY --from=build --chown=1:1 /out/app /app\n");
  ASSERT_EQ(df.stages.size(), 2u);
  EXPECT_EQ(df.stages[0].name, "build");
  const auto& run = df.stages[0].instructions[1];
  EXPECT_EQ(run.keyword, "RUN");
  EXPECT_EQ(run.line, 3);
  EXPECT_EQ(run.end_line, 7);
  EXPECT_NE(run.args.find("apt-get install -y gcc"), std::string::npos);
  EXPECT_EQ(run.args.find("comment inside"), std::string::npos);
  const auto& copy = df.stages[1].instructions[1];
  EXPECT_EQ(copy.line, 9);
  EXPECT_EQ(copy.Flag("from").value_or("?"), "build");
  EXPECT_EQ(copy.Flag("chown").value_or("?"), "1:1");
  EXPECT_FALSE(copy.Flag("link").has_value());
  EXPECT_EQ(copy.args, "/out/app /app");
}

TEST(DockerfileParser, EscapeDirectiveAndSyntax) {
  Dockerfile df = MustParse(
      "# syntax=docker/dockerfile:1\n"
      "# escape=`\n"
      "\n"
      "FROM scratch\n"
      "COPY a `\n"
      "     b /dst\n");
  EXPECT_EQ(df.escape, '`');
  EXPECT_EQ(df.directives.at("syntax"), "docker/dockerfile:1");
  ASSERT_EQ(df.stages[0].instructions.size(), 2u);
  EXPECT_EQ(df.stages[0].instructions[1].args, "a b /dst");
}

TEST(DockerfileParser, DirectiveAfterCommentIsAComment) {
  Dockerfile df = MustParse("# hello\n# escape=`\nFROM scratch\n");
  EXPECT_EQ(df.escape, '\\');
  EXPECT_EQ(df.directives.count("escape"), 0u);
}

TEST(DockerfileParser, JsonAndShellForm) {
  Dockerfile df = MustParse(
      "FROM scratch\n"
      "ENTRYPOINT [\"/usr/bin/truegreen\", \"serve\"]\n"
      "CMD echo [not json\n");
  const auto& ep = df.stages[0].instructions[1];
  EXPECT_TRUE(ep.json_form);
  EXPECT_EQ(ep.json_args, (std::vector<std::string>{"/usr/bin/truegreen", "serve"}));
  EXPECT_FALSE(df.stages[0].instructions[2].json_form);
}

TEST(DockerfileParser, Heredocs) {
  Dockerfile df = MustParse(
      "FROM scratch AS a\n"
      "RUN <<EOF bash\n"
      "apt-get update\n"
      "FROM inside the heredoc is not an instruction\n"
      "EOF\n"
      "COPY <<-\"CONF\" /etc/app.conf\n"
      "\tkey=value\n"
      "\tCONF\n"
      "USER 1000\n");
  ASSERT_EQ(df.stages.size(), 1u);
  const auto& ins = df.stages[0].instructions;
  ASSERT_EQ(ins.size(), 4u);
  ASSERT_EQ(ins[1].heredocs.size(), 1u);
  EXPECT_EQ(ins[1].heredocs[0].delimiter, "EOF");
  EXPECT_NE(ins[1].heredocs[0].body.find("FROM inside"), std::string::npos);
  EXPECT_EQ(ins[1].end_line, 5);
  ASSERT_EQ(ins[2].heredocs.size(), 1u);
  EXPECT_EQ(ins[2].heredocs[0].delimiter, "CONF");
  EXPECT_EQ(ins[3].keyword, "USER");
  EXPECT_EQ(ins[3].line, 9);
}

TEST(DockerfileParser, GlobalArgsExpandInFrom) {
  std::string digest = "@sha256:" + std::string(64, 'b');
  Dockerfile df = MustParse(
      "ARG REPO=debian\n"
      "ARG TAG=12" +
      digest +
      "\n"
      "ARG NODEFAULT\n"
      "FROM ${REPO}:${TAG} AS build\n"
      "FROM $REPO:${MISSING:-slim}\n"
      "FROM ${NODEFAULT}\n"
      "FROM build\n");
  ASSERT_EQ(df.stages.size(), 4u);
  EXPECT_EQ(df.stages[0].base, "debian:12" + digest);
  EXPECT_EQ(df.stages[1].base, "debian:slim");
  EXPECT_TRUE(df.stages[1].unresolved_args.empty());
  EXPECT_EQ(df.stages[2].unresolved_args, std::vector<std::string>{"NODEFAULT"});
  EXPECT_EQ(df.stages[3].parent_stage, 0);
  EXPECT_EQ(df.RuntimeChain(), (std::vector<int>{3, 0}));

  Dockerfile over = MustParse("ARG TAG=12\nFROM debian:${TAG}\n", {{"TAG", "13"}});
  EXPECT_EQ(over.stages[0].base, "debian:13");
}

TEST(DockerfileParser, ShellWordsSplitsOperatorsAndQuotes) {
  auto w = ShellWords("a 'b c'&&d \"e\\\"f\";g|h # comment");
  EXPECT_EQ(w, (std::vector<std::string>{"a", "b c", "&&", "d", "e\"f", ";", "g", "|", "h"}));
}

TEST(DockerfileParser, BadInputNamesFileAndLine) {
  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"", "Dockerfile:1: no FROM"},
      {"# only a comment\n", "no FROM"},
      {"RUN echo hi\nFROM scratch\n", "Dockerfile:1: RUN before the first FROM"},
      {"FROM scratch\nFROBNICATE x\n", "Dockerfile:2: unknown instruction 'FROBNICATE'"},
      {"FROM a b c d\n", "Dockerfile:1: FROM needs"},
      {"FROM scratch\nRUN <<EOF\necho\n", "Dockerfile:2: heredoc <<EOF is never terminated"},
      {"# escape=x\nFROM scratch\n", "invalid escape directive"},
  };
  for (const auto& c : cases) {
    auto r = ParseDockerfile(c.text, "Dockerfile");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.want), std::string::npos) << r.status().message();
  }
}

TEST(DockerIgnore, DockerSemantics) {
  DockerIgnore ig = DockerIgnore::Parse(
      "# comment\n"
      ".git\n"
      "*.onnx\n"
      "/build\n"
      "**/__pycache__\n"
      "docs/*.md\n"
      "!docs/README.md\n");
  EXPECT_TRUE(ig.Excludes(".git/HEAD"));  // parent directory matches
  EXPECT_TRUE(ig.Excludes("model.onnx"));
  EXPECT_FALSE(ig.Excludes("models/model.onnx"));  // '*' does not cross '/'
  EXPECT_TRUE(ig.Excludes("build/bin/x"));
  EXPECT_TRUE(ig.Excludes("a/b/__pycache__/m.pyc"));
  EXPECT_TRUE(ig.Excludes("docs/x.md"));
  EXPECT_FALSE(ig.Excludes("docs/README.md"));  // exception, later line wins
  EXPECT_FALSE(ig.Excludes("src/main.cc"));

  DockerIgnore allow = DockerIgnore::Parse("*\n!src\n**/*.onnx\n");
  EXPECT_TRUE(allow.Excludes("notes.txt"));
  EXPECT_FALSE(allow.Excludes("src/a/b.cc"));
  EXPECT_TRUE(allow.Excludes("src/a/b.onnx"));

  DockerIgnore glob = DockerIgnore::Parse("**/*.onnx\nw?ights/[a-c].bin\n");
  EXPECT_TRUE(glob.Excludes("a/b/c/model.onnx"));
  EXPECT_TRUE(glob.Excludes("model.onnx"));
  EXPECT_TRUE(glob.Excludes("weights/b.bin"));
  EXPECT_FALSE(glob.Excludes("weights/d.bin"));
}

}  // namespace
}  // namespace tg::audit

namespace tg::audit {
namespace {

TEST(DockerIgnore, OverLongPatternIsLiteral) {
  std::string longp(100000, 'a');
  DockerIgnore ig = DockerIgnore::Parse(longp + "\n*.onnx\n");
  EXPECT_EQ(ig.size(), 2u);
  EXPECT_TRUE(ig.Excludes(longp + "/x"));
  EXPECT_TRUE(ig.Excludes("m.onnx"));
  EXPECT_FALSE(ig.Excludes("b"));
}

}  // namespace
}  // namespace tg::audit
