// .dockerignore matching with the semantics of Docker's pattern matcher, so the audit answers
// "would this path be sent in the build context?" the way `docker build` and buildah do.
//
// Patterns are cleaned (duplicate and trailing slashes, `.` components), a leading `/` is dropped,
// `!` marks an exception, `#` lines are comments. `*` and `?` never match `/`; `**` matches any
// number of directories. A path is excluded when the last pattern that matches the path *or one of
// its parent directories* is not an exception. Note the consequence the audit reports: `*.onnx`
// only matches at the top of the context; `**/*.onnx` matches everywhere.
//
// Thread safety: an immutable value once built. Bad patterns (an unterminated `[`) are kept as
// literal text rather than rejected, like Docker's fallback.
#pragma once

#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace tg::audit {

class DockerIgnore {
 public:
  // Parses the text of a .dockerignore file.
  static DockerIgnore Parse(std::string_view text);

  // True when `path` (relative to the context, '/'-separated) is excluded from the context.
  bool Excludes(std::string_view path) const;
  std::size_t size() const { return patterns_.size(); }  // patterns parsed

 private:
  struct Pattern {
    std::string text;  // cleaned pattern, without the leading '!'
    bool exception = false;
    bool literal = false;  // over-long patterns compare literally (std::regex recursion bound)
    std::regex re;
  };
  std::vector<Pattern> patterns_;
};

}  // namespace tg::audit
