#include "policy/logscan_prefilter.h"

#include <gtest/gtest.h>
#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <random>
#include <set>

#include "policy/logscan.h"
#include "tests/support/test_util.h"

namespace tg::policy {
namespace {

std::vector<std::string> Lits(std::string_view re) {
  auto l = RequiredLiterals(re);
  return l ? *l : std::vector<std::string>{"<none>"};
}

TEST(LogScanPrefilter, RequiredLiteralsAreReadSoundly) {
  using V = std::vector<std::string>;
  EXPECT_EQ(Lits("Failed to create \\w*ExecutionProvider"), V{"executionprovider"});
  EXPECT_EQ(Lits("colou?r warning"), V{"warning"});          // "colo" < "warning"
  EXPECT_EQ(Lits("abcdefg?h"), V{"abcdef"});                 // an optional char leaves the run
  EXPECT_EQ(Lits("x{0,3}yz"), V{"yz"});                      // x may be absent
  EXPECT_EQ(Lits("(alpha|beta)+ z"), (V{"alpha", "beta"}));  // a required group
  EXPECT_EQ(Lits("(alpha|beta)? zz"), V{"zz"});              // an optional one proves nothing
  EXPECT_EQ(Lits("x\\x41yz"), V{"yz"});                      // \x41 is 'A', not the literal "41"
  EXPECT_EQ(Lits("\\x{263a}abc"), V{"abc"});                 // nor are braces
  EXPECT_EQ(Lits("\\pLgreek"), V{"greek"});                  // \pL is a class, "greek" follows it
  EXPECT_EQ(Lits("[[:alpha:]]]qq"), V{"qq"});  // a POSIX class inside a class; ']' stray
  EXPECT_EQ(Lits("[]a-z]+done"), V{"done"});
  EXPECT_EQ(Lits("(?i:WaRp)\\s+drive"), V{"drive"});
  EXPECT_EQ(Lits("(?P<n>abc)d"), V{"abc"});
  EXPECT_EQ(Lits("a\\.so\\b"), V{"a.so"});
  // Nothing certain: every line must reach the regex engine.
  for (const char* re : {"\\w+", "[0-9]{5,}", "\\Qa|b\\E", "(a|)c?", "abc|\\d+", ".*"}) {
    EXPECT_EQ(Lits(re), V{"<none>"}) << re;
  }
  // Every built-in pattern has literals, so the prefilter is on for the built-in table.
  for (const LogPattern& p : LogPatterns()) EXPECT_TRUE(RequiredLiterals(p.regex)) << p.id;
}

TEST(LogScanPrefilter, FinderFindsEveryLiteralInAnyCase) {
  auto f = LiteralFinder::Build({"memcpy", "cpu", "Deserializ", std::string(40, 'q')});
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->max_length(), LiteralFinder::kMaxLiteral);
  auto at = [&](const std::string& s) {
    const char* e = f->Find(s.data(), s.data() + s.size());
    return e == s.data() + s.size() ? -1 : static_cast<int>(e - s.data());
  };
  EXPECT_EQ(at("2 MEMCPY nodes"), 7);  // the byte that ends the literal
  EXPECT_EQ(at("a memcp y cp u"), -1);
  EXPECT_EQ(at("xxDESERIALIZ"), 11);
  EXPECT_EQ(at("gpuCpu"), 5);
  EXPECT_EQ(at(std::string(15, 'q')), -1);
  EXPECT_EQ(at(std::string(16, 'Q')), 15);  // cut to kMaxLiteral
  EXPECT_FALSE(LiteralFinder::Build({}).has_value());
  // Long texts are searched as two halves at once: a literal across the middle, one in the
  // second half only, and the earlier of two hits.
  std::string big(10000, '.');
  EXPECT_EQ(at(big), -1);
  EXPECT_EQ(at(std::string(big).replace(4997, 6, "memcpy")), 5002);
  EXPECT_EQ(at(std::string(big).replace(9000, 3, "CPU")), 9002);
  EXPECT_EQ(at(std::string(big).replace(9000, 3, "cpu").replace(4000, 3, "cpu")), 4002);
  EXPECT_EQ(at(std::string(big).replace(5000, 3, "cpu").replace(4998, 3, "cpu")), 5000);
}

// RE2 folds exactly these non-ASCII characters onto ASCII letters; the prefilter treats a line
// holding one as a candidate. Checked over every code point, so a new RE2 cannot add one
// unnoticed.
TEST(LogScanPrefilter, NonAsciiFoldsAreAllThatFoldOntoAscii) {
  re2::RE2::Options o;
  o.set_case_sensitive(false);
  re2::RE2 letter("[a-z]", o);
  std::set<std::string> found;
  for (char32_t cp = 0x80; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string u;
    if (cp < 0x800) {
      u = {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
    } else if (cp < 0x10000) {
      u = {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
           static_cast<char>(0x80 | (cp & 0x3F))};
    } else {
      u = {static_cast<char>(0xF0 | (cp >> 18)), static_cast<char>(0x80 | ((cp >> 12) & 0x3F)),
           static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), static_cast<char>(0x80 | (cp & 0x3F))};
    }
    if (re2::RE2::FullMatch(u, letter)) found.insert(u);
  }
  std::set<std::string> listed(NonAsciiFolds().begin(), NonAsciiFolds().end());
  EXPECT_EQ(found, listed);
}

// The naive reference: every line through the regex set, then the joins of each line boundary
// (logscan.h). The streaming scanner with its prefilter must report exactly this.
struct Found {
  std::int64_t line;
  std::string id, text;
  bool operator==(const Found&) const = default;
};

std::string Clip(const std::string& t) { return t.size() > 400 ? t.substr(0, 400) + "..." : t; }

std::vector<Found> Reference(const LogScanner& s, const std::string& text, std::int64_t* lines) {
  std::vector<Found> out;
  std::string prev_tail;
  std::vector<const LogPattern*> prev_hits;
  *lines = 0;
  auto has = [](const std::vector<const LogPattern*>& v, const LogPattern* p) {
    return std::find(v.begin(), v.end(), p) != v.end();
  };
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, std::min(nl - pos, kMaxLineBytes));
    pos = nl + 1;
    ++*lines;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::vector<const LogPattern*> hits = s.Match(line);
    for (const LogPattern* p : hits) out.push_back({*lines, p->id, Clip(line)});
    if (!prev_tail.empty() && !line.empty()) {
      std::string head = line.substr(0, 240);
      std::vector<std::string> joins = {prev_tail + " " + head};
      if (std::isalpha(static_cast<unsigned char>(prev_tail.back())) &&
          std::isalpha(static_cast<unsigned char>(head.front()))) {
        joins.push_back(prev_tail + head);
      }
      std::vector<const LogPattern*> found;
      for (const std::string& j : joins) {
        for (const LogPattern* p : s.Match(j)) {
          if (!has(hits, p) && !has(prev_hits, p) && !has(found, p)) found.push_back(p);
        }
      }
      for (const LogPattern* p : found) {
        out.push_back({*lines - 1, p->id, Clip(prev_tail + " / " + head)});
      }
    }
    prev_tail = line.size() > 240 ? line.substr(line.size() - 240) : line;
    prev_hits = std::move(hits);
  }
  return out;
}

std::vector<Found> Streamed(const LogScanner& s, std::string text, std::int64_t* lines) {
  std::vector<Found> out;
  std::FILE* f = fmemopen(text.data(), text.size(), "r");
  EXPECT_NE(f, nullptr);
  if (f == nullptr) return out;
  LogScanSummary sum = ScanLogStream(
      f,
      [&](const LogMatch& m) {
        out.push_back({m.line, m.pattern->id, m.text});
      },
      &s);
  std::fclose(f);
  *lines = sum.lines;
  return out;
}

void ExpectAgreement(const LogScanner& s, const std::string& text, const std::string& what) {
  std::int64_t ref_lines = 0, got_lines = 0;
  std::vector<Found> ref = Reference(s, text, &ref_lines);
  std::vector<Found> got = Streamed(s, text, &got_lines);
  EXPECT_EQ(got_lines, ref_lines) << what;
  EXPECT_EQ(got.size(), ref.size()) << what;
  for (std::size_t i = 0; i < std::min(got.size(), ref.size()); ++i) {
    if (got[i] == ref[i]) continue;
    ADD_FAILURE() << what << ": finding " << i << " differs: streamed line " << got[i].line << " "
                  << got[i].id << ", reference line " << ref[i].line << " " << ref[i].id << "\n"
                  << ref[i].text;
    break;
  }
  if (got.size() != ref.size() && !ref.empty()) {
    for (const Found& r : ref) {
      if (std::find(got.begin(), got.end(), r) == got.end()) {
        ADD_FAILURE() << what << ": missed at line " << r.line << " " << r.id << ": " << r.text;
        break;
      }
    }
  }
}

// Lines that matter to the patterns: every sample, the real corpus, user-pattern hits, bytes
// that fold onto ASCII, and bench-like filler.
std::vector<std::string> Vocabulary() {
  std::vector<std::string> v;
  for (const LogPattern& p : LogPatterns()) {
    v.push_back(p.positive);
    v.push_back(p.negative);
  }
  std::string corpus =
      testing::ReadFile(testing::SourceDir() + "/tests/data/logscan/real_excerpts.txt");
  for (std::size_t pos = 0, nl; pos < corpus.size(); pos = nl + 1) {
    nl = corpus.find('\n', pos);
    if (nl == std::string::npos) nl = corpus.size();
    if (corpus.compare(pos, 4, "=== ") != 0) v.push_back(corpus.substr(pos, nl - pos));
  }
  for (const char* l :
       {"step took 12345 ms", "XAyz", "abq9", "warp  DRIVE", "colour warning", "abcdefgh",
        "[TensorRT EP] could not de\xc5\xbf"
        "erialize the plan",  // LONG S folds onto s
        "\xe2\x84\xaa"
        "elvin check",  // KELVIN SIGN onto k
        "2 Memcpy nodes are added to the graph g\xe2\x84\xaa", "Some nodes were",
        "2026-11-30T12:00:03.000003Z INFO  server request id=3 route=/v2/models/unet/infer", "",
        "\r", "caf\xc3\xa9 \xe2\x9c\x93 ok",
        "2026-11-30T12:00:01.000001Z DEBUG scheduler step=1 t=1 sigma=0.3238 seed=1 ok"}) {
    v.push_back(l);
  }
  return v;  // the last line is the filler
}

// Random logs over the vocabulary: case changes, lines wrapped at a space or inside a word,
// CRLF, empty and overlong lines, sizes that cross the reader's chunk boundaries at random
// places.
std::string RandomLog(std::mt19937& rng, const std::vector<std::string>& vocab, std::size_t size) {
  std::string out;
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  while (out.size() < size) {
    // Long quiet stretches between findings, as in a real log.
    for (std::size_t k = pick(2) == 0 ? 1 + pick(300) : 0; k > 0; --k) out += vocab.back() + "\n";
    std::string line = vocab[pick(vocab.size())];
    if (pick(4) == 0) {
      for (char& c : line) {
        if (pick(3) == 0) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      }
    }
    if (pick(40) == 0) line = std::string(kMaxLineBytes - 20 + pick(60), 'y') + line;
    const std::string eol = pick(10) == 0 ? "\r\n" : "\n";
    if (!line.empty() && pick(3) == 0) {  // wrap it
      std::size_t cut = pick(line.size());
      out += line.substr(0, cut) + eol + line.substr(cut + (line[cut] == ' ' ? 1 : 0)) + eol;
    } else {
      out += line + eol;
    }
  }
  return out;
}

std::string PatternFile(const std::string& name, const std::vector<std::string>& regexes) {
  std::string yaml = "patterns:\n";
  for (std::size_t i = 0; i < regexes.size(); ++i) {
    yaml += "  - id: app.p" + std::to_string(i) + "\n    regex: '" + regexes[i] +
            "'\n    category: app\n    advice: look\n";
  }
  const std::string path = ::testing::TempDir() + "/" + name;
  testing::WriteFile(path, yaml);
  return path;
}

TEST(LogScanPrefilter, StreamingAgreesWithMatchingEveryLine) {
  // User patterns whose literals the reader must get right (a wrong one would drop matches).
  const std::vector<std::string> regexes = {R"(step took [0-9]{4,} ?ms)",  R"(x\x41yz)",
                                            R"([[:alpha:]]bq[[:digit:]])", R"((?i:warp)\s+drive)",
                                            R"(colou?r warning)",          R"(abcdefg?h)"};
  auto user = LogScanner::WithUserPatterns(PatternFile("prefilter_user.yaml", regexes));
  ASSERT_TRUE(user.ok()) << user.status().message();
  std::vector<std::string> with_none = regexes;
  with_none.push_back(R"([0-9]{5,})");
  auto unfiltered = LogScanner::WithUserPatterns(PatternFile("prefilter_none.yaml", with_none));
  ASSERT_TRUE(unfiltered.ok()) << unfiltered.status().message();
  ASSERT_EQ((*unfiltered)->MaxLiteral(), 0u);  // a pattern without a literal: no prefilter
  ASSERT_GT((*user)->MaxLiteral(), 0u);
  LogScanner builtin;
  const std::vector<std::string> vocab = Vocabulary();
  std::mt19937 rng(20261201);
  for (int round = 0; round < 6; ++round) {
    std::string log = RandomLog(rng, vocab, 300 * 1024 + rng() % (400 * 1024));
    if (round % 2 == 1) log.pop_back();  // no newline at the end
    ExpectAgreement(builtin, log, "built-in, round " + std::to_string(round));
    ExpectAgreement(**user, log, "user patterns, round " + std::to_string(round));
    if (round == 0) ExpectAgreement(**unfiltered, log, "no prefilter");
  }
  // The real corpus as one log.
  ExpectAgreement(builtin,
                  testing::ReadFile(testing::SourceDir() + "/tests/data/logscan/real_excerpts.txt"),
                  "corpus");
}

// A key phrase wrapped inside a word deep in a large log (past the first read chunk) is found:
// the literal "memcpy" is on neither line, only across the break.
TEST(LogScanPrefilter, WrapInsideAWordPastTheFirstChunkIsFound) {
  std::string log;
  for (int i = 0; i < 6000; ++i)
    log += "2026-11-30T12:00:00Z INFO filler " + std::to_string(i) + "\n";
  log += "[W:onnxruntime:, transformer.cc:83 ApplyImpl] 2 Memc\n";
  log += "py nodes are added to the graph main_graph for CUDAExecutionProvider\n";
  for (int i = 0; i < 6000; ++i)
    log += "2026-11-30T12:00:00Z INFO filler " + std::to_string(i) + "\n";
  ASSERT_GT(log.size(), 256u * 1024);
  LogScanner s;
  std::int64_t lines = 0;
  std::vector<Found> got = Streamed(s, log, &lines);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, "ort.memcpy_added");
  EXPECT_EQ(got[0].line, 6001);
  EXPECT_EQ(lines, 12002);
}

// A character that RE2 folds onto an ASCII letter of the only literal: the line is still found.
TEST(LogScanPrefilter, LineWhoseLiteralIsSpelledWithAFoldIsFound) {
  std::string log;
  for (int i = 0; i < 6000; ++i)
    log += "2026-11-30T12:00:00Z INFO filler " + std::to_string(i) + "\n";
  log +=
      "[TensorRT EP] could not de\xc5\xbf"
      "erialize the plan\n";  // LONG S for s
  log += "2026-11-30T12:00:00Z INFO filler\n";
  LogScanner s;
  std::int64_t lines = 0;
  std::vector<Found> got = Streamed(s, log, &lines);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, "trt.deserialize_failed");
  EXPECT_EQ(got[0].line, 6001);
}

}  // namespace
}  // namespace tg::policy
