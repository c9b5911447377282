// The log scanner's literal prefilter. For each pattern, RequiredLiterals reads off the regex a
// set of literals of which every match contains at least one; LiteralFinder searches all of them
// at once (an Aho-Corasick automaton that folds ASCII case). A line in which the finder sees none
// of them cannot match any pattern, so most lines of a log never reach the regex engine.
//
// Soundness is the contract: a literal is only reported as required when every match contains
// it, and a construct the reader does not understand gives "no literal" (the prefilter is then
// off for that scanner), never a guess.
//
// Thread safety: RequiredLiterals is pure; LiteralFinder is immutable after construction.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tg::policy {

// Literals (ASCII lower case, no whitespace, no non-ASCII byte) of which every match of `regex`
// (RE2 syntax, already known to compile, matched case-insensitively) contains one; nullopt when
// no such set can be read off the regex (for example `\w+`, `[0-9]{5,}`, `\Q...\E`).
std::optional<std::vector<std::string>> RequiredLiterals(std::string_view regex);

// The UTF-8 sequences that RE2 folds onto an ASCII letter in case-insensitive matching (KELVIN
// SIGN onto k, LATIN SMALL LETTER LONG S onto s): a line holding one may match a literal that an
// ASCII fold does not see, so the scanner treats such a line as a candidate.
std::span<const std::string_view> NonAsciiFolds();

class LiteralFinder {
 public:
  // Literals longer than kMaxLiteral are cut to their first kMaxLiteral bytes (a prefix of a
  // required literal is required too). `literals` must be non-empty strings.
  static constexpr std::size_t kMaxLiteral = 16;
  // nullopt when the automaton would exceed kMaxStates (then the caller scans without it).
  static constexpr std::size_t kMaxStates = 1 << 16;
  static std::optional<LiteralFinder> Build(const std::vector<std::string>& literals);

  // The first byte in [begin, end) at which an occurrence of a literal ends (ASCII letters match
  // in either case), or end.
  const char* Find(const char* begin, const char* end) const;
  // The length of the longest literal after cutting (>= 1).
  std::size_t max_length() const { return max_length_; }

 private:
  LiteralFinder() = default;
  // Bytes fall into classes (0: in no literal; A-Z share the class of a-z). A state is the offset
  // of its row in next_ (row = state number * classes), so one step is one load.
  std::array<std::uint8_t, 256> class_of_{};
  std::vector<std::uint32_t> next_;
  std::uint32_t first_final_ = 0;  // rows at or past this offset end a literal
  std::size_t max_length_ = 1;
};

}  // namespace tg::policy
