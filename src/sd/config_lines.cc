#include "sd/config_lines.h"

namespace tg::sd {

int JsonTopLevelKeyLine(std::string_view text, std::string_view key) {
  int line = 1, depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    if (c != '"') continue;
    const std::size_t start = i + 1;
    for (++i; i < text.size() && text[i] != '"'; ++i) {
      if (text[i] == '\\') ++i;  // an escaped character never ends the string
    }
    if (i >= text.size()) return 0;
    if (depth != 1 || text.substr(start, i - start) != key) continue;
    std::size_t j = i + 1;
    while (j < text.size() &&
           (text[j] == ' ' || text[j] == '\t' || text[j] == '\r' || text[j] == '\n')) {
      ++j;
    }
    if (j < text.size() && text[j] == ':') return line;
  }
  return 0;
}

common::Status WithFieldLine(common::Status status, const std::string& source,
                             std::string_view text) {
  const std::string prefix = source + ": field '";
  const std::string& m = status.message();
  if (status.ok() || m.rfind(prefix, 0) != 0) return status;
  const std::size_t end = m.find('\'', prefix.size());
  if (end == std::string::npos) return status;
  std::string_view key = std::string_view(m).substr(prefix.size(), end - prefix.size());
  key = key.substr(0, key.find('['));
  const int line = JsonTopLevelKeyLine(text, key);
  if (line == 0) return status;
  return common::Status(status.code(),
                        source + ":" + std::to_string(line) + m.substr(source.size()));
}

}  // namespace tg::sd
