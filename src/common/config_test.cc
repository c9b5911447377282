#include "common/config.h"

#include <gtest/gtest.h>

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
