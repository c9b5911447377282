// Dockerfile parsing. The structure mirrors BuildKit's two passes: first logical lines
// (continuations, comments, heredocs), then instructions and stages.
#include "audit/dockerfile/dockerfile_parser.h"
#include "common/strings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <set>

namespace tg::audit {
namespace {

using common::Result;
using common::Status;

constexpr std::size_t kArgExpansionMargin = 64 * 1024;

using common::Lower;
using common::Upper;

// A line's leading blanks are spaces and tabs only; at its end any ASCII whitespace goes.
std::string_view TrimLeft(std::string_view s) { return common::TrimLeft(s, " \t"); }
std::string_view Trim(std::string_view s) { return common::TrimRight(TrimLeft(s)); }

const std::set<std::string, std::less<>>& KnownInstructions() {
  static const std::set<std::string, std::less<>> k = {
      "FROM",    "RUN", "CMD",     "LABEL",      "MAINTAINER",  "EXPOSE",
      "ENV",     "ADD", "COPY",    "ENTRYPOINT", "VOLUME",      "USER",
      "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"};
  return k;
}

bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Heredoc markers in the first line of a RUN/COPY/ADD: <<EOF, <<-EOF, <<"EOF", <<'EOF'. A `<<<`
// here-string is not a heredoc.
std::vector<std::string> HeredocDelimiters(std::string_view text) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i + 2 < text.size(); ++i) {
    if (text[i] != '<' || text[i + 1] != '<') continue;
    if (i > 0 && text[i - 1] == '<') continue;
    std::size_t j = i + 2;
    if (j < text.size() && text[j] == '<') {
      i = j;
      continue;
    }
    if (j < text.size() && text[j] == '-') ++j;
    char quote = 0;
    if (j < text.size() && (text[j] == '"' || text[j] == '\'')) quote = text[j++];
    std::size_t start = j;
    while (j < text.size() && IsNameChar(text[j])) ++j;
    if (j == start || std::isdigit(static_cast<unsigned char>(text[start]))) continue;
    if (quote != 0) {
      if (j >= text.size() || text[j] != quote) continue;
    }
    out.emplace_back(text.substr(start, j - start));
    i = j;
  }
  return out;
}

// Reads the leading `--flag[=value]` words of an instruction's arguments.
void SplitFlags(std::string_view args, std::vector<std::string>* flags, std::string* rest) {
  std::string_view s = TrimLeft(args);
  while (s.size() > 2 && s[0] == '-' && s[1] == '-') {
    std::size_t end = 0;
    char quote = 0;
    while (end < s.size()) {
      char c = s[end];
      if (quote != 0) {
        if (c == quote) quote = 0;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == ' ' || c == '\t') {
        break;
      }
      ++end;
    }
    flags->emplace_back(s.substr(0, end));
    s = TrimLeft(s.substr(end));
  }
  *rest = std::string(Trim(s));
}

struct RawInstruction {
  int line = 0;
  int end_line = 0;
  std::string text;  // keyword + args, continuations joined
  std::vector<DockerfileHeredoc> heredocs;
};

bool LooksLikeDirective(std::string_view line, std::string* key, std::string* value) {
  line = TrimLeft(line);
  if (line.empty() || line[0] != '#') return false;
  line = TrimLeft(line.substr(1));
  std::size_t i = 0;
  while (i < line.size() && (IsNameChar(line[i]) || line[i] == '-')) ++i;
  if (i == 0) return false;
  std::string_view k = line.substr(0, i);
  std::string_view rest = TrimLeft(line.substr(i));
  if (rest.empty() || rest[0] != '=') return false;
  *key = Lower(k);
  *value = std::string(Trim(rest.substr(1)));
  return true;
}

// Upper bound on the bytes that variable references inside one value can add: the value's own
// references, each as long as the longest value so far. Cheap to compute before expanding.
std::size_t ExpansionUpperBound(std::string_view value,
                                const std::map<std::string, std::string>& vars) {
  std::size_t longest = 0;
  for (const auto& [k, v] : vars) longest = std::max(longest, v.size());
  std::size_t refs = static_cast<std::size_t>(std::count(value.begin(), value.end(), '$'));
  return value.size() + refs * longest;
}

Status ExpandArgBounded(const std::string& value, const std::string& name, int line,
                        const std::string& source, std::size_t budget,
                        std::map<std::string, std::string>* vars, std::size_t* expanded) {
  std::size_t bound = ExpansionUpperBound(value, *vars);
  if (bound > budget || *expanded + bound > budget) {
    return Status::InvalidArg(fmt::format(
        "{}:{}: ARG {}: expansion limit hit: its default would expand to more than the {} bytes "
        "allowed for all ARG values (4x the Dockerfile plus {} KiB); references to earlier ARGs "
        "multiply the text",
        source, line, name, budget, kArgExpansionMargin / 1024));
  }
  std::string v = ExpandDockerVariables(value, *vars, nullptr);
  *expanded += v.size();
  (*vars)[name] = std::move(v);
  return Status::Ok();
}

}  // namespace

std::optional<std::string> DockerfileInstruction::Flag(std::string_view name) const {
  std::string prefix = "--" + std::string(name);
  for (const auto& f : flags) {
    if (f == prefix) return std::string();
    if (f.size() > prefix.size() && f.compare(0, prefix.size(), prefix) == 0 &&
        f[prefix.size()] == '=') {
      return f.substr(prefix.size() + 1);
    }
  }
  return std::nullopt;
}

std::vector<std::string> DockerfileInstruction::Flags(std::string_view name) const {
  std::vector<std::string> out;
  std::string prefix = "--" + std::string(name) + "=";
  for (const auto& f : flags) {
    if (f.compare(0, prefix.size(), prefix) == 0) out.push_back(f.substr(prefix.size()));
  }
  return out;
}

int Dockerfile::StageIndex(std::string_view name) const {
  std::string n = Lower(name);
  if (!n.empty() && std::all_of(n.begin(), n.end(), [](char c) { return std::isdigit(c); })) {
    if (n.size() > 6) return -1;
    int idx = std::stoi(n);
    return idx < static_cast<int>(stages.size()) ? idx : -1;
  }
  for (const auto& s : stages) {
    if (!s.name.empty() && s.name == n) return s.index;
  }
  return -1;
}

std::vector<int> Dockerfile::RuntimeChain() const {
  std::vector<int> chain;
  if (stages.empty()) return chain;
  int cur = static_cast<int>(stages.size()) - 1;
  while (cur >= 0 && std::find(chain.begin(), chain.end(), cur) == chain.end()) {
    chain.push_back(cur);
    cur = stages[cur].parent_stage;
  }
  return chain;
}

std::string ExpandDockerVariables(std::string_view s,
                                  const std::map<std::string, std::string>& vars,
                                  std::vector<std::string>* unresolved) {
  std::string out;
  auto lookup = [&](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  auto note = [&](const std::string& name) {
    if (unresolved != nullptr &&
        std::find(unresolved->begin(), unresolved->end(), name) == unresolved->end()) {
      unresolved->push_back(name);
    }
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '\\' && i + 1 < s.size() && s[i + 1] == '$') {
      out.push_back('$');
      ++i;
      continue;
    }
    if (c != '$' || i + 1 >= s.size()) {
      out.push_back(c);
      continue;
    }
    if (s[i + 1] == '{') {
      std::size_t close = s.find('}', i + 2);
      if (close == std::string_view::npos) {
        out.append(s.substr(i));
        break;
      }
      std::string_view inner = s.substr(i + 2, close - i - 2);
      std::size_t op = inner.find(':');
      std::string name(inner.substr(0, op));
      std::optional<std::string> v = lookup(name);
      if (op != std::string_view::npos && op + 1 < inner.size()) {
        char kind = inner[op + 1];
        std::string word(inner.substr(op + 2));
        if (kind == '-') {
          out += (v && !v->empty()) ? *v : word;
        } else if (kind == '+') {
          out += (v && !v->empty()) ? word : "";
        } else {
          if (!v) note(name);
          out += v.value_or("");
        }
      } else {
        if (!v) note(name);
        out += v.value_or("");
      }
      i = close;
      continue;
    }
    std::size_t j = i + 1;
    while (j < s.size() && IsNameChar(s[j])) ++j;
    if (j == i + 1) {
      out.push_back(c);
      continue;
    }
    std::string name(s.substr(i + 1, j - i - 1));
    std::optional<std::string> v = lookup(name);
    if (!v) note(name);
    out += v.value_or("");
    i = j - 1;
  }
  return out;
}

std::vector<std::string> ShellWords(std::string_view text) {
  std::vector<std::string> words;
  std::string cur;
  bool have = false;
  auto flush = [&] {
    if (have) words.push_back(cur);
    cur.clear();
    have = false;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\'') {
      std::size_t end = text.find('\'', i + 1);
      if (end == std::string_view::npos) end = text.size();
      cur.append(text.substr(i + 1, end - i - 1));
      have = true;
      i = end;
    } else if (c == '"') {
      std::size_t j = i + 1;
      for (; j < text.size() && text[j] != '"'; ++j) {
        if (text[j] == '\\' && j + 1 < text.size()) ++j;
        cur.push_back(text[j]);
      }
      have = true;
      i = j;
    } else if (c == '\\' && i + 1 < text.size()) {
      if (text[i + 1] != '\n') {
        cur.push_back(text[i + 1]);
        have = true;
      }
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      flush();
    } else if (c == '\n' || c == ';') {
      flush();
      words.emplace_back(";");
    } else if (c == '&' || c == '|') {
      flush();
      if (i + 1 < text.size() && text[i + 1] == c) {
        words.emplace_back(std::string(2, c));
        ++i;
      } else {
        words.emplace_back(1, c);
      }
    } else if (c == '#' && !have) {
      // A comment runs to the end of the line.
      std::size_t nl = text.find('\n', i);
      if (nl == std::string_view::npos) break;
      i = nl - 1;
    } else {
      cur.push_back(c);
      have = true;
    }
  }
  flush();
  return words;
}

namespace {

// The parse in named steps: physical lines, directives, logical instructions (continuations and
// heredocs), then instructions into stages with the global ARG scope.
struct Parser {
  const std::string& source;
  std::vector<std::string> lines;
  std::size_t i = 0;  // next physical line
  Dockerfile* df;

  Status Err(int line, const std::string& what) const {
    return Status::InvalidArg(fmt::format("{}:{}: {}", source, line, what));
  }
};

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines = common::Split(text, '\n', common::SplitMode::kKeepEmpty);
  for (std::string& line : lines) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
  }
  if (!lines.empty() && lines[0].rfind("\xEF\xBB\xBF", 0) == 0) lines[0].erase(0, 3);
  return lines;
}

// Parser directives: only at the very top, before any blank line, comment or instruction.
Status ReadDirectives(Parser& p) {
  for (; p.i < p.lines.size(); ++p.i) {
    std::string key, value;
    if (!LooksLikeDirective(p.lines[p.i], &key, &value)) break;
    if (p.df->directives.count(key) != 0) break;  // a repeated directive is a plain comment
    p.df->directives[key] = value;
  }
  if (auto it = p.df->directives.find("escape"); it != p.df->directives.end()) {
    if (it->second != "\\" && it->second != "`") {
      return p.Err(1, fmt::format("invalid escape directive '{}': must be \\ or `", it->second));
    }
    p.df->escape = it->second[0];
  }
  return Status::Ok();
}

// Joins an instruction's continuation lines, from the current line; leaves p.i on its last line.
std::string JoinContinuation(Parser& p) {
  std::string joined;
  std::string_view cur = TrimLeft(p.lines[p.i]);
  while (true) {
    std::string_view t = Trim(cur);
    bool cont = !t.empty() && t.back() == p.df->escape;
    if (cont) t = Trim(t.substr(0, t.size() - 1));
    if (!joined.empty() && !t.empty()) joined.push_back(' ');
    joined.append(t);
    if (!cont) break;
    // Continuation: comment lines and blank lines in between are skipped, as BuildKit does.
    ++p.i;
    while (p.i < p.lines.size()) {
      std::string_view l = TrimLeft(p.lines[p.i]);
      if (Trim(l).empty() || l[0] == '#') {
        ++p.i;
        continue;
      }
      break;
    }
    if (p.i >= p.lines.size()) break;
    cur = p.lines[p.i];
  }
  return joined;
}

// Heredoc bodies of a RUN/COPY/ADD, read from the line after the instruction.
Status ReadHeredocs(Parser& p, RawInstruction* raw) {
  std::string kw = Upper(raw->text.substr(0, raw->text.find_first_of(" \t")));
  if (kw != "RUN" && kw != "COPY" && kw != "ADD") return Status::Ok();
  for (const std::string& delim : HeredocDelimiters(raw->text)) {
    DockerfileHeredoc h;
    h.delimiter = delim;
    h.line = static_cast<int>(p.i) + 1;
    bool closed = false;
    while (p.i < p.lines.size()) {
      std::string_view l = p.lines[p.i++];
      std::string_view stripped = l;
      while (!stripped.empty() && stripped.front() == '\t') stripped.remove_prefix(1);
      if (l == delim || stripped == delim) {
        closed = true;
        break;
      }
      h.body.append(l);
      h.body.push_back('\n');
    }
    if (!closed) {
      return p.Err(raw->line, fmt::format("heredoc <<{} is never terminated (no line '{}' before "
                                          "the end of the file)",
                                          delim, delim));
    }
    raw->end_line = static_cast<int>(p.i);
    raw->heredocs.push_back(std::move(h));
  }
  return Status::Ok();
}

Result<std::vector<RawInstruction>> LogicalLines(Parser& p) {
  std::vector<RawInstruction> raws;
  while (p.i < p.lines.size()) {
    std::string_view first = TrimLeft(p.lines[p.i]);
    if (Trim(first).empty() || first[0] == '#') {
      ++p.i;
      continue;
    }
    RawInstruction raw;
    raw.line = static_cast<int>(p.i) + 1;
    raw.text = JoinContinuation(p);
    raw.end_line = static_cast<int>(std::min(p.i, p.lines.size() - 1)) + 1;
    ++p.i;
    TG_RETURN_IF_ERROR(ReadHeredocs(p, &raw));
    raws.push_back(std::move(raw));
  }
  return raws;
}

Result<DockerfileInstruction> MakeInstruction(const Parser& p, RawInstruction& raw) {
  DockerfileInstruction ins;
  ins.line = raw.line;
  ins.end_line = raw.end_line;
  std::size_t sp = raw.text.find_first_of(" \t");
  ins.keyword = Upper(raw.text.substr(0, sp));
  std::string rest = sp == std::string::npos ? "" : raw.text.substr(sp + 1);
  if (KnownInstructions().count(ins.keyword) == 0) {
    return p.Err(raw.line, fmt::format("unknown instruction '{}' (expected one of FROM, RUN, "
                                       "COPY, ADD, ENV, ARG, ...)",
                                       raw.text.substr(0, sp)));
  }
  SplitFlags(rest, &ins.flags, &ins.args);
  ins.heredocs = std::move(raw.heredocs);
  if (!ins.args.empty() && ins.args.front() == '[') {
    nlohmann::json j = nlohmann::json::parse(ins.args, nullptr, false);
    if (j.is_array() &&
        std::all_of(j.begin(), j.end(), [](const auto& e) { return e.is_string(); })) {
      ins.json_form = true;
      for (const auto& e : j) ins.json_args.push_back(e.get<std::string>());
    }
  }
  return ins;
}

// The global ARG scope. Every ARG default may name earlier ones several times, so values can
// double per line; the sum of expanded values is held to the input's size (plus a margin), never
// to what the text asks.
struct ArgScope {
  std::map<std::string, std::string> vars;
  std::size_t budget = 0;
  std::size_t expanded = 0;
};

// Stages per Dockerfile. Real multi-stage builds have a handful; each stage costs kilobytes and
// every FROM looks up the stages before it, so the count is refused past this, not carried.
constexpr std::size_t kMaxStages = 1000;

Status AddStage(Parser& p, DockerfileInstruction ins, const ArgScope& args) {
  if (p.df->stages.size() >= kMaxStages) {
    return p.Err(ins.line,
                 fmt::format("FROM: more than {} stages (the limit per Dockerfile)", kMaxStages));
  }
  std::vector<std::string> w = ShellWords(ins.args);
  if (!(w.size() == 1 || (w.size() == 3 && Lower(w[1]) == "as"))) {
    return p.Err(ins.line,
                 fmt::format("FROM needs 'IMAGE' or 'IMAGE AS NAME', found '{}'", ins.args));
  }
  DockerfileStage st;
  st.index = static_cast<int>(p.df->stages.size());
  st.line = ins.line;
  st.base_raw = w[0];
  if (ExpansionUpperBound(w[0], args.vars) > args.budget) {
    return p.Err(ins.line, fmt::format("FROM: expansion limit hit: the image expands to more "
                                       "than {} bytes",
                                       args.budget));
  }
  st.base = ExpandDockerVariables(w[0], args.vars, &st.unresolved_args);
  if (w.size() == 3) st.name = Lower(w[2]);
  st.parent_stage = p.df->StageIndex(st.base);
  if (st.parent_stage >= 0 && std::isdigit(static_cast<unsigned char>(st.base[0]))) {
    st.parent_stage = -1;  // FROM does not accept stage numbers; "0" would be an image name
  }
  st.instructions.push_back(std::move(ins));
  p.df->stages.push_back(std::move(st));
  return Status::Ok();
}

// ARG NAME[=default] [NAME2[=default2] ...] before the first FROM.
Status AddGlobalArg(Parser& p, DockerfileInstruction ins,
                    const std::map<std::string, std::string>& build_args, ArgScope* args) {
  if (ins.keyword != "ARG") {
    return p.Err(ins.line,
                 fmt::format("{} before the first FROM (only ARG may come first)", ins.keyword));
  }
  for (const std::string& word : ShellWords(ins.args)) {
    std::size_t eq = word.find('=');
    std::string name = word.substr(0, eq);
    if (name.empty()) continue;
    if (auto it = build_args.find(name); it != build_args.end()) {
      args->vars[name] = it->second;
    } else if (eq != std::string::npos) {
      TG_RETURN_IF_ERROR(ExpandArgBounded(word.substr(eq + 1), name, ins.line, p.source,
                                          args->budget, &args->vars, &args->expanded));
    }
  }
  p.df->global_args.push_back(std::move(ins));
  return Status::Ok();
}

}  // namespace

Result<Dockerfile> ParseDockerfile(const std::string& text, const std::string& source,
                                   const std::map<std::string, std::string>& build_args) {
  Dockerfile df;
  df.source = source;
  Parser p{source, SplitLines(text), 0, &df};
  TG_RETURN_IF_ERROR(ReadDirectives(p));
  TG_ASSIGN_OR_RETURN(std::vector<RawInstruction> raws, LogicalLines(p));
  ArgScope args;
  args.budget = 4 * text.size() + kArgExpansionMargin;
  for (RawInstruction& raw : raws) {
    TG_ASSIGN_OR_RETURN(DockerfileInstruction ins, MakeInstruction(p, raw));
    if (ins.keyword == "FROM") {
      TG_RETURN_IF_ERROR(AddStage(p, std::move(ins), args));
    } else if (df.stages.empty()) {
      TG_RETURN_IF_ERROR(AddGlobalArg(p, std::move(ins), build_args, &args));
    } else {
      df.stages.back().instructions.push_back(std::move(ins));
    }
  }
  if (df.stages.empty()) {
    return p.Err(std::max<int>(1, static_cast<int>(p.lines.size())),
                 "no FROM instruction: this is not a Dockerfile");
  }
  return df;
}

}  // namespace tg::audit
