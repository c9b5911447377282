// .dockerignore matching. Patterns become anchored regular expressions the way Docker's pattern
// matcher builds them; matching also tries every parent directory because excluding a directory
// excludes everything below it.
#include "audit/dockerfile/dockerfile_ignore.h"

#include <cctype>
#include <sstream>

namespace tg::audit {
namespace {

// filepath.Clean for '/'-separated relative paths: collapses "//", drops "." and resolves "..".
std::string CleanPath(std::string_view p) {
  std::vector<std::string> parts;
  std::size_t pos = 0;
  while (pos <= p.size()) {
    std::size_t slash = p.find('/', pos);
    std::string_view part =
        p.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos);
    if (part == "..") {
      if (!parts.empty() && parts.back() != "..") {
        parts.pop_back();
      } else {
        parts.emplace_back("..");
      }
    } else if (!part.empty() && part != ".") {
      parts.emplace_back(part);
    }
    if (slash == std::string_view::npos) break;
    pos = slash + 1;
  }
  std::string out;
  for (const auto& part : parts) {
    if (!out.empty()) out.push_back('/');
    out += part;
  }
  return out.empty() ? "." : out;
}

std::string PatternToRegex(const std::string& pattern) {
  static const std::string kSpecial = ".+()|{}$^";
  std::string re = "^";
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '*') {
      if (i + 1 < pattern.size() && pattern[i + 1] == '*') {
        ++i;
        if (i + 1 < pattern.size() && pattern[i + 1] == '/') ++i;  // "**/" behaves as "**"
        if (i + 1 >= pattern.size()) {
          re += ".*";
        } else {
          re += "(.*/)?";
        }
      } else {
        re += "[^/]*";
      }
    } else if (c == '?') {
      re += "[^/]";
    } else if (c == '\\' && i + 1 < pattern.size()) {
      ++i;
      re += "\\";
      re.push_back(pattern[i]);
    } else if (c == '[') {
      std::size_t close = pattern.find(']', i + 1);
      if (close == std::string::npos) {
        re += "\\[";
      } else {
        std::string cls = pattern.substr(i + 1, close - i - 1);
        if (!cls.empty() && cls[0] == '!') cls[0] = '^';
        re += "[" + cls + "]";
        i = close;
      }
    } else if (kSpecial.find(c) != std::string::npos) {
      re += "\\";
      re.push_back(c);
    } else {
      re.push_back(c);
    }
  }
  re += "$";
  return re;
}

bool Matches(const std::regex& re, const std::string& s) { return std::regex_match(s, re); }

}  // namespace

DockerIgnore DockerIgnore::Parse(std::string_view text) {
  DockerIgnore out;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    std::size_t e = line.find_last_not_of(" \t");
    line = line.substr(b, e - b + 1);
    if (line[0] == '#') continue;
    Pattern p;
    if (line[0] == '!') {
      p.exception = true;
      line = line.substr(1);
    }
    while (!line.empty() && line[0] == '/') line.erase(0, 1);
    if (line.empty()) continue;
    p.text = CleanPath(line);
    if (p.text.size() > 1024) {
      p.literal = true;
      out.patterns_.push_back(std::move(p));
      continue;
    }
    try {
      p.re = std::regex(PatternToRegex(p.text), std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error&) {
      // An odd character class: fall back to matching the pattern literally.
      std::string lit = "^";
      for (char c : p.text) {
        if (!std::isalnum(static_cast<unsigned char>(c))) lit.push_back('\\');
        lit.push_back(c);
      }
      p.re = std::regex(lit + "$");
    }
    out.patterns_.push_back(std::move(p));
  }
  return out;
}

bool DockerIgnore::Excludes(std::string_view raw_path) const {
  std::string path = CleanPath(raw_path);
  std::vector<std::string> parents;
  for (std::size_t pos = path.find('/'); pos != std::string::npos; pos = path.find('/', pos + 1)) {
    parents.push_back(path.substr(0, pos));
  }
  bool excluded = false;
  for (const Pattern& p : patterns_) {
    // Only a pattern that could change the answer is evaluated (as Docker does).
    if (p.exception != excluded) continue;
    auto match = [&p](const std::string& s) { return p.literal ? s == p.text : Matches(p.re, s); };
    bool m = match(path);
    for (std::size_t k = 0; !m && k < parents.size(); ++k) m = match(parents[k]);
    if (m) excluded = !p.exception;
  }
  return excluded;
}

}  // namespace tg::audit
