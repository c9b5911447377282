#include "server/kserve_binary.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace tg::server {
namespace {

using common::Json;

std::string Le32(std::uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

void ExpectInvalid(const common::Status& s, const std::string& needle) {
  EXPECT_EQ(s.code(), common::StatusCode::kInvalidArg) << s.ToString();
  EXPECT_NE(s.message().find(needle), std::string::npos)
      << "'" << s.message() << "' should mention '" << needle << "'";
}

TEST(KserveBinaryTest, SplitsByTheHeaderLength) {
  auto p = SplitInferBody("{\"a\":1}XYZ", "7");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->json, "{\"a\":1}");
  EXPECT_EQ(p->binary, "XYZ");
  auto whole = SplitInferBody("{}", "");
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->json, "{}");
  EXPECT_TRUE(whole->binary.empty());
  ExpectInvalid(SplitInferBody("{}", "3").status(), "only 2 bytes");
  ExpectInvalid(SplitInferBody("{}", "-1").status(), "decimal");
  ExpectInvalid(SplitInferBody("{}", "1e3").status(), "decimal");
  ExpectInvalid(SplitInferBody("{}", "99999999999999999999999").status(), "decimal");
  ExpectInvalid(SplitInferBody("{}", "18446744073709551615").status(), "decimal");
}

TEST(KserveBinaryTest, AssignsSectionsInInputOrder) {
  Json in = Json::parse(R"([{"name":"a","parameters":{"binary_data_size":2}},
                            {"name":"b","data":[1]},
                            {"name":"c","parameters":{"binary_data_size":3}}])");
  auto r = AssignBinaryInputs(in, "xxYYY");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ(*(*r)[0], "xx");
  EXPECT_FALSE((*r)[1].has_value());
  EXPECT_EQ(*(*r)[2], "YYY");
}

TEST(KserveBinaryTest, SizesMustAccountForTheWholeSection) {
  auto one = [](const std::string& size) {
    return Json::parse(R"([{"name":"x","parameters":{"binary_data_size":)" + size + "}}]");
  };
  ExpectInvalid(AssignBinaryInputs(one("5"), "abc").status(), "runs past");
  ExpectInvalid(AssignBinaryInputs(one("2"), "abc").status(), "add up to 2");
  ExpectInvalid(AssignBinaryInputs(one("-1"), "abc").status(), "integer >= 0");
  ExpectInvalid(AssignBinaryInputs(one("18446744073709551615"), "abc").status(), "runs past");
  ExpectInvalid(AssignBinaryInputs(one("1.5"), "abc").status(), "integer >= 0");
  ExpectInvalid(AssignBinaryInputs(one("\"3\""), "abc").status(), "integer >= 0");
  ExpectInvalid(AssignBinaryInputs(Json::parse(R"([{"name":"x","data":[1]}])"), "abc").status(),
                "no input declares");
  ExpectInvalid(AssignBinaryInputs(Json::parse(R"([{"name":"x","parameters":7}])"), "").status(),
                "must be an object");
  ExpectInvalid(
      AssignBinaryInputs(
          Json::parse(R"([{"name":"x","data":[1],"parameters":{"binary_data_size":3}}])"), "abc")
          .status(),
      "both");
  // Two inputs whose sizes each fit but together overrun.
  ExpectInvalid(AssignBinaryInputs(Json::parse(R"([{"parameters":{"binary_data_size":2}},
                                                   {"parameters":{"binary_data_size":2}}])"),
                                   "abc")
                    .status(),
                "runs past");
}

TEST(KserveBinaryTest, FixedSizeTensorsMustMatchShapeTimesType) {
  EXPECT_TRUE(CheckBinaryTensor("x", "FP32", 2, std::string(8, '\0')).ok());
  ExpectInvalid(CheckBinaryTensor("x", "FP32", 2, std::string(7, '\0')), "require 2 x 4");
  ExpectInvalid(CheckBinaryTensor("x", "FP32", 2, std::string(12, '\0')), "require 2 x 4");
  ExpectInvalid(CheckBinaryTensor("x", "INT64", 1, std::string(4, '\0')), "require 1 x 8");
  ExpectInvalid(CheckBinaryTensor("x", "FP99", 1, "1234"), "unknown datatype");
  EXPECT_TRUE(CheckBinaryTensor("x", "BOOL", 2, std::string("\x00\x01", 2)).ok());
  ExpectInvalid(CheckBinaryTensor("x", "BOOL", 2, std::string("\x00\x02", 2)), "0 or 1");
  EXPECT_TRUE(CheckBinaryTensor("x", "FP16", 0, "").ok());
}

TEST(KserveBinaryTest, BytesElementsAreLengthPrefixedExactly) {
  const std::string two = Le32(3) + "abc" + Le32(0);
  EXPECT_TRUE(CheckBinaryTensor("s", "BYTES", 2, two).ok());
  ExpectInvalid(CheckBinaryTensor("s", "BYTES", 3, two), "no 4-byte length prefix");
  ExpectInvalid(CheckBinaryTensor("s", "BYTES", 1, two), "bytes left");
  ExpectInvalid(CheckBinaryTensor("s", "BYTES", 1, Le32(0xffffffffu) + "ab"), "only 2 remain");
  ExpectInvalid(CheckBinaryTensor("s", "BYTES", 1, Le32(5) + "abc"), "declares 5");
  ExpectInvalid(CheckBinaryTensor("s", "BYTES", 1, "ab"), "no 4-byte length prefix");
  // A huge element count with a tiny body stops at the first missing prefix.
  ExpectInvalid(CheckBinaryTensor("s", "BYTES", std::int64_t{1} << 40, Le32(0)),
                "no 4-byte length prefix");
}

}  // namespace
}  // namespace tg::server
