#include "policy/logscan_prefilter.h"

#include <algorithm>
#include <cstring>
#include <deque>

namespace tg::policy {
namespace {

using LiteralSet = std::vector<std::string>;  // every match contains one of these

bool IsAsciiAlnum(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

char FoldAscii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// The worth of a set as a filter: its shortest literal (after cutting), then fewer literals.
bool Better(const LiteralSet& a, const LiteralSet& b) {
  auto shortest = [](const LiteralSet& s) {
    std::size_t m = LiteralFinder::kMaxLiteral;
    for (const std::string& x : s) m = std::min(m, x.size());
    return m;
  };
  if (shortest(a) != shortest(b)) return shortest(a) > shortest(b);
  return a.size() < b.size();
}

// A recursive reader of RE2 syntax that tracks only what is certainly required. Every construct
// it does not know ends the current literal run (which only loses information), except those
// that could make it misread later bytes as literals (\Q...\E): those give up on the regex.
class Reader {
 public:
  explicit Reader(std::string_view re) : re_(re) {}

  std::optional<LiteralSet> Read() {
    std::optional<LiteralSet> s = Alternation();
    if (bad_ || i_ != re_.size()) return std::nullopt;
    return s;
  }

 private:
  // Alternatives up to a ')' or the end: one set from each, or nothing if one proves nothing.
  std::optional<LiteralSet> Alternation() {
    LiteralSet all;
    bool ok = true;
    for (;;) {
      std::optional<LiteralSet> s = Sequence();
      if (!s) ok = false;
      if (s && ok) all.insert(all.end(), s->begin(), s->end());
      if (bad_ || i_ >= re_.size() || re_[i_] != '|') break;
      ++i_;
    }
    if (!ok) return std::nullopt;
    return all;
  }

  // A quantifier at i_: its length and whether it allows zero repetitions; 0 when none.
  std::size_t Quantifier(bool* optional) const {
    const char c = re_[i_];
    if (c == '*' || c == '?') *optional = true;
    if (c == '+') *optional = false;
    if (c == '*' || c == '?' || c == '+') return 1;
    if (c != '{') return 0;
    std::size_t j = i_ + 1, min = 0, digits = 0;
    for (; j < re_.size() && re_[j] >= '0' && re_[j] <= '9'; ++j, ++digits) {
      min = std::min<std::size_t>(min * 10 + static_cast<std::size_t>(re_[j] - '0'), 100000);
    }
    if (digits == 0) return 0;  // "{" that is no repetition: a literal brace for RE2
    if (j < re_.size() && re_[j] == ',') {
      for (++j; j < re_.size() && re_[j] >= '0' && re_[j] <= '9';) ++j;
    }
    if (j >= re_.size() || re_[j] != '}') return 0;
    *optional = min == 0;
    return j + 1 - i_;
  }

  // Skips a character class starting at i_ ('['), POSIX classes inside it included.
  void SkipClass() {
    std::size_t j = i_ + 1;
    if (j < re_.size() && re_[j] == '^') ++j;
    if (j < re_.size() && re_[j] == ']') ++j;
    while (j < re_.size() && re_[j] != ']') {
      if (re_[j] == '\\') {
        j += 2;
      } else if (re_[j] == '[' && j + 1 < re_.size() && re_[j + 1] == ':') {
        std::size_t close = re_.find(":]", j + 2);
        if (close == std::string_view::npos) break;
        j = close + 2;
      } else {
        ++j;
      }
    }
    if (j >= re_.size()) {
      bad_ = true;
      i_ = re_.size();
      return;
    }
    i_ = j + 1;
  }

  // Skips an escape at i_ ('\'); returns the literal character it stands for, or 0 when it is a
  // class, an assertion or a character this reader does not keep in literals.
  char Escape() {
    if (i_ + 1 >= re_.size()) {
      bad_ = true;
      i_ = re_.size();
      return 0;
    }
    const unsigned char d = static_cast<unsigned char>(re_[i_ + 1]);
    i_ += 2;
    if (!IsAsciiAlnum(d)) {
      return d > ' ' && d < 0x7f ? static_cast<char>(d) : 0;  // \. \[ \\ ... are literals
    }
    auto skip_braced_or = [&](std::size_t n) {
      if (i_ < re_.size() && re_[i_] == '{') {
        std::size_t close = re_.find('}', i_);
        i_ = close == std::string_view::npos ? re_.size() : close + 1;
      } else {
        i_ = std::min(re_.size(), i_ + n);
      }
    };
    if (d == 'Q') bad_ = true;  // \Q...\E quotes metacharacters: not read here
    if (d == 'x') skip_braced_or(2);
    if (d == 'p' || d == 'P') skip_braced_or(1);
    if (d >= '0' && d <= '7') {
      for (int k = 0; k < 2 && i_ < re_.size() && re_[i_] >= '0' && re_[i_] <= '7'; ++k) ++i_;
    }
    return 0;
  }

  // A group starting at i_ ('('): its set, nullopt when it proves nothing. A flag group "(?i)"
  // sets *flags_only.
  std::optional<LiteralSet> Group(bool* flags_only) {
    *flags_only = false;
    ++i_;
    if (i_ < re_.size() && re_[i_] == '?') {
      ++i_;
      if (i_ < re_.size() && (re_[i_] == 'P' || re_[i_] == '<')) {
        std::size_t close = re_.find('>', i_);
        if (close == std::string_view::npos) bad_ = true;
        i_ = close == std::string_view::npos ? re_.size() : close + 1;
      } else {
        while (i_ < re_.size() && re_[i_] != '\0' && std::strchr("imsU-", re_[i_]) != nullptr) {
          ++i_;
        }
        if (i_ < re_.size() && re_[i_] == ')') {
          ++i_;
          *flags_only = true;
          return std::nullopt;
        }
        if (i_ >= re_.size() || re_[i_] != ':') bad_ = true;
        ++i_;
      }
    }
    std::optional<LiteralSet> s = Alternation();
    if (i_ >= re_.size() || re_[i_] != ')') {
      bad_ = true;
      return std::nullopt;
    }
    ++i_;
    return s;
  }

  // One alternative: the best of its required literal runs and required groups.
  std::optional<LiteralSet> Sequence() {
    std::vector<LiteralSet> found;
    std::string run;
    enum { kNone, kChar, kGroup, kOther } last = kNone;
    std::optional<LiteralSet> group;  // the last group, until we know no quantifier follows
    auto end_run = [&] {
      if (!run.empty()) found.push_back({run});
      run.clear();
    };
    while (!bad_ && i_ < re_.size() && re_[i_] != '|' && re_[i_] != ')') {
      bool optional = false;
      if (std::size_t q = Quantifier(&optional); q != 0) {
        i_ += q;
        if (i_ < re_.size() && re_[i_] == '?') ++i_;  // non-greedy
        if (last == kChar && optional) run.pop_back();
        if (last == kGroup && !optional && group) found.push_back(*group);
        end_run();
        group.reset();
        last = kOther;
        continue;
      }
      if (last == kGroup && group) found.push_back(*group);
      group.reset();
      const unsigned char c = static_cast<unsigned char>(re_[i_]);
      char literal = 0;
      if (c == '\\') {
        literal = Escape();
      } else if (c == '[') {
        SkipClass();
      } else if (c == '(') {
        end_run();
        bool flags_only = false;
        group = Group(&flags_only);
        last = flags_only ? kOther : kGroup;
        continue;
      } else {
        ++i_;
        // Metacharacters, stray closers, whitespace (a space matches any run of whitespace,
        // line breaks included) and non-ASCII bytes end a run.
        if (c > ' ' && c < 0x7f && std::strchr(".^$]}", c) == nullptr) literal = c;
      }
      if (literal != 0) {
        run += FoldAscii(literal);
        last = kChar;
      } else {
        end_run();
        last = kOther;
      }
    }
    if (last == kGroup && group) found.push_back(*group);
    end_run();
    if (found.empty()) return std::nullopt;
    return *std::min_element(found.begin(), found.end(), Better);
  }

  std::string_view re_;
  std::size_t i_ = 0;
  bool bad_ = false;
};

}  // namespace

std::optional<std::vector<std::string>> RequiredLiterals(std::string_view regex) {
  std::optional<LiteralSet> s = Reader(regex).Read();
  if (!s || s->empty()) return std::nullopt;
  std::sort(s->begin(), s->end());
  s->erase(std::unique(s->begin(), s->end()), s->end());
  return s;
}

std::span<const std::string_view> NonAsciiFolds() {
  static constexpr std::string_view kFolds[] = {"\xc5\xbf", "\xe2\x84\xaa"};
  return kFolds;
}

std::optional<LiteralFinder> LiteralFinder::Build(const std::vector<std::string>& literals) {
  LiteralFinder f;
  std::vector<std::string> lits;
  for (const std::string& l : literals) {
    std::string cut = l.substr(0, kMaxLiteral);
    for (char& c : cut) c = FoldAscii(c);
    if (!cut.empty()) lits.push_back(std::move(cut));
  }
  if (lits.empty()) return std::nullopt;
  std::size_t classes = 1;
  for (const std::string& l : lits) {
    f.max_length_ = std::max(f.max_length_, l.size());
    for (char c : l) {
      auto& k = f.class_of_[static_cast<unsigned char>(c)];
      if (k == 0) k = static_cast<std::uint8_t>(classes++);
    }
  }
  for (int c = 'A'; c <= 'Z'; ++c) f.class_of_[c] = f.class_of_[c - 'A' + 'a'];
  // The trie (goto function), then failure links breadth first, filling every transition.
  std::vector<std::vector<std::int32_t>> go(1, std::vector<std::int32_t>(classes, -1));
  std::vector<bool> final(1, false);
  for (const std::string& l : lits) {
    std::size_t s = 0;
    for (char c : l) {
      auto k = f.class_of_[static_cast<unsigned char>(c)];
      if (go[s][k] < 0) {
        if (go.size() >= kMaxStates) return std::nullopt;
        go[s][k] = static_cast<std::int32_t>(go.size());
        go.emplace_back(classes, -1);
        final.push_back(false);
      }
      s = static_cast<std::size_t>(go[s][k]);
    }
    final[s] = true;
  }
  std::vector<std::int32_t> fail(go.size(), 0);
  std::deque<std::size_t> queue;
  for (std::size_t k = 0; k < classes; ++k) {
    if (go[0][k] < 0) {
      go[0][k] = 0;
    } else if (go[0][k] != 0) {
      queue.push_back(static_cast<std::size_t>(go[0][k]));
    }
  }
  while (!queue.empty()) {
    const std::size_t s = queue.front();
    queue.pop_front();
    for (std::size_t k = 0; k < classes; ++k) {
      const std::int32_t t = go[s][k];
      const std::int32_t via_fail = go[static_cast<std::size_t>(fail[s])][k];
      if (t < 0) {
        go[s][k] = via_fail;
        continue;
      }
      fail[static_cast<std::size_t>(t)] = via_fail;
      if (final[static_cast<std::size_t>(via_fail)]) final[static_cast<std::size_t>(t)] = true;
      queue.push_back(static_cast<std::size_t>(t));
    }
  }
  // Renumber: states that end no literal first, so "ends a literal" is one comparison.
  std::vector<std::uint32_t> row(go.size());
  std::uint32_t n = 0;
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) f.first_final_ = n * static_cast<std::uint32_t>(classes);
    for (std::size_t s = 0; s < go.size(); ++s) {
      if (final[s] == (pass == 1)) row[s] = n++ * static_cast<std::uint32_t>(classes);
    }
  }
  f.next_.assign(go.size() * classes, 0);
  for (std::size_t s = 0; s < go.size(); ++s) {
    for (std::size_t k = 0; k < classes; ++k) {
      f.next_[row[s] + k] = row[static_cast<std::size_t>(go[s][k])];
    }
  }
  return f;
}

const char* LiteralFinder::Find(const char* begin, const char* end) const {
  const auto* p = reinterpret_cast<const unsigned char*>(begin);
  const auto* e = reinterpret_cast<const unsigned char*>(end);
  const std::uint32_t* next = next_.data();
  const std::uint8_t* cls = class_of_.data();
  std::uint32_t s = 0;
  const unsigned char* hit_b = nullptr;
  if (e - p >= 4096) {
    // Two halves in lockstep: one step is a dependent load, so two independent automata run in
    // about the time of one. The second starts max_length_ - 1 bytes early so that a literal
    // ending in its half is seen whole; the first half's hit, if any, is the earliest.
    const unsigned char* mid = p + (e - p) / 2;
    const unsigned char* q = mid - (max_length_ - 1);
    std::uint32_t t = 0;
    for (; p < mid; ++p, ++q) {
      s = next[s + cls[*p]];
      t = next[t + cls[*q]];
      if ((s >= first_final_) | (t >= first_final_)) break;
    }
    if (p < mid && s >= first_final_) return reinterpret_cast<const char*>(p);
    if (p < mid) {  // the second half hit first: the first half may still hit before it
      hit_b = q;
      e = mid;
      ++p;
    } else {  // the first half holds none: go on with the second from where it stands
      p = q;
      s = t;
    }
  }
  for (; p < e; ++p) {
    s = next[s + cls[*p]];
    if (s >= first_final_) return reinterpret_cast<const char*>(p);
  }
  return hit_b != nullptr ? reinterpret_cast<const char*>(hit_b) : end;
}

}  // namespace tg::policy
