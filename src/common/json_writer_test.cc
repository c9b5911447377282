#include "common/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>

namespace tg::common {
namespace {

TEST(JsonWriterTest, Utf8ValidityFollowsRfc3629) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"));  // é € 😀
  EXPECT_FALSE(IsValidUtf8("\xFF"));
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // a UTF-16 surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xE2\x82"));          // truncated
  EXPECT_FALSE(IsValidUtf8("a\x80"));             // lone continuation byte
}

TEST(JsonWriterTest, ValidDocumentIsWhatDumpWrites) {
  Json j = {{"b", 1}, {"a", {1, 2.5, "x"}}, {"c", nullptr}};
  EXPECT_EQ(WriteJson(j), j.dump());
  EXPECT_EQ(WriteJson(j, 2), j.dump(2));
  EXPECT_EQ(CountInvalidUtf8(j), 0u);
}

TEST(JsonWriterTest, InvalidUtf8IsReplacedAndTheObjectSaysSo) {
  Json j = {{"from", "ubuntu\xFF"}, {"k\xC0", "v"}, {"list", {"ok", "\xED\xA0\x80"}}};
  EXPECT_THROW((void)j.dump(), Json::type_error);  // what this writer exists to avoid
  EXPECT_EQ(CountInvalidUtf8(j), 3u);
  for (int indent : {-1, 0, 2}) {
    const std::string text = WriteJson(j, indent);
    Json back = Json::parse(text);  // valid JSON, valid UTF-8
    ASSERT_TRUE(back.contains("invalid_utf8")) << text;
    EXPECT_EQ(back["invalid_utf8"]["strings_replaced"], 3);
    EXPECT_EQ(back["from"], "ubuntu\xEF\xBF\xBD");
    EXPECT_EQ(back["list"][0], "ok");
    EXPECT_EQ(back.size(), 4u);
  }
}

TEST(JsonWriterTest, NoticeOnAnEmptyLookingObjectAndNoneWhenAskedForNone) {
  Json only = {{"\xFF", 1}};
  Json back = Json::parse(WriteJson(only, 2));
  EXPECT_EQ(back["invalid_utf8"]["strings_replaced"], 1);
  Json plain = Json::parse(WriteJson(only, -1, JsonNotice::kNone));
  EXPECT_FALSE(plain.contains("invalid_utf8"));
  EXPECT_EQ(plain.size(), 1u);
  // Not an object: the text is still valid, with the bytes replaced.
  EXPECT_EQ(Json::parse(WriteJson(Json::array({"a\xFF"}))), Json::array({"a\xEF\xBF\xBD"}));
  EXPECT_EQ(Json::parse(WriteJson(Json("\x80"))), Json("\xEF\xBF\xBD"));
}

TEST(JsonWriterTest, NonFiniteNumbersPrintAsNull) {
  Json j = {{"nan", std::nan("")}, {"inf", std::numeric_limits<double>::infinity()}};
  Json back = Json::parse(WriteJson(j));
  EXPECT_TRUE(back["nan"].is_null());
  EXPECT_TRUE(back["inf"].is_null());
}

// Property: random bytes in keys and values of any nesting always give parseable JSON whose
// strings are valid UTF-8, and never an exception.
TEST(JsonWriterTest, RandomBytesAlwaysGiveValidJson) {
  std::mt19937 rng(19);
  auto bytes = [&] {
    std::string s(rng() % 12, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 256);
    return s;
  };
  for (int round = 0; round < 500; ++round) {
    Json j = Json::object();
    Json* cur = &j;
    for (int d = 0; d < 4; ++d) {
      (*cur)[bytes()] = bytes();
      (*cur)["arr"] = Json::array({bytes(), 1, bytes()});
      cur = &(*cur)[bytes() + "n"];
      *cur = Json::object();
    }
    const std::string text = WriteJson(j, round % 3 - 1);
    ASSERT_TRUE(IsValidUtf8(text));
    Json parsed;
    ASSERT_NO_THROW(parsed = Json::parse(text)) << round;
    ASSERT_TRUE(parsed.is_object());
  }
}

TEST(JsonWriterTest, SanitizeUtf8ReplacesEachBadByte) {
  EXPECT_EQ(SanitizeUtf8("ok"), "ok");
  EXPECT_EQ(SanitizeUtf8("a\xFF"
                         "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(SanitizeUtf8("\xC3\xA9\xC3"), "\xC3\xA9\xEF\xBF\xBD");
}

}  // namespace
}  // namespace tg::common
