// The official OpenAI Node SDK (npm `openai`, fetched by scripts/openai_sdk.sh by name and
// sha256) drives `truegreen serve`: generate with b64_json and with url, stream with partial
// images, list models, and read type and param from errors. Skips, saying why, without node or
// without the package (no registry access).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/server_harness.h"

namespace tg::testing {
namespace {

using Json = nlohmann::json;

class ServerOpenAiSdkTest : public SharedServerTest<ServerOpenAiSdkTest> {
 public:
  // The toy pipeline (tools/sd_toy.py): these tests judge the protocol, not the images, and
  // generate at 512x512 with many steps, which costs milliseconds on the toy.
  static void MakeRepo(const std::string& dir) {
    MakeRepository(dir, "max_batch: 4\nbatch_delay_ms: 20\nwarmup:\n  - {x: [2, 8]}\n", "sd15-toy");
  }
  static std::vector<std::string> ServeArgs(const std::string& dir) {
    return {"--models",     dir,  "--max-steps", "50", "--model-alias", "dall-e-3=sd15",
            "--access-log", "off"};
  }
};

TEST_F(ServerOpenAiSdkTest, GeneratesStreamsListsAndReadsErrors) {
  if (RunProcess({"/bin/sh", "-c", "command -v node"}).exit_code != 0) {
    GTEST_SKIP() << "node is not installed (the OpenAI Node SDK needs it)";
  }
  ProcessResult sdk = RunProcess({"/bin/bash", SourceDir() + "/scripts/openai_sdk.sh"});
  if (sdk.exit_code == 3) GTEST_SKIP() << "OpenAI Node SDK not available: " << sdk.err;
  ASSERT_EQ(sdk.exit_code, 0) << sdk.err;
  std::string dir = sdk.out;
  while (!dir.empty() && dir.back() == '\n') dir.pop_back();
  ProcessResult run =
      RunProcess({"/usr/bin/env", "node", SourceDir() + "/tests/openai_sdk/images_client.cjs", dir,
                  "http://127.0.0.1:" + std::to_string(port_) + "/v1"});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  Json j = Json::parse(run.out);
  EXPECT_EQ(j["b64"], Json::parse(R"(["PNG","PNG"])"));
  ASSERT_EQ(j["urls"].size(), 1u);
  EXPECT_EQ(j["urls"][0]["status"], 200);
  EXPECT_EQ(j["urls"][0]["type"], "image/png");
  EXPECT_EQ(j["urls"][0]["magic"], "PNG");
  ASSERT_EQ(j["events"].size(), 3u) << j["events"].dump();
  EXPECT_EQ(j["events"][0]["type"], "image_generation.partial_image");
  EXPECT_EQ(j["events"][0]["index"], 0);
  EXPECT_EQ(j["events"][1]["type"], "image_generation.partial_image");
  EXPECT_EQ(j["events"][1]["index"], 1);
  EXPECT_EQ(j["events"][2]["type"], "image_generation.completed");
  for (const Json& e : j["events"]) EXPECT_EQ(e["png"], "PNG");
  EXPECT_EQ(j["models"], Json::parse(R"(["sd15","dall-e-3"])"));
  ASSERT_EQ(j["errors"].size(), 3u);
  const Json want = Json::parse(R"([
    {"status":400,"type":"invalid_request_error","param":"size","code":"invalid_value"},
    {"status":400,"type":"invalid_request_error","param":"output_format","code":"invalid_value"},
    {"status":404,"type":"invalid_request_error","param":"model","code":"model_not_found"}])");
  for (std::size_t i = 0; i < 3; ++i) {
    for (const auto& [k, v] : want[i].items()) EXPECT_EQ(j["errors"][i][k], v) << i << " " << k;
    EXPECT_FALSE(j["errors"][i]["message"].get<std::string>().empty());
  }
}

}  // namespace
}  // namespace tg::testing
