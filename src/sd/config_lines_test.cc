#include "sd/config_lines.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sd/scheduler.h"

namespace tg::sd {
namespace {

TEST(ConfigLinesTest, FindsTheTopLevelMemberOnly) {
  const std::string text =
      "{\n"
      "  \"_note\": \"\\\"steps\\\": 1 and \\\\\",\n"  // the name inside a string, escapes
      "  \"nested\": {\"steps\": 2, \"list\": [{\"steps\": 3}]},\n"
      "  \"steps\"\n"
      "     : 4\n"
      "}\n";
  EXPECT_EQ(JsonTopLevelKeyLine(text, "steps"), 4);
  EXPECT_EQ(JsonTopLevelKeyLine(text, "nested"), 3);
  EXPECT_EQ(JsonTopLevelKeyLine(text, "list"), 0);  // nested only
  EXPECT_EQ(JsonTopLevelKeyLine(text, "missing"), 0);
  EXPECT_EQ(JsonTopLevelKeyLine("{\"a\": \"unterminated", "a"), 1);
  EXPECT_EQ(JsonTopLevelKeyLine("{\"b\": \"unterminated", "c"), 0);
}

TEST(ConfigLinesTest, AddsTheLineToFieldMessagesOnly) {
  const std::string text = "{\n  \"a\": 1,\n  \"b\": [1, -1]\n}\n";
  common::Status s =
      WithFieldLine(common::Status::InvalidArg("f.json: field 'b[1]': found -1"), "f.json", text);
  EXPECT_EQ(s.message(), "f.json:3: field 'b[1]': found -1");
  EXPECT_EQ(s.code(), common::StatusCode::kInvalidArg);
  s = WithFieldLine(common::Status::Unsupported("f.json: field 'a': not implemented"), "f.json",
                    text);
  EXPECT_EQ(s.message(), "f.json:2: field 'a': not implemented");
  EXPECT_EQ(s.code(), common::StatusCode::kUnsupported);
  EXPECT_EQ(
      WithFieldLine(common::Status::InvalidArg("f.json: found array"), "f.json", text).message(),
      "f.json: found array");
  EXPECT_EQ(
      WithFieldLine(common::Status::InvalidArg("f.json: field 'zz': x"), "f.json", text).message(),
      "f.json: field 'zz': x");
  EXPECT_TRUE(WithFieldLine(common::Status::Ok(), "f.json", text).ok());
}

TEST(ConfigLinesTest, SchedulerConfigErrorsNameTheLine) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "tg_config_lines_scheduler.json").string();
  {
    std::ofstream out(path);
    out << "{\n  \"_class_name\": \"DDIMScheduler\",\n  \"beta_start\": 0.00085,\n"
           "  \"num_train_timesteps\": -1\n}\n";
  }
  auto c = LoadSchedulerConfig(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message().rfind(path + ":4: field 'num_train_timesteps'", 0), 0u)
      << c.status().message();
}

}  // namespace
}  // namespace tg::sd
