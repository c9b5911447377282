// CLIP byte-level BPE tokenizer (the tokenizer of every Stable Diffusion text encoder).
//
// Loaded from a Hugging Face tokenizer folder: vocab.json (token → id), merges.txt (optional
// "#version" header line, then one "left right" merge per line, rank = order) and, when present,
// tokenizer_config.json (or, when that is absent, special_tokens_map.json) for bos/eos/unk/pad
// tokens and model_max_length.
// The pad token may be written as a string or as an AddedToken object ({"content": ...}); it is
// resolved through the vocabulary ("<|endoftext|>" → 49407 for SD 1.x, "!" → 0 for SD 2.x and
// SDXL's second tokenizer). Missing tokenizer_config → pad = eos, max length 77.
//
// Text processing follows the original CLIP tokenizer: invalid UTF-8 sequences become U+FFFD, NFC,
// whitespace runs (Python's str.isspace set) collapse to one space and the ends are stripped,
// lower-casing (Unicode simple case mapping), then the CLIP pre-tokenisation pattern
//   <|startoftext|> | <|endoftext|> | 's|'t|'re|'ve|'m|'ll|'d | \p{L}+ | \p{N} | [^\s\p{L}\p{N}]+
// (leftmost alternative wins at each position, like Python's `regex`), byte→unicode mapping, BPE
// with "</w>" on the last symbol of each word. BPE is O(n log n) per word (priority queue), and
// encoding stops once enough tokens for max_len are produced, so a 10 MB prompt is truncated in
// linear time without large allocations beyond one copy of the normalised text.
// Not implemented: ftfy.fix_text and html.unescape of the original (text is used as given).
// Limitation: a single word longer than 64 KiB is cut there and ends tokenisation (its first
// few thousand tokens — far beyond any text encoder's 77 — are unaffected).
//
// Thread safety: Encode*/Tokenize are const and safe to call concurrently; the word → ids cache is
// guarded by a mutex and bounded. Copies share the immutable tables and the cache.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tg::sd {

class ClipTokenizer {
 public:
  static constexpr int kDefaultMaxLength = 77;
  static constexpr std::int64_t kClipBosId = 49406;  // <|startoftext|> in the CLIP vocabulary
  static constexpr std::int64_t kClipEosId = 49407;  // <|endoftext|>

  // Loads DIR/vocab.json, DIR/merges.txt and optionally DIR/tokenizer_config.json and
  // DIR/special_tokens_map.json. NOT_FOUND naming the file when a required file is missing;
  // INVALID_ARG naming file, line/field, what was found and what was required when malformed.
  [[nodiscard]] static common::Result<ClipTokenizer> Load(const std::string& dir);
  // Same from explicit paths; `config_path` may be empty.
  [[nodiscard]] static common::Result<ClipTokenizer> LoadFiles(const std::string& vocab_path,
                                                               const std::string& merges_path,
                                                               const std::string& config_path);

  // [BOS] + first (max_len-2) tokens + [EOS], then padded with pad_id() to exactly max_len ids.
  // INVALID_ARG when max_len < 2 or > 4096.
  [[nodiscard]] common::Result<std::vector<std::int64_t>> Encode(
      std::string_view text, int max_len = kDefaultMaxLength) const;
  // [BOS] + first (max_len-2) tokens + [EOS] without padding (length <= max_len).
  [[nodiscard]] common::Result<std::vector<std::int64_t>> EncodeUnpadded(
      std::string_view text, int max_len = kDefaultMaxLength) const;
  // BPE ids of `text` without BOS/EOS, at most `limit` ids (stops early; linear in the prefix
  // used).
  std::vector<std::int64_t> Tokenize(std::string_view text, std::size_t limit = SIZE_MAX) const;
  // How many BPE tokens of `text` Encode(text, max_len) drops (those beyond the first
  // max_len-2), counting at most `cap`; 0 when it fits. Re-reads the text only up to the cap, so
  // a caller can warn about truncation of any prompt in bounded time and memory.
  std::size_t DroppedTokens(std::string_view text, int max_len = kDefaultMaxLength,
                            std::size_t cap = kDroppedTokensCap) const;
  static constexpr std::size_t kDroppedTokensCap = 1 << 20;

  // The normalised text (UTF-8 repair, NFC, whitespace collapse, lower-case) — for diagnostics.
  static std::string Normalize(std::string_view text);
  // The pre-tokenised words of normalised `text` (before byte mapping and BPE) — for diagnostics.
  static std::vector<std::string> PreTokenize(std::string_view normalized_text);
  // Special-token ids and table sizes of the loaded files (immutable; safe from any thread).
  std::int64_t bos_id() const;
  std::int64_t eos_id() const;
  std::int64_t pad_id() const;
  std::int64_t unk_id() const;
  int model_max_length() const;  // from tokenizer_config (clamped to [2, 4096]); 77 if absent
  std::size_t vocab_size() const;
  std::size_t num_merges() const;
  // The token string of `id` (byte-mapped form, e.g. "cat</w>"); "" when out of range.
  std::string_view IdToToken(std::int64_t id) const;

 private:
  struct Impl;
  explicit ClipTokenizer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace tg::sd
