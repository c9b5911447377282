// Reading C++ sources for the house rules (tests/house_rules*_test.cc): the files under a folder,
// and the code alone, with comments, literals and preprocessor lines blanked. Not a parser: enough
// for counting braces and finding names at the start of a line. Thread-safe.
#pragma once

#include <cctype>
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace tg::testing {

// The regular files under `root` (recursively) whose extension is one of `exts` (".cc"); none when
// `root` does not exist.
inline std::vector<std::filesystem::path> FilesUnder(const std::filesystem::path& root,
                                                     const std::vector<std::string>& exts) {
  std::vector<std::filesystem::path> out;
  if (!std::filesystem::exists(root)) return out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    std::string ext = e.path().extension().string();
    for (const auto& want : exts) {
      if (ext == want) out.push_back(e.path());
    }
  }
  return out;
}

// `text` with comments, string and character literals (raw strings included) and preprocessor
// lines blanked out, newlines kept, so braces can be counted.
inline std::string CodeOnly(const std::string& text) {
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

}  // namespace tg::testing
