// CLIP tokenizer tests. The tokenizer files are derived at test time from the original merges file
// in data/clip (tests/reference/make_clip_tokenizer.py) and expected ids come from an
// independent Python implementation (tests/reference/clip_tokenize.py) plus hand-checked ids.
#include "sd/tokenizer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/support/test_util.h"

namespace tg::sd {
namespace {

namespace fs = std::filesystem;
using tg::testing::RunProcess;
using tg::testing::SystemPython;

std::string ClipGz() { return tg::testing::ClipMergesFile(); }

// Builds (once per build tree; atomic rename so parallel tests can race safely) a tokenizer folder.
// `num_merges` < 48 894 gives a small valid tokenizer for the error-path tests (fast to load).
std::string TokenizerDir(const std::string& pad, int num_merges = 48894) {
  std::string name = std::string(pad == "!" ? "clip_pad_bang" : "clip_pad_eot") +
                     (num_merges < 48894 ? "_small" : "");
  std::string dir = tg::testing::BinaryDir() + "/sd_core_testdata/" + name;
  if (fs::exists(dir + "/tokenizer_config.json")) return dir;
  fs::create_directories(tg::testing::BinaryDir() + "/sd_core_testdata");
  std::string tmp = dir + ".tmp" + std::to_string(getpid());
  auto r = RunProcess({SystemPython(),
                       tg::testing::SourceDir() + "/tests/reference/make_clip_tokenizer.py",
                       ClipGz(), tmp, "--pad", pad, "--num-merges", std::to_string(num_merges)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::error_code ec;
  fs::rename(tmp, dir, ec);
  if (ec) fs::remove_all(tmp);
  return dir;
}

ClipTokenizer Load(const std::string& pad = "<|endoftext|>") {
  auto t = ClipTokenizer::Load(TokenizerDir(pad));
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

std::vector<std::int64_t> Ids(std::initializer_list<std::int64_t> l) { return l; }

TEST(ClipTokenizer, KnownIdsByHand) {
  ClipTokenizer tok = Load();
  EXPECT_EQ(tok.vocab_size(), 49408u);
  EXPECT_EQ(tok.num_merges(), 48894u);
  EXPECT_EQ(tok.bos_id(), 49406);
  EXPECT_EQ(tok.eos_id(), 49407);
  EXPECT_EQ(tok.pad_id(), 49407);
  auto u = tok.EncodeUnpadded("a photo of a cat");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(*u, Ids({49406, 320, 1125, 539, 320, 2368, 49407}));
  auto p = tok.Encode("a photo of a cat");
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->size(), 77u);
  EXPECT_EQ(std::vector<std::int64_t>(p->begin(), p->begin() + 7), *u);
  for (std::size_t i = 7; i < 77; ++i) EXPECT_EQ((*p)[i], 49407);
  EXPECT_EQ(tok.IdToToken(2368), "cat</w>");
  // Case and surrounding whitespace do not matter.
  EXPECT_EQ(*tok.EncodeUnpadded("  A PHOTO\tof a   Cat \n"), *u);
}

TEST(ClipTokenizer, MatchesIndependentReference) {
  const std::vector<std::string> prompts = {
      "a photo of a cat",
      "A Photo OF a CAT!!! (masterpiece), [best quality]",
      "It's a dog's life, isn't it? We'll see; they'd've LOVED it. I'm sure you're right",
      "Price: $1,234.56 on 2023-10-01 at 10:30pm, 4k 8K uhd",
      "   lots    of\twhitespace\n\nand\r\nnewlines   ",
      "caf\xc3\xa9 na\xc3\xafve r\xc3\xa9sum\xc3\xa9 \xc3\x85ngstr\xc3\xb6m cafe\xcc\x81",
      "\xe6\x9d\xb1\xe4\xba\xac\xe3\x81\xae\xe5\xa4\x9c\xe6\x99\xaf, \xe9\xab\x98\xe8\xa7\xa3\xe5"
      "\x83\x8f\xe5\xba\xa6",
      "emoji \xf0\x9f\x90\xb1\xf0\x9f\x9a\x80 test \xe2\x9c\xa8\xe2\x9c\xa8",
      "\xce\x9f\xce\x94\xce\x9f\xce\xa3 \xcf\x83\xce\xbf\xcf\x86\xce\xaf\xce\xb1\xcf\x82",
      "<|startoftext|>hello<|endoftext|> world !<|endoftext|>",
      "digits 1234567890 3.14159 \xc2\xbd \xc2\xb2 \xd9\xa3",
      "hello''s world 'tis '' rock'n'roll",
      "under_score snake_case CamelCase html &amp; entities -- ... ?!",
      std::string(40, 'x') + " " + std::string(300, '!'),
  };
  std::string long_prompt;
  for (int i = 0; i < 25; ++i) long_prompt += "a very detailed oil painting of a castle, ";
  std::vector<std::string> all = prompts;
  all.push_back(long_prompt);  // far more than 77 tokens: truncated, still ends with EOS

  nlohmann::json in = all;
  auto r = RunProcess(
      {SystemPython(), tg::testing::SourceDir() + "/tests/reference/clip_tokenize.py", ClipGz()},
      {}, in.dump(-1, ' ', true));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto want = nlohmann::json::parse(r.out);
  ASSERT_EQ(want.size(), all.size());
  ClipTokenizer tok = Load();
  for (std::size_t i = 0; i < all.size(); ++i) {
    auto got = tok.Encode(all[i]);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(*got, want[i].get<std::vector<std::int64_t>>()) << "prompt: " << all[i];
  }
  auto truncated = tok.Encode(long_prompt);
  ASSERT_TRUE(truncated.ok());
  EXPECT_EQ(truncated->back(), 49407);
  EXPECT_NE((*truncated)[75], 49407);  // a real token right before EOS: it was truncated
}

TEST(ClipTokenizer, PreTokenizationFollowsTheClipPattern) {
  auto words = ClipTokenizer::PreTokenize(ClipTokenizer::Normalize("It's a DOG!!1984 'll x'd"));
  std::vector<std::string> want = {"it", "'s", "a", "dog", "!!", "1",
                                   "9",  "8",  "4", "'ll", "x",  "'d"};
  EXPECT_EQ(words, want);
  EXPECT_EQ(ClipTokenizer::Normalize("  Hello\t\n  WORLD  "), "hello world");
  // Decomposed é composes (NFC); final capital sigma lower-cases to ς.
  EXPECT_EQ(ClipTokenizer::Normalize("Cafe\xcc\x81"), "caf\xc3\xa9");
  EXPECT_EQ(ClipTokenizer::Normalize("\xce\x9f\xce\xa3 \xce\xa3\xce\x9f"),
            "\xce\xbf\xcf\x82 \xcf\x83\xce\xbf");
}

TEST(ClipTokenizer, Sd2PadTokenResolvesThroughVocabulary) {
  ClipTokenizer tok = Load("!");
  EXPECT_EQ(tok.pad_id(), 0);
  auto ids = tok.Encode("a photo of a cat");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ((*ids)[6], 49407);
  EXPECT_EQ((*ids)[7], 0);
  EXPECT_EQ(ids->back(), 0);
}

TEST(ClipTokenizer, TruncationAndLengths) {
  ClipTokenizer tok = Load();
  auto ids = tok.Encode("a photo of a cat", 5);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, Ids({49406, 320, 1125, 539, 49407}));
  EXPECT_EQ(*tok.Encode("", 4), Ids({49406, 49407, 49407, 49407}));
  EXPECT_FALSE(tok.Encode("x", 1).ok());
  EXPECT_FALSE(tok.Encode("x", 5000).ok());
  EXPECT_EQ(tok.Tokenize("a photo of a cat", 2), Ids({320, 1125}));
}

TEST(ClipTokenizer, TenMegabytePromptsAreTruncatedWithoutCrashing) {
  ClipTokenizer tok = Load();
  const std::size_t kTen = 10u << 20;
  std::string words;
  while (words.size() < kTen) words += "a cat on a mat, ";
  auto a = tok.Encode(words);
  ASSERT_TRUE(a.ok());
  auto short_ids = tok.Encode(words.substr(0, 400));
  EXPECT_EQ(*a, *short_ids);  // only the prefix matters
  for (std::string big : {std::string(kTen, 'a'), std::string(kTen, '!'), std::string(kTen, ' '),
                          std::string(kTen, '7')}) {
    auto r = tok.Encode(big);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->size(), 77u);
    EXPECT_EQ(r->front(), 49406);
  }
  EXPECT_EQ((*tok.Encode(std::string(kTen, ' ')))[1], 49407);  // all whitespace → empty
  EXPECT_EQ((*tok.Encode(std::string(kTen, '7')))[75], tok.Tokenize("7")[0]);
}

TEST(ClipTokenizer, InvalidUtf8BecomesReplacementCharacters) {
  ClipTokenizer tok = Load();
  auto bad = tok.Encode("\xff\xfe cat \xc3");
  auto repl = tok.Encode("\xef\xbf\xbd\xef\xbf\xbd cat \xef\xbf\xbd");
  ASSERT_TRUE(bad.ok() && repl.ok());
  EXPECT_EQ(*bad, *repl);
  std::string embedded_nul("a\0b", 3);
  EXPECT_TRUE(tok.Encode(embedded_nul).ok());
}

TEST(ClipTokenizer, ConcurrentEncodingIsConsistent) {
  ClipTokenizer tok = Load();
  std::vector<std::string> prompts = {"a photo of a cat", "an astronaut riding a horse on mars",
                                      "masterpiece, best quality, 1girl", "caf\xc3\xa9 du monde"};
  std::vector<std::vector<std::int64_t>> want;
  for (const auto& p : prompts) want.push_back(*tok.Encode(p));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      ClipTokenizer copy = tok;  // copies share the cache
      for (int i = 0; i < 200; ++i) {
        std::size_t k = static_cast<std::size_t>(i + t) % prompts.size();
        if (*copy.Encode(prompts[k] + " " + std::to_string(i % 7)) !=
            *tok.Encode(prompts[k] + " " + std::to_string(i % 7))) {
          ++mismatches;
        }
        if (*copy.Encode(prompts[k]) != want[k]) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

// ---- Bad tokenizer folders --------------------------------------------------------------

class BrokenTokenizer : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = TokenizerDir("<|endoftext|>", 1000);
    for (const char* f : {"vocab.json", "merges.txt", "tokenizer_config.json"}) {
      fs::copy_file(src_ + "/" + f, dir_ / f);
    }
  }
  std::string src_;
  tg::testing::TempDir dir_;
};

TEST_F(BrokenTokenizer, MissingFilesAreNamed) {
  fs::remove(dir_ / "merges.txt");
  auto r = ClipTokenizer::Load(dir_.path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), common::StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("merges.txt"), std::string::npos) << r.status().message();
  fs::remove(dir_ / "vocab.json");
  auto v = ClipTokenizer::Load(dir_.path());
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("vocab.json"), std::string::npos);
  auto none = ClipTokenizer::Load("/nonexistent/tokenizer");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("/nonexistent/tokenizer"), std::string::npos);
}

TEST_F(BrokenTokenizer, MalformedMergesLineIsNamed) {
  tg::testing::WriteFile(dir_ / "merges.txt", "#version: 0.2\ni n\nt h e\n");
  auto r = ClipTokenizer::Load(dir_.path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), common::StatusCode::kInvalidArg);
  EXPECT_NE(r.status().message().find("merges.txt:3"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("'t h e'"), std::string::npos);
}

TEST_F(BrokenTokenizer, MalformedVocabularyIsNamed) {
  tg::testing::WriteFile(dir_ / "vocab.json", R"({"a": "one"})");
  auto r = ClipTokenizer::Load(dir_.path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("vocab.json"), std::string::npos);
  EXPECT_NE(r.status().message().find("'a'"), std::string::npos) << r.status().message();
  tg::testing::WriteFile(dir_ / "vocab.json", R"({"a": 1})");
  auto missing_bytes = ClipTokenizer::Load(dir_.path());
  ASSERT_FALSE(missing_bytes.ok());
  EXPECT_NE(missing_bytes.status().message().find("byte symbol"), std::string::npos);
  tg::testing::WriteFile(dir_ / "vocab.json", "{not json");
  EXPECT_FALSE(ClipTokenizer::Load(dir_.path()).ok());
  // A token listed twice is an error naming the file, the line of the repeat and the token.
  tg::testing::WriteFile(dir_ / "vocab.json", "{\"a\": 1,\n \"b\": 2,\n \"a\": 3}");
  auto dup = ClipTokenizer::Load(dir_.path());
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("vocab.json:3:"), std::string::npos)
      << dup.status().message();
  EXPECT_NE(dup.status().message().find("token 'a': duplicate key"), std::string::npos)
      << dup.status().message();
}

TEST_F(BrokenTokenizer, UnknownPadTokenAndBadConfigFields) {
  tg::testing::WriteFile(dir_ / "tokenizer_config.json", R"({"pad_token": "<pad>"})");
  auto r = ClipTokenizer::Load(dir_.path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("pad_token '<pad>' is not in the vocabulary"),
            std::string::npos)
      << r.status().message();
  tg::testing::WriteFile(dir_ / "tokenizer_config.json", R"({"pad_token": 5})");
  auto t = ClipTokenizer::Load(dir_.path());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("tokenizer_config.json: field 'pad_token'"),
            std::string::npos)
      << t.status().message();
  tg::testing::WriteFile(dir_ / "tokenizer_config.json",
                         R"({"pad_token": {"content": "!"}, "model_max_length": 1e30})");
  auto ok = ClipTokenizer::Load(dir_.path());
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->pad_id(), 0);
  EXPECT_EQ(ok->model_max_length(), 77);
}

}  // namespace
}  // namespace tg::sd
