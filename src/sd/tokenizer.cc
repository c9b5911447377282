// CLIP BPE tokenizer (see tokenizer.h).
//
// Design notes (the why):
//  * BPE runs on vocabulary ids, not strings: every merge "a b" is stored as (id(a), id(b)) →
//    (rank, id(ab)), so a word is a list of ints and no string is built per merge.
//  * Merging uses a min-heap keyed by (rank, position) over a linked list of symbols. Because a
//    merge result always ranks after its parts, popping the lowest-ranked leftmost pair is the
//    same as the original "merge every occurrence of the best pair, left to right" loop, but
//    O(n log n) instead of O(n²) — a hostile 10 MB single word cannot stall the process.
//  * Text is normalised in chunks that end just before an ASCII byte (a code point that never
//    composes with what precedes it), so NFC per chunk equals NFC of the whole, and encoding stops
//    as soon as the requested number of tokens exists: cost is linear in the prefix used.
#include "sd/tokenizer.h"

#include <sys/stat.h>
#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "common/config.h"
#include "common/file_util.h"
#include "common/json_writer.h"

namespace tg::sd {
namespace {

using common::Json;
using common::Result;
using common::Status;

constexpr std::string_view kStartOfText = "<|startoftext|>";
constexpr std::string_view kEndOfText = "<|endoftext|>";
constexpr std::size_t kChunkBytes = 64 * 1024;
// Words longer than this are cut: the first few thousand tokens of such a word are unaffected,
// far more than any text encoder reads (documented limitation).
constexpr std::size_t kMaxWordBytes = 64 * 1024;
constexpr std::size_t kMaxCachedWordBytes = 64;
constexpr std::size_t kMaxCacheEntries = 1 << 17;
constexpr int kMaxLengthLimit = 4096;
constexpr std::uint64_t kMaxVocabBytes = 64ull << 20;

// GPT-2/CLIP byte → printable code point mapping.
std::array<char32_t, 256> ByteToUnicode() {
  std::array<char32_t, 256> table{};
  std::array<bool, 256> direct{};
  for (int b = '!'; b <= '~'; ++b) direct[b] = true;
  for (int b = 0xA1; b <= 0xAC; ++b) direct[b] = true;
  for (int b = 0xAE; b <= 0xFF; ++b) direct[b] = true;
  int n = 0;
  for (int b = 0; b < 256; ++b) table[b] = direct[b] ? char32_t(b) : char32_t(256 + n++);
  return table;
}

void AppendUtf8(std::string* out, char32_t cp) {
  std::uint8_t buf[4];
  utf8proc_ssize_t len = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buf);
  out->append(reinterpret_cast<const char*>(buf), static_cast<std::size_t>(len));
}

enum class CharClass : std::uint8_t { kSpace, kLetter, kNumber, kOther };

// Python's str.isspace(): bidirectional class WS, B or S, or general category Zs.
bool IsSpaceCp(utf8proc_int32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F);
  const utf8proc_property_t* p = utf8proc_get_property(cp);
  return p->category == UTF8PROC_CATEGORY_ZS || p->bidi_class == UTF8PROC_BIDI_CLASS_WS ||
         p->bidi_class == UTF8PROC_BIDI_CLASS_B || p->bidi_class == UTF8PROC_BIDI_CLASS_S;
}

CharClass Classify(utf8proc_int32_t cp) {
  if (cp < 0x80) {
    if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return CharClass::kLetter;
    if (cp >= '0' && cp <= '9') return CharClass::kNumber;
    if (IsSpaceCp(cp)) return CharClass::kSpace;
    return CharClass::kOther;
  }
  if (IsSpaceCp(cp)) return CharClass::kSpace;
  switch (utf8proc_category(cp)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return CharClass::kLetter;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return CharClass::kNumber;
    default:
      return CharClass::kOther;
  }
}

bool IsCased(utf8proc_int32_t cp) {
  auto c = utf8proc_category(cp);
  return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT;
}

// Replaces every invalid UTF-8 sequence by U+FFFD (one per offending byte).
std::string RepairUtf8(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(in.data());
  std::size_t i = 0;
  while (i < in.size()) {
    if (p[i] < 0x80) {
      out.push_back(static_cast<char>(p[i]));
      ++i;
      continue;
    }
    utf8proc_int32_t cp;
    utf8proc_ssize_t len =
        utf8proc_iterate(p + i, static_cast<utf8proc_ssize_t>(in.size() - i), &cp);
    if (len <= 0 || cp < 0) {
      AppendUtf8(&out, 0xFFFD);
      ++i;
    } else {
      out.append(in.substr(i, static_cast<std::size_t>(len)));
      i += static_cast<std::size_t>(len);
    }
  }
  return out;
}

// Streams the normalised text: UTF-8 repair, NFC, whitespace collapse/strip, lower-case.
class Normalizer {
 public:
  explicit Normalizer(std::string_view in) : in_(in) {}
  bool done() const { return pos_ >= in_.size(); }

  // Appends the normalised form of the next chunk to *out.
  void NextChunk(std::string* out) {
    std::size_t end = std::min(in_.size(), pos_ + kChunkBytes);
    // Extend to just before the next ASCII byte: ASCII code points never compose backwards.
    while (end < in_.size() && static_cast<unsigned char>(in_[end]) >= 0x80) ++end;
    std::string_view chunk = in_.substr(pos_, end - pos_);
    pos_ = end;
    bool ascii = std::all_of(chunk.begin(), chunk.end(),
                             [](char c) { return static_cast<unsigned char>(c) < 0x80; });
    if (ascii) {
      for (char c : chunk) Emit(out, static_cast<unsigned char>(c));
      return;
    }
    std::string repaired = RepairUtf8(chunk);
    utf8proc_uint8_t* nfc = nullptr;
    utf8proc_ssize_t len =
        utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(repaired.data()),
                     static_cast<utf8proc_ssize_t>(repaired.size()), &nfc,
                     static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    std::string_view text = repaired;
    if (len >= 0 && nfc != nullptr) text = std::string_view(reinterpret_cast<char*>(nfc), len);
    const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
    std::size_t i = 0;
    while (i < text.size()) {
      utf8proc_int32_t cp;
      utf8proc_ssize_t n =
          utf8proc_iterate(p + i, static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
      if (n <= 0) {  // cannot happen after repair; be safe
        cp = 0xFFFD;
        n = 1;
      }
      // Final sigma (Python's str.lower special casing): Σ after a cased letter and not before one.
      if (cp == 0x03A3) {
        std::size_t j = i + static_cast<std::size_t>(n);
        utf8proc_int32_t next = -1;
        if (j < text.size()) {
          utf8proc_iterate(p + j, static_cast<utf8proc_ssize_t>(text.size() - j), &next);
        }
        bool final_sigma = prev_cased_ && !(next >= 0 && IsCased(next));
        Emit(out, final_sigma ? 0x03C2 : 0x03C3, /*cased=*/true);
      } else if (cp == 0x0130) {  // İ lower-cases to "i̇" (full case mapping)
        Emit(out, 'i', true);
        Emit(out, 0x0307, false);
      } else {
        Emit(out, cp);
      }
      i += static_cast<std::size_t>(n);
    }
    std::free(nfc);
  }

 private:
  void Emit(std::string* out, utf8proc_int32_t cp, std::optional<bool> cased = std::nullopt) {
    if (IsSpaceCp(cp)) {
      pending_space_ = any_output_;
      prev_cased_ = false;
      return;
    }
    if (pending_space_) {
      out->push_back(' ');
      pending_space_ = false;
    }
    any_output_ = true;
    if (cp < 0x80) {
      prev_cased_ = (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
      out->push_back(static_cast<char>(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp));
      return;
    }
    // Case-ignorable marks keep the previous cased state (good enough for final sigma).
    auto cat = utf8proc_category(cp);
    if (cat != UTF8PROC_CATEGORY_MN && cat != UTF8PROC_CATEGORY_ME) {
      prev_cased_ = cased.has_value() ? *cased : IsCased(cp);
    }
    AppendUtf8(out, static_cast<char32_t>(utf8proc_tolower(cp)));
  }

  std::string_view in_;
  std::size_t pos_ = 0;
  bool pending_space_ = false;
  bool any_output_ = false;
  bool prev_cased_ = false;
};

// Pre-tokeniser over normalised UTF-8 (the CLIP pattern, leftmost alternative first).
enum class WordStatus { kWord, kNeedMore, kEnd };

struct WordSpan {
  std::size_t begin = 0;
  std::size_t end = 0;
  bool special = false;
};

utf8proc_int32_t DecodeAt(std::string_view s, std::size_t i, std::size_t* len) {
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  if (p[i] < 0x80) {
    *len = 1;
    return p[i];
  }
  utf8proc_int32_t cp;
  utf8proc_ssize_t n = utf8proc_iterate(p + i, static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
  if (n <= 0) {
    *len = 1;
    return 0xFFFD;
  }
  *len = static_cast<std::size_t>(n);
  return cp;
}

// Finds the next word at or after *pos. `final` = no more text will be appended to `s`.
WordStatus NextWord(std::string_view s, std::size_t* pos, bool final, WordSpan* w) {
  std::size_t i = *pos;
  // Skip spaces (the normaliser leaves single ' ' separators).
  while (i < s.size() && s[i] == ' ') ++i;
  *pos = i;
  if (i >= s.size()) return final ? WordStatus::kEnd : WordStatus::kNeedMore;
  // A special token or contraction could straddle the end of what is normalised so far.
  if (!final && s.size() - i < kStartOfText.size() + 1) return WordStatus::kNeedMore;
  std::string_view rest = s.substr(i);
  for (std::string_view sp : {kStartOfText, kEndOfText}) {
    if (rest.starts_with(sp)) {
      *w = {i, i + sp.size(), true};
      *pos = w->end;
      return WordStatus::kWord;
    }
  }
  if (rest[0] == '\'') {
    for (std::string_view c : {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"}) {
      if (rest.starts_with(c)) {
        *w = {i, i + c.size(), false};
        *pos = w->end;
        return WordStatus::kWord;
      }
    }
  }
  std::size_t len;
  CharClass first = Classify(DecodeAt(s, i, &len));
  std::size_t j = i + len;
  if (first == CharClass::kNumber) {
    *w = {i, j, false};
    *pos = j;
    return WordStatus::kWord;
  }
  // Letter run, or run of "other" (neither space, letter nor number).
  while (j < s.size()) {
    CharClass c = Classify(DecodeAt(s, j, &len));
    if (c != first) break;
    j += len;
  }
  if (j >= s.size() && !final) return WordStatus::kNeedMore;
  *w = {i, j, false};
  *pos = j;
  return WordStatus::kWord;
}

// SAX handler for vocab.json: accepts exactly one flat object of string → integer id.
class VocabSax final : public nlohmann::json_sax<Json> {
 public:
  VocabSax(std::string source, std::unordered_map<std::string, std::int32_t>* out)
      : source_(std::move(source)), out_(out) {}
  std::string error;
  std::size_t error_offset = 0;
  std::string duplicate_key;  // set when the error is a repeated token

  bool null() override { return Value("null"); }
  bool boolean(bool) override { return Value("a boolean"); }
  bool number_integer(number_integer_t v) override { return Id(v); }
  bool number_unsigned(number_unsigned_t v) override {
    return Id(v > (1u << 24) ? (1 << 24) : static_cast<std::int64_t>(v));
  }
  bool number_float(number_float_t, const string_t& s) override { return Value(s); }
  bool string(string_t& s) override { return Value("\"" + s + "\""); }
  bool binary(binary_t&) override { return Value("binary data"); }
  bool start_object(std::size_t) override {
    if (++depth_ == 1 && !seen_root_) {
      seen_root_ = true;
      return true;
    }
    return Fail("found a nested object, required an object mapping token strings to ids");
  }
  bool end_object() override {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    return Fail(depth_ == 0 ? "found an array, required an object mapping token strings to ids"
                            : "token '" + key_ + "': found an array, required an integer id");
  }
  bool end_array() override { return true; }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool parse_error(std::size_t pos, const std::string&,
                   const nlohmann::detail::exception& e) override {
    error = "invalid JSON: " + std::string(e.what());
    error_offset = pos > 0 ? pos - 1 : 0;
    return false;
  }

 private:
  bool Fail(const std::string& msg) {
    if (error.empty()) error = msg;
    return false;
  }
  bool Value(const std::string& found) {
    if (depth_ == 0) return Fail("found " + found + ", required an object mapping tokens to ids");
    return Fail("token '" + key_ + "': found " + found +
                ", required an integer id in [0, 16777216)");
  }
  bool Id(std::int64_t v) {
    if (depth_ != 1) return Value(std::to_string(v));
    if (v < 0 || v >= (1 << 24)) return Value(std::to_string(v));
    // A token listed twice would silently take its last id: an error, as for every JSON input.
    if (!out_->emplace(key_, static_cast<std::int32_t>(v)).second) {
      duplicate_key = key_;
      return Fail("token '" + key_ + "': duplicate key (each token must appear once)");
    }
    return true;
  }
  std::string source_;
  std::unordered_map<std::string, std::int32_t>* out_;
  std::string key_;
  int depth_ = 0;
  bool seen_root_ = false;
};

struct PairInfo {
  std::int32_t rank;
  std::int32_t merged;
};

std::uint64_t PairKey(std::int32_t a, std::int32_t b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
         static_cast<std::uint32_t>(b);
}

// Resolves a special-token field that may be a string, {"content": "..."} or null.
Result<std::optional<std::string>> TokenField(const Json& j, const std::string& key,
                                              const std::string& source) {
  if (!j.contains(key) || j[key].is_null()) return std::optional<std::string>();
  const Json& v = j[key];
  if (v.is_string()) return std::optional<std::string>(v.get<std::string>());
  if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    return std::optional<std::string>(v["content"].get<std::string>());
  }
  return Status::InvalidArg(source + ": field '" + key + "': found " + std::string(v.type_name()) +
                            ", required a string or an object with a string \"content\"");
}

}  // namespace

struct ClipTokenizer::Impl {
  std::unordered_map<std::string, std::int32_t> vocab;
  std::vector<std::string> id_to_token;
  std::unordered_map<std::uint64_t, PairInfo> merges;
  std::size_t num_merges = 0;
  std::array<std::int32_t, 256> byte_id{};
  std::array<std::int32_t, 256> byte_end_id{};
  std::int64_t bos = kClipBosId, eos = kClipEosId, pad = kClipEosId, unk = kClipEosId;
  std::int32_t sot_id = -1, eot_id = -1;
  int max_length = kDefaultMaxLength;

  mutable std::mutex cache_mu;
  mutable std::unordered_map<std::string, std::vector<std::int32_t>> cache;

  void Bpe(std::string_view word, std::vector<std::int32_t>* out) const;
  void EncodeWord(std::string_view word, std::vector<std::int32_t>* out) const;

  // Loading steps of ClipTokenizer::LoadFiles, in order; each names the file in its error.
  struct SpecialTokenNames {
    std::string bos{kStartOfText}, eos{kEndOfText}, unk{kEndOfText};
    std::optional<std::string> pad;
  };
  Status ReadVocab(const std::string& vocab_path);
  Status ReadMerges(const std::string& merges_path);
  Status ReadTokenizerConfig(const std::string& config_path, SpecialTokenNames* names);
  Status ResolveSpecialTokens(const SpecialTokenNames& names, const std::string& vocab_path,
                              const std::string& config_path);
};

void ClipTokenizer::Impl::Bpe(std::string_view word, std::vector<std::int32_t>* out) const {
  const std::size_t n = word.size();
  if (n == 0) return;
  struct Cand {
    std::int32_t rank, pos, left, right, merged;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  // Per-thread scratch: a cold word costs no allocation once the buffers have grown.
  thread_local std::vector<std::int32_t> ids, next, prev;
  thread_local std::vector<Cand> heap;
  ids.resize(n);
  next.resize(n);
  prev.resize(n);
  heap.clear();
  for (std::size_t i = 0; i < n; ++i) {
    auto b = static_cast<unsigned char>(word[i]);
    ids[i] = (i + 1 == n) ? byte_end_id[b] : byte_id[b];
    next[i] = (i + 1 == n) ? -1 : static_cast<std::int32_t>(i + 1);
    prev[i] = static_cast<std::int32_t>(i) - 1;
  }
  const auto greater = std::greater<Cand>();
  auto push = [&](std::int32_t p) {
    if (p < 0 || next[p] < 0) return;
    auto it = merges.find(PairKey(ids[p], ids[next[p]]));
    if (it == merges.end()) return;
    heap.push_back({it->second.rank, p, ids[p], ids[next[p]], it->second.merged});
    std::push_heap(heap.begin(), heap.end(), greater);
  };
  for (std::size_t i = 0; i + 1 < n; ++i) push(static_cast<std::int32_t>(i));
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), greater);
    Cand c = heap.back();
    heap.pop_back();
    std::int32_t p = c.pos;
    std::int32_t q = next[p];
    if (ids[p] != c.left || q < 0 || ids[q] != c.right) continue;  // stale entry
    ids[p] = c.merged;
    ids[q] = -1;
    next[p] = next[q];
    if (next[q] >= 0) prev[next[q]] = p;
    push(prev[p]);
    push(p);
  }
  for (std::int32_t p = 0; p >= 0; p = next[p]) out->push_back(ids[p]);
}

void ClipTokenizer::Impl::EncodeWord(std::string_view word, std::vector<std::int32_t>* out) const {
  if (word.size() > kMaxCachedWordBytes) {
    Bpe(word.substr(0, std::min(word.size(), kMaxWordBytes)), out);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(cache_mu);
    auto it = cache.find(std::string(word));
    if (it != cache.end()) {
      out->insert(out->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<std::int32_t> ids;
  Bpe(word, &ids);
  out->insert(out->end(), ids.begin(), ids.end());
  std::lock_guard<std::mutex> lock(cache_mu);
  if (cache.size() >= kMaxCacheEntries) cache.clear();  // bounded memory; refills quickly
  cache.emplace(std::string(word), std::move(ids));
}

Result<ClipTokenizer> ClipTokenizer::Load(const std::string& dir) {
  // Probed with stat, never by opening: an open() of a FIFO blocks until a writer comes. A name
  // that is there but not a regular file is handed on, so the one reader refuses it by name.
  auto exists = [](const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
  };
  std::string config;
  for (const char* name : {"/tokenizer_config.json", "/special_tokens_map.json"}) {
    if (exists(dir + name)) {
      config = dir + name;
      break;
    }
  }
  auto r = LoadFiles(dir + "/vocab.json", dir + "/merges.txt", config);
  if (!r.ok()) return r.status().WithPrefix("tokenizer " + dir);
  return r;
}

Status ClipTokenizer::Impl::ReadVocab(const std::string& vocab_path) {
  // vocab.json: streamed (SAX) straight into the map — building a DOM of 49 408 entries first
  // costs several times more, which matters for every process that loads a pipeline.
  TG_ASSIGN_OR_RETURN(std::string vocab_text, common::ReadFileLimited(vocab_path, kMaxVocabBytes));
  vocab.reserve(65536);
  VocabSax sax(vocab_path, &vocab);
  Json::sax_parse(vocab_text, &sax, Json::input_format_t::json, /*strict=*/true);
  if (!sax.error.empty()) {
    if (!sax.duplicate_key.empty()) {
      // The SAX callbacks carry no position: the repeat is the key's second spelling in the text.
      const std::string quoted =
          common::WriteJson(Json(sax.duplicate_key), -1, common::JsonNotice::kNone);
      const std::size_t first = vocab_text.find(quoted);
      const std::size_t second =
          first == std::string::npos ? first : vocab_text.find(quoted, first + 1);
      if (second != std::string::npos) sax.error_offset = second;
    }
    common::TextPosition pos = common::PositionOfOffset(vocab_text, sax.error_offset);
    return Status::InvalidArg(vocab_path + ":" + std::to_string(pos.line) + ":" +
                              std::to_string(pos.column) + ": " + sax.error);
  }
  std::int32_t max_id = -1;
  for (const auto& [tok, id] : vocab) max_id = std::max(max_id, id);
  id_to_token.resize(static_cast<std::size_t>(max_id + 1));
  for (const auto& [tok, id] : vocab) id_to_token[id] = tok;
  auto table = ByteToUnicode();
  for (int b = 0; b < 256; ++b) {
    std::string sym;
    AppendUtf8(&sym, table[b]);
    auto a = vocab.find(sym);
    auto e = vocab.find(sym + "</w>");
    if (a == vocab.end() || e == vocab.end()) {
      return Status::InvalidArg(vocab_path + ": byte symbol '" + sym + "' (byte " +
                                std::to_string(b) + ") or '" + sym +
                                "</w>' is missing; a CLIP vocabulary has all 512 byte symbols");
    }
    byte_id[b] = a->second;
    byte_end_id[b] = e->second;
  }
  return Status::Ok();
}

Status ClipTokenizer::Impl::ReadMerges(const std::string& merges_path) {
  TG_ASSIGN_OR_RETURN(std::string text, common::ReadFileLimited(merges_path, kMaxVocabBytes));
  std::size_t pos = 0;
  int line_no = 0;
  std::int32_t rank = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    std::string_view line(text.data() + pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_no == 1 && line.starts_with("#version"))) continue;
    std::size_t sp = line.find(' ');
    if (sp == std::string_view::npos || sp == 0 || sp + 1 >= line.size() ||
        line.find(' ', sp + 1) != std::string_view::npos) {
      return Status::InvalidArg(merges_path + ":" + std::to_string(line_no) + ": found '" +
                                std::string(line.substr(0, 80)) +
                                "', required two symbols separated by one space");
    }
    std::string left(line.substr(0, sp)), right(line.substr(sp + 1));
    auto l = vocab.find(left), r = vocab.find(right), m = vocab.find(left + right);
    ++num_merges;
    std::int32_t this_rank = rank++;
    // A merge whose parts or result are not in the vocabulary could never produce an id.
    if (l == vocab.end() || r == vocab.end() || m == vocab.end()) continue;
    merges.try_emplace(PairKey(l->second, r->second), PairInfo{this_rank, m->second});
  }
  if (num_merges == 0) {
    return Status::InvalidArg(merges_path +
                              ": no merge rules (found an empty file, required the BPE merges)");
  }
  return Status::Ok();
}

// Special tokens and lengths from tokenizer_config.json or special_tokens_map.json.
Status ClipTokenizer::Impl::ReadTokenizerConfig(const std::string& config_path,
                                                SpecialTokenNames* names) {
  TG_ASSIGN_OR_RETURN(Json cj, common::LoadJsonFile(config_path));
  if (!cj.is_object()) {
    return Status::InvalidArg(config_path + ": found " + std::string(cj.type_name()) +
                              ", required an object");
  }
  TG_ASSIGN_OR_RETURN(auto b, TokenField(cj, "bos_token", config_path));
  TG_ASSIGN_OR_RETURN(auto e, TokenField(cj, "eos_token", config_path));
  TG_ASSIGN_OR_RETURN(auto u, TokenField(cj, "unk_token", config_path));
  TG_ASSIGN_OR_RETURN(names->pad, TokenField(cj, "pad_token", config_path));
  if (b) names->bos = *b;
  if (e) names->eos = *e;
  if (u) names->unk = *u;
  if (cj.contains("model_max_length") && !cj["model_max_length"].is_null()) {
    const Json& v = cj["model_max_length"];
    if (!v.is_number()) {
      return Status::InvalidArg(config_path + ": field 'model_max_length': found " +
                                common::WriteJson(v, -1, common::JsonNotice::kNone) +
                                ", required a number");
    }
    double ml = v.get<double>();
    // Hugging Face writes a huge sentinel (1e30) for "no limit": keep CLIP's 77 then. Anything
    // else outside 2..kMaxLengthLimit, or not a whole number, is an error, never ignored.
    if (ml < 1e29) {
      if (!(ml >= 2 && ml <= kMaxLengthLimit) || ml != static_cast<double>(static_cast<int>(ml))) {
        return Status::InvalidArg(config_path + ": field 'model_max_length': found " +
                                  common::WriteJson(v, -1, common::JsonNotice::kNone) +
                                  ", required a whole number in 2.." +
                                  std::to_string(kMaxLengthLimit) + " (or 1e30 for no limit)");
      }
      max_length = static_cast<int>(ml);
    }
  }
  return Status::Ok();
}

Status ClipTokenizer::Impl::ResolveSpecialTokens(const SpecialTokenNames& names,
                                                 const std::string& vocab_path,
                                                 const std::string& config_path) {
  auto resolve = [&](const std::string& tok, const char* field, std::int64_t* out) -> Status {
    auto it = vocab.find(tok);
    if (it == vocab.end()) {
      return Status::InvalidArg((config_path.empty() ? vocab_path : config_path) + ": " + field +
                                " '" + tok + "' is not in the vocabulary " + vocab_path);
    }
    *out = it->second;
    return Status::Ok();
  };
  TG_RETURN_IF_ERROR(resolve(names.bos, "bos_token", &bos));
  TG_RETURN_IF_ERROR(resolve(names.eos, "eos_token", &eos));
  TG_RETURN_IF_ERROR(resolve(names.unk, "unk_token", &unk));
  TG_RETURN_IF_ERROR(resolve(names.pad.value_or(names.eos), "pad_token", &pad));
  auto sot = vocab.find(std::string(kStartOfText));
  auto eot = vocab.find(std::string(kEndOfText));
  sot_id = sot == vocab.end() ? static_cast<std::int32_t>(unk) : sot->second;
  eot_id = eot == vocab.end() ? static_cast<std::int32_t>(unk) : eot->second;
  return Status::Ok();
}

Result<ClipTokenizer> ClipTokenizer::LoadFiles(const std::string& vocab_path,
                                               const std::string& merges_path,
                                               const std::string& config_path) {
  auto impl = std::make_shared<Impl>();
  TG_RETURN_IF_ERROR(impl->ReadVocab(vocab_path));
  TG_RETURN_IF_ERROR(impl->ReadMerges(merges_path));
  Impl::SpecialTokenNames names;
  if (!config_path.empty()) TG_RETURN_IF_ERROR(impl->ReadTokenizerConfig(config_path, &names));
  TG_RETURN_IF_ERROR(impl->ResolveSpecialTokens(names, vocab_path, config_path));
  return ClipTokenizer(std::move(impl));
}

std::vector<std::int64_t> ClipTokenizer::Tokenize(std::string_view text, std::size_t limit) const {
  std::vector<std::int64_t> result;
  if (limit == 0) return result;
  Normalizer norm(text);
  std::string buf;
  std::size_t pos = 0;
  std::vector<std::int32_t> ids;
  bool final = false;
  while (result.size() < limit) {
    WordSpan w;
    WordStatus st = NextWord(buf, &pos, final, &w);
    if (st == WordStatus::kEnd) break;
    if (st == WordStatus::kNeedMore) {
      if (norm.done()) {
        final = true;
        continue;
      }
      // Drop the consumed prefix so memory stays bounded by the chunk size and one word.
      if (pos > kChunkBytes) {
        buf.erase(0, pos);
        pos = 0;
      }
      if (buf.size() - pos > kMaxWordBytes + kChunkBytes) {
        final = true;  // a single enormous word: cut it (see kMaxWordBytes)
        continue;
      }
      norm.NextChunk(&buf);
      continue;
    }
    std::string_view word(buf.data() + w.begin, w.end - w.begin);
    ids.clear();
    if (w.special) {
      ids.push_back(word == kStartOfText ? impl_->sot_id : impl_->eot_id);
    } else {
      impl_->EncodeWord(word, &ids);
    }
    for (std::int32_t id : ids) {
      if (result.size() >= limit) break;
      result.push_back(id);
    }
  }
  return result;
}

common::Result<std::vector<std::int64_t>> ClipTokenizer::EncodeUnpadded(std::string_view text,
                                                                        int max_len) const {
  if (max_len < 2 || max_len > kMaxLengthLimit) {
    return Status::InvalidArg("tokenizer max length " + std::to_string(max_len) +
                              " is out of range (required 2 to " + std::to_string(kMaxLengthLimit) +
                              ")");
  }
  std::vector<std::int64_t> ids;
  ids.reserve(static_cast<std::size_t>(max_len));
  ids.push_back(impl_->bos);
  std::vector<std::int64_t> body = Tokenize(text, static_cast<std::size_t>(max_len - 2));
  ids.insert(ids.end(), body.begin(), body.end());
  ids.push_back(impl_->eos);
  return ids;
}

common::Result<std::vector<std::int64_t>> ClipTokenizer::Encode(std::string_view text,
                                                                int max_len) const {
  TG_ASSIGN_OR_RETURN(std::vector<std::int64_t> ids, EncodeUnpadded(text, max_len));
  ids.resize(static_cast<std::size_t>(max_len), impl_->pad);
  return ids;
}

std::size_t ClipTokenizer::DroppedTokens(std::string_view text, int max_len,
                                         std::size_t cap) const {
  const std::size_t kept = max_len > 2 ? static_cast<std::size_t>(max_len - 2) : 0;
  const std::size_t n = Tokenize(text, kept + cap).size();
  return n > kept ? n - kept : 0;
}

std::string ClipTokenizer::Normalize(std::string_view text) {
  Normalizer norm(text);
  std::string out;
  while (!norm.done()) norm.NextChunk(&out);
  return out;
}

std::vector<std::string> ClipTokenizer::PreTokenize(std::string_view normalized_text) {
  std::vector<std::string> words;
  std::size_t pos = 0;
  WordSpan w;
  while (NextWord(normalized_text, &pos, /*final=*/true, &w) == WordStatus::kWord) {
    words.emplace_back(normalized_text.substr(w.begin, w.end - w.begin));
  }
  return words;
}

std::int64_t ClipTokenizer::bos_id() const { return impl_->bos; }
std::int64_t ClipTokenizer::eos_id() const { return impl_->eos; }
std::int64_t ClipTokenizer::pad_id() const { return impl_->pad; }
std::int64_t ClipTokenizer::unk_id() const { return impl_->unk; }
int ClipTokenizer::model_max_length() const { return impl_->max_length; }
std::size_t ClipTokenizer::vocab_size() const { return impl_->vocab.size(); }
std::size_t ClipTokenizer::num_merges() const { return impl_->num_merges; }

std::string_view ClipTokenizer::IdToToken(std::int64_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= impl_->id_to_token.size()) return {};
  return impl_->id_to_token[static_cast<std::size_t>(id)];
}

}  // namespace tg::sd
