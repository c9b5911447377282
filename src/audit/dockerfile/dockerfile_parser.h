// A Dockerfile parser for auditing: instructions with their source lines, stages, flags, JSON and
// shell forms, heredocs, parser directives and ARG substitution in FROM.
//
// It follows the BuildKit frontend's syntax closely enough to audit real files: line
// continuations (the escape character, `\` or the one set by `# escape=`), comment and blank
// lines inside continuations, `<<EOF` / `<<-EOF` / `<<"EOF"` heredocs on RUN/COPY/ADD, flags
// (`--from=`, `--mount=`, `--platform=`), `FROM image [AS name]` and the global ARGs declared
// before the first FROM (with `${VAR}`, `$VAR`, `${VAR:-default}`, `${VAR:+alt}` expansion).
// It never runs anything.
//
// Failure behaviour: ParseDockerfile returns INVALID_ARG "<source>:<line>: <what>" for input
// that is not a Dockerfile (no FROM, unknown instruction, instruction before the first FROM,
// malformed FROM, unterminated heredoc). Thread safety: plain value types; functions are pure.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tg::audit {

struct DockerfileHeredoc {
  std::string delimiter;  // "EOF"
  std::string body;       // lines between the instruction and the delimiter, '\n'-terminated
  int line = 0;           // line of the first body line
};

struct DockerfileInstruction {
  int line = 0;                    // 1-based line where the instruction starts
  int end_line = 0;                // last line (continuations and heredocs included)
  std::string keyword;             // upper case: "FROM", "RUN", ...
  std::vector<std::string> flags;  // leading flags as written: "--from=build", "--mount=..."
  std::string args;                // the rest, continuations joined with a space
  bool json_form = false;          // args is a JSON array of strings (exec form)
  std::vector<std::string> json_args;
  std::vector<DockerfileHeredoc> heredocs;

  // Value of flag `--name=value` (name without dashes); nullopt when absent. `--name` without a
  // value yields "".
  std::optional<std::string> Flag(std::string_view name) const;
  // All values of a repeatable flag (`--mount`).
  std::vector<std::string> Flags(std::string_view name) const;
};

struct DockerfileStage {
  int index = 0;
  std::string name;                          // lower-cased `AS` name, "" when unnamed
  std::string base_raw;                      // image as written in FROM ("${BASE}")
  std::string base;                          // after global ARG substitution
  std::vector<std::string> unresolved_args;  // variables in FROM that had no value
  int parent_stage = -1;                     // index of an earlier stage that `base` names, else -1
  int line = 0;                              // line of the FROM
  std::vector<DockerfileInstruction> instructions;  // after FROM, up to the next FROM
};

struct Dockerfile {
  std::string source;                             // file name used in messages
  std::map<std::string, std::string> directives;  // "syntax", "escape", "check" (lower case keys)
  char escape = '\\';
  std::vector<DockerfileInstruction> global_args;  // ARGs before the first FROM
  std::vector<DockerfileStage> stages;

  // Index of the stage named `name` (case-insensitive) or given as a number, else -1.
  int StageIndex(std::string_view name) const;
  // The final stage and the earlier stages it is built FROM, final first.
  std::vector<int> RuntimeChain() const;
};

// Parses `text`. `build_args` override the defaults of global ARGs (like --build-arg).
common::Result<Dockerfile> ParseDockerfile(
    const std::string& text, const std::string& source,
    const std::map<std::string, std::string>& build_args = {});

// Expands $VAR / ${VAR} / ${VAR:-word} / ${VAR:+word} using `vars`; a variable without a value
// expands to "" and its name is appended to `unresolved` (when not null). `\$` stays a literal $.
std::string ExpandDockerVariables(std::string_view s,
                                  const std::map<std::string, std::string>& vars,
                                  std::vector<std::string>* unresolved);

// Splits shell-form text into words, honouring single/double quotes and backslash escapes; shell
// operators (&&, ||, ;, |, newline) become their own words so callers can split commands.
std::vector<std::string> ShellWords(std::string_view text);

}  // namespace tg::audit
