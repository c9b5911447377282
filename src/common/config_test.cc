#include "common/config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

namespace tg::common {
namespace {

TEST(ConfigTest, JsonSyntaxErrorNamesSourceLineAndColumn) {
  auto j = ParseJson("{\n  \"a\": 1,\n  \"b\": ]\n}", "snap.json");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), StatusCode::kInvalidArg);
  EXPECT_NE(j.status().message().find("snap.json:3:"), std::string::npos) << j.status().message();
}

TEST(ConfigTest, JsonNumberOutOfRangeIsAnErrorNotACrash) {
  // Regression from the snapshot fuzzer: nlohmann throws out_of_range, not parse_error, here.
  auto j = ParseJson("1111e11111111111111111111111", "fuzz.json");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), StatusCode::kInvalidArg);
  EXPECT_NE(j.status().message().find("fuzz.json"), std::string::npos);
}

TEST(ConfigTest, JsonDuplicateKeyAndDepthAreRefusedWithAPosition) {
  auto dup = ParseJson("[{}, {\"a\": 1,\n \"a\": 2}]", "d.json");
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("d.json:2:"), std::string::npos) << dup.status().message();
  EXPECT_NE(dup.status().message().find("duplicate key 'a'"), std::string::npos);
  auto deep = ParseJson(std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']'),
                        "deep.json");
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("nesting deeper than"), std::string::npos);
  // The same key in two sibling objects, and nesting just at the limit, are fine.
  EXPECT_TRUE(ParseJson("[{\"a\": 1}, {\"a\": {\"a\": [1, 2.5, \"x\", null, true]}}]", "ok").ok());
  auto at_limit = ParseJson(std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']'), "l");
  EXPECT_TRUE(at_limit.ok()) << at_limit.status().message();
}

TEST(ConfigTest, JsonParseBuildsTheSameDocumentAsNlohmann) {
  const std::string text =
      R"({"b": [1, -2, 3.5e3, "s\u00e9", {"x": null}], "a": {"t": true, "f": false}, "u": 18446744073709551615})";
  auto j = ParseJson(text, "same.json");
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_EQ(*j, Json::parse(text));
}

// Parsing is linear in the number of elements: an array of n objects used to take n^2 steps
// (nlohmann's callback parser rescans the parent after each object). A ratio, not a time limit:
// ten times the elements may cost at most 30 times the time (quadratic would be 100).
TEST(ConfigTest, JsonArrayOfObjectsParsesInLinearTime) {
  auto seconds = [](int n) {
    std::string text = "[";
    for (int i = 0; i < n; ++i) text += i ? ",{}" : "{}";
    text += "]";
    double best = 1e9;
    for (int rep = 0; rep < 2; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      auto j = ParseJson(text, "big.json");
      const auto t1 = std::chrono::steady_clock::now();
      EXPECT_TRUE(j.ok() && j->size() == static_cast<std::size_t>(n));
      best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
    }
    return best;
  };
  const double t10k = seconds(10'000), t100k = seconds(100'000), t1m = seconds(1'000'000);
  EXPECT_LT(t100k, 30 * std::max(t10k, 1e-3)) << t10k << " s, " << t100k << " s";
  EXPECT_LT(t1m, 30 * t100k) << t100k << " s, " << t1m << " s";
}

TEST(ConfigTest, YamlMapRejectsUnknownFieldsAndWrongTypes) {
  auto node = ParseYaml("cuda:\n  runtime: [1, 2]\nextra: 1\n", "m.yaml");
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  auto root = YamlMap::From(*node, "m.yaml", "");
  ASSERT_TRUE(root.ok());
  auto cuda = root->GetMap("cuda", true);
  ASSERT_TRUE(cuda.ok());
  std::string runtime;
  Status s = (*cuda)->Get("runtime", &runtime, true);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArg);
  EXPECT_NE(s.message().find("m.yaml:2:"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("cuda.runtime"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("a sequence"), std::string::npos) << s.message();
  Status fin = root->Finish();
  EXPECT_NE(fin.message().find("unknown field 'extra'"), std::string::npos) << fin.message();
  EXPECT_NE(fin.message().find("m.yaml:3:"), std::string::npos) << fin.message();
}

}  // namespace
}  // namespace tg::common
