// `truegreen serve` batching and the KServe binary tensor extension, against one dev-policy server
// whose SD pipeline batches (config.yaml: max_batch 4 images, batch_delay_ms 800, so concurrent
// requests reliably meet): batched images equal the same request alone, different steps never
// share a batch, exec_count counts batches; binary tensors round-trip on a generic model, and
// malformed binary framing gets 400 with the process alive.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/server_harness.h"

namespace tg::testing {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

// sd15: a real folder of symlinks to the tiny SD 1.5 export, so it can carry its own config.yaml.
void MakeBatchRepository(const std::string& dir) {
  const std::string src = BinaryDir() + "/models/sd-tiny/sd15-legacy";
  fs::create_directories(dir + "/sd15");
  for (const auto& e : fs::directory_iterator(src)) {
    fs::create_symlink(e.path(), dir + "/sd15/" + e.path().filename().string());
  }
  WriteFile(dir + "/sd15/config.yaml", "max_batch: 4\nbatch_delay_ms: 800\n");
  fs::create_directories(dir + "/mm");
  fs::create_symlink(BinaryDir() + "/models/runtime/matmul_softmax.onnx", dir + "/mm/model.onnx");
  WriteFile(dir + "/mm/config.yaml", "max_batch: 4\nbatch_delay_ms: 5\n");
}

class ServerBatchTest : public SharedServerTest<ServerBatchTest> {
 public:
  static void MakeRepo(const std::string& dir) { MakeBatchRepository(dir); }
  static std::vector<std::string> ServeArgs(const std::string& dir) {
    return {"--models", dir, "--max-body-bytes", "65536", "--queue-size", "32"};
  }

 protected:
  // A counter of /metrics for model `model` (0 when absent).
  static double Metric(const std::string& name, const std::string& model) {
    const std::string body = Request(port_, "GET", "/metrics").body;
    const std::string key = name + "{model=\"" + model + "\"} ";
    auto p = body.find("\n" + key);
    if (p == std::string::npos) return 0;
    return std::stod(body.substr(p + 1 + key.size()));
  }

  static HttpResult Image(const std::string& prompt, int seed, int steps) {
    return Request(port_, "POST", "/v1/images/generations",
                   R"({"prompt":")" + prompt +
                       R"(","size":"256x256","scheduler":"euler","steps":)" +
                       std::to_string(steps) + R"(,"seed":)" + std::to_string(seed) +
                       R"(,"response_format":"b64_json"})");
  }

  // Sends all requests at once and returns the responses in order.
  static std::vector<HttpResult> Concurrently(const std::vector<std::function<HttpResult()>>& fs) {
    std::vector<HttpResult> rs(fs.size());
    std::vector<std::thread> ts;
    for (std::size_t i = 0; i < fs.size(); ++i) ts.emplace_back([&, i] { rs[i] = fs[i](); });
    for (auto& t : ts) t.join();
    return rs;
  }
};

TEST_F(ServerBatchTest, ConcurrentImageRequestsShareAUnetBatchAndMatchTheirRunAlone) {
  const double exec0 = Metric("nv_inference_exec_count", "sd15");
  const double ok0 = Metric("nv_inference_request_success", "sd15");
  const std::vector<std::string> prompts = {"a photo of a cat", "a red bicycle", "a bowl of fruit",
                                            "a lighthouse at night"};
  std::vector<std::function<HttpResult()>> fs;
  for (int i = 0; i < 4; ++i) fs.push_back([&, i] { return Image(prompts[i], 10 + i, 2); });
  const auto rs = Concurrently(fs);
  for (const auto& r : rs) ASSERT_EQ(r.status, 200) << r.body;
  const double execs = Metric("nv_inference_exec_count", "sd15") - exec0;
  EXPECT_EQ(Metric("nv_inference_request_success", "sd15") - ok0, 4);
  // Four 1-image requests of one key within the 800 ms delay: batched (one execution when all
  // four meet; never one per request).
  EXPECT_GE(execs, 1);
  EXPECT_LT(execs, 4) << "concurrent compatible requests were not batched";
  // Image k of the batch is byte-identical to the same request run alone.
  for (int i : {0, 3}) {
    auto alone = Image(prompts[i], 10 + i, 2);
    ASSERT_EQ(alone.status, 200) << alone.body;
    EXPECT_EQ(Json::parse(alone.body)["data"][0]["b64_json"],
              Json::parse(rs[i].body)["data"][0]["b64_json"])
        << "request " << i;
  }
  EXPECT_NE(Json::parse(rs[0].body)["data"][0]["b64_json"],
            Json::parse(rs[1].body)["data"][0]["b64_json"]);
}

TEST_F(ServerBatchTest, DifferentStepsNeverShareABatch) {
  const double exec0 = Metric("nv_inference_exec_count", "sd15");
  std::vector<std::function<HttpResult()>> fs;
  for (int i = 0; i < 4; ++i) {
    fs.push_back([i] { return Image("a photo of a cat", i, i % 2 == 0 ? 2 : 3); });
  }
  const auto rs = Concurrently(fs);
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(rs[i].status, 200) << rs[i].body;  // a mixed batch would be refused (400)
    EXPECT_EQ(Json::parse(rs[i].body)["truegreen"]["steps"], i % 2 == 0 ? 2 : 3);
  }
  EXPECT_GE(Metric("nv_inference_exec_count", "sd15") - exec0, 2);
}

// ---- KServe binary tensor extension ----------------------------------------------------------

std::string Floats(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

HttpResult BinaryInfer(int port, const std::string& header, const std::string& binary,
                       const std::string& header_length = "") {
  return Request(port, "POST", "/v2/models/mm/infer", header + binary,
                 {{"Inference-Header-Content-Length",
                   header_length.empty() ? std::to_string(header.size()) : header_length}});
}

std::string BinaryInput(const std::string& dt, const std::string& shape, std::size_t size,
                        const std::string& extra = "") {
  return R"({"name":"x","datatype":")" + dt + R"(","shape":)" + shape +
         R"(,"parameters":{"binary_data_size":)" + std::to_string(size) + "}" + extra + "}";
}

TEST_F(ServerBatchTest, KserveBinaryTensorsRoundTrip) {
  EXPECT_NE(Request(port_, "GET", "/v2").body.find("binary_tensor_data"), std::string::npos);
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  auto ref = Request(port_, "POST", "/v2/models/mm/infer",
                     R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1,8],)"
                     R"("data":[1,2,3,4,5,6,7,8]}]})");
  ASSERT_EQ(ref.status, 200) << ref.body;
  const Json want = Json::parse(ref.body)["outputs"][0];
  // Binary in, JSON out.
  const std::string in1 = R"({"inputs":[)" + BinaryInput("FP32", "[1,8]", 32) + "]}";
  auto r1 = BinaryInfer(port_, in1, Floats(x));
  ASSERT_EQ(r1.status, 200) << r1.body;
  EXPECT_TRUE(r1.Header("inference-header-content-length").empty());
  EXPECT_EQ(Json::parse(r1.body)["outputs"][0]["data"], want["data"]);
  // Binary in, binary out (request-level binary_data_output).
  const std::string in2 = R"({"id":"b","parameters":{"binary_data_output":true},"inputs":[)" +
                          BinaryInput("FP32", "[1,8]", 32) + "]}";
  auto r2 = BinaryInfer(port_, in2, Floats(x));
  ASSERT_EQ(r2.status, 200) << r2.body;
  const std::string hl = r2.Header("inference-header-content-length");
  ASSERT_FALSE(hl.empty()) << r2.head;
  const std::size_t n = std::stoul(hl);
  ASSERT_LE(n, r2.body.size());
  const Json head = Json::parse(r2.body.substr(0, n));
  EXPECT_EQ(head["id"], "b");
  const Json& o = head["outputs"][0];
  EXPECT_FALSE(o.contains("data"));
  EXPECT_EQ(o["shape"], want["shape"]);
  const std::size_t size = o["parameters"]["binary_data_size"];
  ASSERT_EQ(size, want["data"].size() * 4);
  ASSERT_EQ(r2.body.size(), n + size);
  std::vector<float> got(want["data"].size());
  std::memcpy(got.data(), r2.body.data() + n, size);
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want["data"][i].get<float>());
  // JSON in, binary out for the one output that asks (per-output binary_data).
  const std::string name = want["name"];
  auto r3 = Request(port_, "POST", "/v2/models/mm/infer",
                    R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1,8],)"
                    R"("data":[1,2,3,4,5,6,7,8]}],"outputs":[{"name":")" +
                        name + R"(","parameters":{"binary_data":true}}]})");
  ASSERT_EQ(r3.status, 200) << r3.body;
  const std::size_t n3 = std::stoul(r3.Header("inference-header-content-length"));
  EXPECT_EQ(r3.body.substr(n3), r2.body.substr(n));
}

TEST_F(ServerBatchTest, MalformedBinaryRequestsGet400AndTheServerStaysUp) {
  const std::string ok_in = BinaryInput("FP32", "[1,8]", 32);
  auto body = [](const std::string& inputs) { return R"({"inputs":[)" + inputs + "]}"; };
  struct Case {
    const char* what;
    std::string header, binary, header_length;
    const char* needle;
  };
  const std::string b32(32, '\0');
  const std::vector<Case> cases = {
      {"size smaller than section", body(BinaryInput("FP32", "[1,8]", 28)), b32, "", "add up"},
      {"size larger than section", body(BinaryInput("FP32", "[1,8]", 36)), b32, "", "runs past"},
      {"size not shape x dtype", body(BinaryInput("FP32", "[1,8]", 28)), std::string(28, '\0'), "",
       "require 8 x 4"},
      {"negative size",
       body(R"({"name":"x","datatype":"FP32","shape":[1,8],)"
            R"("parameters":{"binary_data_size":-32}})"),
       b32, "", "integer >= 0"},
      {"huge size",
       body(R"({"name":"x","datatype":"FP32","shape":[1,8],)"
            R"("parameters":{"binary_data_size":18446744073709551615}})"),
       b32, "", "runs past"},
      {"size is a string",
       body(R"({"name":"x","datatype":"FP32","shape":[1,8],)"
            R"("parameters":{"binary_data_size":"32"}})"),
       b32, "", "integer >= 0"},
      {"header length past body", body(ok_in), b32, "100000", "body has only"},
      {"header length not a number", body(ok_in), b32, "12abc", "decimal"},
      {"header length negative", body(ok_in), b32, "-5", "decimal"},
      {"header length cuts the JSON", body(ok_in), b32, "10", "JSON"},
      {"binary section but no binary input",
       body(R"({"name":"x","datatype":"FP32","shape":[1,8],"data":[1,2,3,4,5,6,7,8]})"), b32, "",
       "no input declares"},
      {"both data and binary",
       body(BinaryInput("FP32", "[1,8]", 32, R"(,"data":[1,2,3,4,5,6,7,8])")), b32, "", "both"},
      {"BYTES prefix past end", body(BinaryInput("BYTES", "[1,1]", 8)),
       std::string("\xff\xff\xff\x7f"
                   "abcd",
                   8),
       "", "declares"},
      {"BYTES count short", body(BinaryInput("BYTES", "[1,2]", 5)),
       std::string("\x01\x00\x00\x00"
                   "a",
                   5),
       "", "length prefix"},
      {"BYTES to an FP32 input", body(BinaryInput("BYTES", "[1,1]", 5)),
       std::string("\x01\x00\x00\x00"
                   "a",
                   5),
       "", "model takes FP32"},
      {"unknown datatype", body(BinaryInput("FP128", "[1,8]", 32)), b32, "", "unknown datatype"},
      {"parameters not an object",
       body(R"({"name":"x","datatype":"FP32","shape":[1,8],"parameters":5})"), b32, "",
       "must be an object"},
      {"binary_data not a bool",
       body(ok_in).substr(0, body(ok_in).size() - 1) +
           R"(,"outputs":[{"name":"y","parameters":{"binary_data":"yes"}}]})",
       b32, "", "binary_data"},
      {"binary_data_output not a bool",
       R"({"parameters":{"binary_data_output":1},"inputs":[)" + ok_in + "]}", b32, "",
       "binary_data_output"},
  };
  ASSERT_GE(cases.size(), 10u);
  for (const Case& c : cases) {
    HttpResult r = BinaryInfer(port_, c.header, c.binary, c.header_length);
    EXPECT_EQ(r.status, 400) << c.what << ": " << r.body;
    Json j = Json::parse(r.body, nullptr, false);
    ASSERT_TRUE(j.contains("error")) << c.what << ": " << r.body;
    ASSERT_TRUE(j["error"].is_string()) << c.what << ": " << r.body;  // the OIP's error shape
    EXPECT_NE(j["error"].get<std::string>().find(c.needle), std::string::npos)
        << c.what << ": " << r.body;
    ASSERT_FALSE(server_->Exited()) << c.what << server_->Log();
  }
  EXPECT_EQ(Request(port_, "GET", "/v2/health/live").status, 200);
}

}  // namespace
}  // namespace tg::testing
