// `truegreen serve` endpoints against one dev-policy server (tiny SD 1.5 pipeline + a generic
// ONNX model): images through the OpenAI and KServe APIs, introspection, metrics, and a table of
// malformed requests that must each get a 4xx while the process stays alive.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "tests/server_harness.h"

namespace tg::testing {
namespace {

using Json = nlohmann::json;

class ServerApiTest : public SharedServerTest<ServerApiTest> {
 public:
  static void MakeRepo(const std::string& dir) { MakeRepository(dir); }
  static std::vector<std::string> ServeArgs(const std::string& dir) {
    return {"--models",    dir, "--max-body-bytes", "65536", "--header-timeout-ms", "1000",
            "--max-steps", "50"};
  }
};

TEST_F(ServerApiTest, OpenAiImageIsAPngWithTheRequestedSize) {
  auto r = Request(port_, "POST", "/v1/images/generations",
                   R"({"prompt":"a photo of a cat","n":2,"size":"256x256","steps":3,"seed":7,)"
                   R"("response_format":"b64_json","scheduler":"euler"})");
  ASSERT_EQ(r.status, 200) << r.body;
  Json j = Json::parse(r.body);
  ASSERT_EQ(j["data"].size(), 2u);
  // "iVBORw0KGgo" is the base64 of the PNG signature; 256 = 0x100 in the IHDR width field.
  const std::string b64 = j["data"][0]["b64_json"];
  EXPECT_EQ(b64.substr(0, 11), "iVBORw0KGgo");
  EXPECT_EQ(j["data"][0]["seed"], 7);
  EXPECT_EQ(j["data"][1]["seed"], 8);
  // This server's own facts sit in "truegreen", clear of the ImagesResponse fields.
  EXPECT_EQ(j["truegreen"]["size"], "256x256");
  EXPECT_EQ(j["truegreen"]["scheduler"], "euler");
  EXPECT_TRUE(j["truegreen"]["degraded"].get<bool>());
  EXPECT_EQ(j["truegreen"]["steps"], 3);
  EXPECT_FALSE(j["truegreen"]["model"].get<std::string>().empty());
  EXPECT_EQ(j["output_format"], "png");
  EXPECT_TRUE(j["created"].is_number_integer());
  // The body is written by hand (Base64 in place); it must be exactly the JSON serializer's.
  EXPECT_EQ(j.dump(), r.body);
  EXPECT_FALSE(r.Header("x-request-id").empty());
  // Same seed, same settings: the same image.
  auto again = Request(port_, "POST", "/v1/images/generations",
                       R"({"prompt":"a photo of a cat","size":"256x256","steps":3,"seed":7,)"
                       R"("scheduler":"euler","response_format":"b64_json"})");
  ASSERT_EQ(again.status, 200);
  EXPECT_EQ(Json::parse(again.body)["data"][0]["b64_json"], b64);
}

TEST_F(ServerApiTest, KserveInferMatchesSingleAndBatchedRuns) {
  auto meta = Request(port_, "GET", "/v2/models/mm");
  ASSERT_EQ(meta.status, 200) << meta.body;
  Json m = Json::parse(meta.body);
  EXPECT_EQ(m["inputs"][0]["name"], "x");
  EXPECT_EQ(m["inputs"][0]["shape"], Json::parse("[-1,8]"));
  auto infer = [&](const std::string& data, int rows) {
    return Request(port_, "POST", "/v2/models/mm/infer",
                   R"({"id":"q","inputs":[{"name":"x","datatype":"FP32","shape":[)" +
                       std::to_string(rows) + R"(,8],"data":)" + data + "}]}");
  };
  auto one = infer("[1,2,3,4,5,6,7,8]", 1);
  ASSERT_EQ(one.status, 200) << one.body;
  Json a = Json::parse(one.body);
  EXPECT_EQ(a["id"], "q");
  EXPECT_EQ(a["model_name"], "mm");
  ASSERT_EQ(a["outputs"][0]["shape"], Json::parse("[1,8]"));
  // Nested data, two rows; the first row must give the same output as the single run.
  auto two = infer("[[1,2,3,4,5,6,7,8],[0,0,0,0,0,0,0,0]]", 2);
  ASSERT_EQ(two.status, 200) << two.body;
  Json b = Json::parse(two.body);
  ASSERT_EQ(b["outputs"][0]["data"].size(), 16u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_FLOAT_EQ(b["outputs"][0]["data"][i].get<float>(),
                    a["outputs"][0]["data"][i].get<float>());
  }
  // Concurrent requests are merged into batches (max_batch 4, 20 ms delay) and each still gets
  // its own rows back.
  std::vector<std::thread> ts;
  std::vector<HttpResult> rs(8);
  for (int k = 0; k < 8; ++k) {
    ts.emplace_back([&, k] { rs[k] = infer("[1,2,3,4,5,6,7,8]", 1); });
  }
  for (auto& t : ts) t.join();
  for (const auto& r : rs) {
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(Json::parse(r.body)["outputs"][0]["data"], a["outputs"][0]["data"]);
  }
  auto metrics = Request(port_, "GET", "/metrics").body;
  EXPECT_NE(metrics.find("truegreen_batch_size_bucket{model=\"mm\",le=\"2\"}"), std::string::npos);
}

TEST_F(ServerApiTest, KserveServerEndpoints) {
  EXPECT_EQ(Request(port_, "GET", "/v2").status, 200);
  EXPECT_EQ(Request(port_, "GET", "/v2/health/live").status, 200);
  EXPECT_EQ(Request(port_, "GET", "/v2/health/ready").status, 200);
  EXPECT_EQ(Request(port_, "GET", "/v2/models/mm/ready").status, 200);
  EXPECT_EQ(Request(port_, "GET", "/v2/models/nope/ready").status, 404);
}

TEST_F(ServerApiTest, CapabilitiesShowVerdictPlacementCanaryAndDegraded) {
  auto r = Request(port_, "GET", "/v1/capabilities");
  ASSERT_EQ(r.status, 200);
  Json j = Json::parse(r.body);
  EXPECT_TRUE(j["degraded"].get<bool>());
  EXPECT_NE(j["verdict"].get<std::string>().find("DEGRADED"), std::string::npos);
  EXPECT_TRUE(j["snapshot"].is_object());
  EXPECT_GT(j["models"]["sd15"]["placement"]["unet"]["total_nodes"].get<int>(), 0);
  EXPECT_TRUE(j["models"]["mm"]["placement"]["model"]["nodes_per_provider"].contains(
      "CPUExecutionProvider"));
  EXPECT_TRUE(j["canary"]["ok"].get<bool>());
  EXPECT_EQ(j["canary"]["models"]["sd15"]["samples_ms"].size(), 3u);
}

TEST_F(ServerApiTest, ReadyzListsEveryGatePassed) {
  auto r = Request(port_, "GET", "/readyz");
  ASSERT_EQ(r.status, 200);
  Json j = Json::parse(r.body);
  ASSERT_EQ(j["gates"].size(), 4u);
  for (const auto& g : j["gates"]) EXPECT_EQ(g["status"], "passed") << g.dump();
}

TEST_F(ServerApiTest, MetricsPassPromtool) {
  // ctest runs each test in its own process (and server): make one request of each kind first.
  ASSERT_EQ(Request(port_, "POST", "/v1/images/generations",
                    R"({"prompt":"a cat","size":"256x256","steps":1})")
                .status,
            200);
  ASSERT_EQ(Request(port_, "POST", "/v1/images/generations", "{").status, 400);
  auto r = Request(port_, "GET", "/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("nv_inference_request_success{model=\"sd15\"}"), std::string::npos);
  EXPECT_NE(r.body.find("truegreen_gate_status{gate=\"canary\"} 1"), std::string::npos);
  EXPECT_NE(r.body.find("truegreen_degraded 1"), std::string::npos);
  EXPECT_NE(r.body.find("truegreen_session_nodes{model=\"sd15\",session=\"unet\","
                        "provider=\"CPUExecutionProvider\"}"),
            std::string::npos);
  if (access("/usr/bin/promtool", X_OK) != 0) {
    GTEST_SKIP() << "promtool not installed";
  }
  TempDir d;
  WriteFile(d / "m.txt", r.body);
  auto p = RunProcess({"/bin/sh", "-c", "/usr/bin/promtool check metrics < " + (d / "m.txt")});
  // Parse errors are exit 1; lint findings exit 3. Lint may only name the Triton-compatible
  // nv_inference_* families (Triton's names have no _total suffix and carry _us / _count);
  // every truegreen_* family must be lint-clean.
  ASSERT_TRUE(p.exit_code == 0 || p.exit_code == 3) << p.out << p.err;
  std::string lint = p.out + p.err;
  std::size_t pos = 0;
  while (pos < lint.size()) {
    std::size_t e = lint.find('\n', pos);
    std::string line = lint.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
    if (!line.empty()) {
      EXPECT_EQ(line.rfind("nv_inference_", 0), 0u) << line;
    }
    if (e == std::string::npos) break;
    pos = e + 1;
  }
}

struct Bad {
  const char* what;
  std::string raw;  // full request bytes
  int status;       // expected; 0 = any 4xx, -1 = connection closed without a response is fine
};

std::string Post(const std::string& path, const std::string& body,
                 const std::string& extra_headers = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + extra_headers +
         "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}
std::string Img(const std::string& body) { return Post("/v1/images/generations", body); }
std::string Inf(const std::string& body) { return Post("/v2/models/mm/infer", body); }
std::string X(const std::string& data, const std::string& shape = "[1,8]",
              const std::string& dt = "\"FP32\"") {
  return R"({"inputs":[{"name":"x","datatype":)" + dt + R"(,"shape":)" + shape + R"(,"data":)" +
         data + "}]}";
}

std::vector<Bad> BadRequests() {
  std::vector<Bad> v = {
      {"not json", Img("{prompt"), 400},
      {"empty body", Img(""), 400},
      {"json array", Img("[1,2]"), 400},
      {"json string", Img("\"a\""), 400},
      {"null body", Img("null"), 400},
      {"missing prompt", Img(R"({"n":1})"), 400},
      {"prompt null", Img(R"({"prompt":null})"), 400},
      {"prompt number", Img(R"({"prompt":5})"), 400},
      {"prompt array", Img(R"({"prompt":["a"]})"), 400},
      {"prompt empty", Img(R"({"prompt":""})"), 400},
      {"n zero", Img(R"({"prompt":"a","n":0})"), 400},
      {"n huge", Img(R"({"prompt":"a","n":100000})"), 400},
      {"n negative", Img(R"({"prompt":"a","n":-1})"), 400},
      {"n float", Img(R"({"prompt":"a","n":1.5})"), 400},
      {"n string", Img(R"({"prompt":"a","n":"2"})"), 400},
      {"n bigger than int64", Img(R"({"prompt":"a","n":99999999999999999999999})"), 400},
      {"size huge", Img(R"({"prompt":"a","size":"100000x100000"})"), 400},
      {"size small", Img(R"({"prompt":"a","size":"8x8"})"), 400},
      {"size not multiple of 8", Img(R"({"prompt":"a","size":"257x256"})"), 400},
      {"size garbage", Img(R"({"prompt":"a","size":"big"})"), 400},
      {"size number", Img(R"({"prompt":"a","size":512})"), 400},
      {"size negative", Img(R"({"prompt":"a","size":"-512x512"})"), 400},
      {"steps huge", Img(R"({"prompt":"a","steps":1000000})"), 400},
      {"steps zero", Img(R"({"prompt":"a","steps":0})"), 400},
      {"steps string", Img(R"({"prompt":"a","steps":"10"})"), 400},
      {"guidance string", Img(R"({"prompt":"a","guidance_scale":"x"})"), 400},
      {"guidance huge", Img(R"({"prompt":"a","guidance_scale":1e300})"), 400},
      {"seed negative", Img(R"({"prompt":"a","seed":-5})"), 400},
      {"seed string", Img(R"({"prompt":"a","seed":"5"})"), 400},
      {"unknown scheduler", Img(R"({"prompt":"a","steps":2,"size":"256x256","scheduler":"x"})"),
       400},
      {"response_format unknown", Img(R"({"prompt":"a","response_format":"jpeg"})"), 400},
      {"size zero", Img(R"({"prompt":"a","size":"0x0"})"), 400},
      {"size sides past int", Img(R"({"prompt":"a","size":"9999999999x1"})"), 400},
      {"size long height", Img(R"({"prompt":"a","size":"1x99999999999"})"), 400},
      {"size zero width", Img(R"({"prompt":"a","size":"0x512"})"), 400},
      {"output_format webp", Img(R"({"prompt":"a","output_format":"webp"})"), 400},
      {"quality hd", Img(R"({"prompt":"a","quality":"hd"})"), 400},
      {"background transparent", Img(R"({"prompt":"a","background":"transparent"})"), 400},
      {"partial_images without stream", Img(R"({"prompt":"a","partial_images":2})"), 400},
      {"partial_images 4", Img(R"({"prompt":"a","stream":true,"partial_images":4})"), 400},
      {"stream string", Img(R"({"prompt":"a","stream":"yes"})"), 400},
      {"n 11", Img(R"({"prompt":"a","n":11})"), 400},
      {"seed overflows at n 10",
       Img(R"({"prompt":"a","n":10,"size":"256x256","steps":1,"seed":18446744073709551607})"), 400},
      {"unknown field", Img(R"({"prompt":"a","evil":1})"), 400},
      {"unknown model", Img(R"({"prompt":"a","model":"nope"})"), 404},
      {"generic model for images", Img(R"({"prompt":"a","model":"mm"})"), 404},
      {"invalid utf-8", Img("{\"prompt\":\"\xff\xfe\"}"), 400},
      {"lone surrogate escape", Img(R"({"prompt":"\ud800"})"), 400},
      {"deep nesting", Img(std::string(5000, '[') + std::string(5000, ']')), 400},
      {"infer not json", Inf("{{"), 400},
      {"infer no inputs", Inf("{}"), 400},
      {"infer inputs not array", Inf(R"({"inputs":{}})"), 400},
      {"infer missing input", Inf(R"({"inputs":[]})"), 400},
      {"infer wrong datatype", Inf(X("[1,2,3,4,5,6,7,8]", "[1,8]", "\"INT64\"")), 400},
      {"infer datatype null", Inf(X("[1,2,3,4,5,6,7,8]", "[1,8]", "null")), 400},
      {"infer unknown datatype", Inf(X("[1,2,3,4,5,6,7,8]", "[1,8]", "\"BYTES\"")), 400},
      {"infer wrong rank", Inf(X("[1,2,3,4,5,6,7,8]", "[8]")), 400},
      {"infer wrong fixed dim", Inf(X("[1,2,3,4,5,6,7,8]", "[2,4]")), 400},
      {"infer too few values", Inf(X("[1,2,3]")), 400},
      {"infer too many values", Inf(X("[1,2,3,4,5,6,7,8,9]")), 400},
      {"infer string values", Inf(X(R"(["a","b","c","d","e","f","g","h"])")), 400},
      {"infer null values", Inf(X("[null,2,3,4,5,6,7,8]")), 400},
      {"infer negative dim", Inf(X("[]", "[-1,8]")), 400},
      {"infer huge shape", Inf(X("[]", "[16777216,8]")), 400},
      {"infer overflow shape", Inf(X("[]", "[9223372036854775807,8]")), 400},
      {"infer shape strings", Inf(X("[]", R"(["1","8"])")), 400},
      {"infer extra input",
       Inf(R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1,8],)"
           R"("data":[1,2,3,4,5,6,7,8]},{"name":"y","datatype":"FP32",)"
           R"("shape":[1],"data":[1]}]})"),
       400},
      {"infer unknown output",
       Inf(R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1,8],)"
           R"("data":[1,2,3,4,5,6,7,8]}],"outputs":[{"name":"zz"}]})"),
       400},
      {"infer id number", Inf(R"({"id":5,"inputs":[]})"), 400},
      {"infer id over 1024 bytes",
       Inf(R"({"id":")" + std::string(1025, 'i') +
           R"(","inputs":[{"name":"x","datatype":"FP32",)"
           R"("shape":[1,8],"data":[1,2,3,4,5,6,7,8]}]})"),
       400},
      {"infer unknown version", Post("/v2/models/mm/versions/2/infer", "{}"), 404},
      {"infer on image model", Post("/v2/models/sd15/infer", "{}"), 400},
      {"infer unknown model", Post("/v2/models/nope/infer", "{}"), 404},
      {"unknown endpoint", Post("/v3/x", "{}"), 404},
      {"GET on infer", "GET /v2/models/mm/infer HTTP/1.1\r\nHost: x\r\n\r\n", 405},
      {"DELETE on images", "DELETE /v1/images/generations HTTP/1.1\r\nHost: x\r\n\r\n", 405},
      {"POST on healthz", Post("/healthz", "{}"), 405},
      {"garbage request line", "HELLO\r\n\r\n", 400},
      {"bad http version", "GET / HTTP/9.9\r\n\r\n", 400},
      {"header without colon", "GET /healthz HTTP/1.1\r\nBroken header\r\n\r\n", 400},
      {"bad content-length", "POST /v1/images/generations HTTP/1.1\r\nContent-Length: x\r\n\r\n",
       400},
      {"two content-lengths",
       "POST /v1/images/generations HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
       400},
      {"huge header", "GET /healthz HTTP/1.1\r\nX-Big: " + std::string(70000, 'a') + "\r\n\r\n",
       431},
      {"declared body over limit",
       "POST /v1/images/generations HTTP/1.1\r\nContent-Length: 100000000\r\n\r\n", 413},
      {"chunked body over limit",
       "POST /v1/images/generations HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n20000\r\n" +
           std::string(0x20000, 'a') + "\r\n0\r\n\r\n",
       413},
      {"bad chunk encoding",
       "POST /v1/images/generations HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
  };
  // The KServe binary tensor extension (more cases in tests/server_batch_test.cc).
  const std::string bin_in = R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1,8],)"
                             R"("parameters":{"binary_data_size":32}}]})";
  auto bin = [&](const std::string& header_length, std::size_t bytes) {
    return Post("/v2/models/mm/infer", bin_in + std::string(bytes, '\0'),
                "Inference-Header-Content-Length: " + header_length + "\r\n");
  };
  const std::string n = std::to_string(bin_in.size());
  v.push_back({"binary section short of binary_data_size", bin(n, 31), 400});
  v.push_back({"binary section longer than binary_data_size", bin(n, 33), 400});
  v.push_back({"binary header length past the body", bin("99999", 32), 400});
  v.push_back({"binary header length garbage", bin("0x20", 32), 400});
  v.push_back({"binary header length huge", bin("99999999999999999999999999", 32), 400});
  return v;
}

TEST_F(ServerApiTest, MalformedRequestsGet4xxAndTheServerStaysUp) {
  const auto cases = BadRequests();
  ASSERT_GE(cases.size(), 50u);
  for (const Bad& b : cases) {
    HttpResult r = RawRequest(port_, b.raw, 30);
    EXPECT_EQ(r.status, b.status) << b.what << ": " << r.head << "\n" << r.body;
    if (r.status >= 400 && !r.body.empty()) {
      Json j = Json::parse(r.body, nullptr, false);
      // Each API's error shape: OpenAI on /v1, the OIP's {"error": "<message>"} on /v2, the
      // documented {"error":{"code","message"}} elsewhere.
      ASSERT_TRUE(j.contains("error")) << b.what << r.body;
      const std::string target = b.raw.substr(b.raw.find(' ') + 1);
      if (target.starts_with("/v2")) {
        EXPECT_TRUE(j["error"].is_string()) << b.what << r.body;
      } else if (target.starts_with("/v1")) {
        EXPECT_TRUE(j["error"].contains("type") && j["error"].contains("param"))
            << b.what << r.body;
      } else {
        EXPECT_TRUE(j["error"].contains("code") && j["error"].contains("message"))
            << b.what << r.body;
      }
    }
    ASSERT_FALSE(server_->Exited()) << b.what << server_->Log();
  }
  EXPECT_EQ(Request(port_, "GET", "/healthz").status, 200);
}

TEST_F(ServerApiTest, SlowlorisConnectionIsClosedAndOthersAreServed) {
  int fd = Connect(port_, 10);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n"));  // never finishes the header
  // Meanwhile the server answers others.
  EXPECT_EQ(Request(port_, "GET", "/healthz").status, 200);
  const auto t0 = std::chrono::steady_clock::now();
  char c;
  // The header timeout is 1 s: the server closes the connection (recv returns 0 or an error).
  ssize_t n = recv(fd, &c, 1, 0);
  close(fd);
  EXPECT_LE(n, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(9));
  EXPECT_FALSE(server_->Exited());
}

std::string ReadUntilClosed(int fd) {
  std::string all;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) all.append(buf, static_cast<std::size_t>(n));
  return all;
}

TEST_F(ServerApiTest, HeadHasNoBodyAndExpectContinueIsAnswered) {
  int fd = Connect(port_, 10);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, "HEAD /v2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  std::string head = ReadUntilClosed(fd);
  close(fd);
  EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
  EXPECT_EQ(head.find("\r\n\r\n"), head.size() - 4) << head;  // nothing after the header

  fd = Connect(port_, 10);
  ASSERT_GE(fd, 0);
  const std::string body = R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1,8],)"
                           R"("data":[1,2,3,4,5,6,7,8]}]})";
  ASSERT_TRUE(SendAll(fd,
                      "POST /v2/models/mm/infer HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                      "Content-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n"));
  char buf[64] = {};
  ssize_t n = recv(fd, buf, 25, MSG_WAITALL);
  ASSERT_EQ(n, 25);
  EXPECT_EQ(std::string(buf, 25), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(SendAll(fd, body));
  EXPECT_EQ(ReadResponse(fd).status, 200);
  close(fd);
}

TEST_F(ServerApiTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  int fd = Connect(port_, 10);
  ASSERT_GE(fd, 0);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(SendAll(fd, "GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_EQ(ReadResponse(fd).status, 200) << i;
  }
  close(fd);
}

// The hand-serialized response head: HTTP/1.0 and 1.1, keep-alive and close, pipelined requests,
// and the cached /readyz body shared between responses.
TEST_F(ServerApiTest, ResponsesAreFramedForHttp10And11AndPipelining) {
  // HTTP/1.0 without keep-alive: 1.0 status line, no Connection header needed, then closed.
  int fd = Connect(port_, 10);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, "GET /healthz HTTP/1.0\r\n\r\n"));
  std::string all = ReadUntilClosed(fd);
  close(fd);
  EXPECT_EQ(all.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << all;
  EXPECT_NE(all.find("\r\nContent-Length: 13\r\n"), std::string::npos) << all;
  EXPECT_NE(all.find("\r\nContent-Type: application/json\r\n"), std::string::npos) << all;
  EXPECT_EQ(all.substr(all.size() - 17), "\r\n\r\n{\"live\":true}") << all;

  // HTTP/1.0 keep-alive: said so in the answer, and the connection serves a second request.
  fd = Connect(port_, 10);
  ASSERT_GE(fd, 0);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(SendAll(fd, "GET /v2/health/live HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    HttpResult r = ReadResponse(fd);
    EXPECT_EQ(r.status, 200) << i;
    EXPECT_EQ(r.Header("connection"), "keep-alive") << r.head;
    EXPECT_EQ(r.body, R"({"live":true})");
  }
  close(fd);

  // HTTP/1.1, three requests pipelined in one send: three answers in order, the last closing.
  fd = Connect(port_, 10);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd,
                      "GET /v2/health/ready HTTP/1.1\r\nHost: x\r\nX-Request-Id: a1\r\n\r\n"
                      "GET /readyz HTTP/1.1\r\nHost: x\r\nX-Request-Id: a2\r\n\r\n"
                      "GET /v2/health/ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  // Read to the close (ReadResponse would drop bytes of the next answer), then split by length.
  std::string rest = ReadUntilClosed(fd);
  close(fd);
  std::vector<HttpResult> got;
  while (!rest.empty() && got.size() < 4) {
    const std::size_t end = rest.find("\r\n\r\n");
    ASSERT_NE(end, std::string::npos) << rest;
    HttpResult r;
    r.head = rest.substr(0, end);
    r.status = std::atoi(r.head.substr(9, 3).c_str());
    const std::size_t len = std::stoul(r.Header("content-length"));
    ASSERT_GE(rest.size(), end + 4 + len) << rest;
    r.body = rest.substr(end + 4, len);
    rest.erase(0, end + 4 + len);
    got.push_back(r);
  }
  ASSERT_EQ(got.size(), 3u);  // and nothing after the third: the connection closed
  const HttpResult &r1 = got[0], &r2 = got[1], &r3 = got[2];
  for (const HttpResult* r : {&r1, &r2, &r3}) {
    EXPECT_EQ(r->status, 200) << r->head;
    EXPECT_EQ(r->Header("server"), "truegreen");
    Json j = Json::parse(r->body);
    EXPECT_TRUE(j["ready"].get<bool>()) << r->body;
    EXPECT_EQ(j["gates"].size(), 4u);
  }
  EXPECT_EQ(r1.Header("x-request-id"), "a1");
  EXPECT_EQ(r2.Header("x-request-id"), "a2");
  EXPECT_EQ(r1.Header("connection"), "");
  EXPECT_EQ(r3.Header("connection"), "close");
  EXPECT_EQ(r1.body, r3.body);

  // An echoed header value never starts a line of its own (obs-fold in the request).
  HttpResult folded =
      RawRequest(port_,
                 "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: ab\r\n Injected: yes\r\n"
                 "Connection: close\r\n\r\n");
  EXPECT_EQ(folded.status, 200);
  EXPECT_EQ(folded.head.find("\r\nInjected"), std::string::npos) << folded.head;
}

// A generated image is sent by the lane worker itself, without waiting for the I/O thread; what
// the kernel does not take at once is written by the connection's I/O thread. Here a client with
// an 8 KiB receive buffer reads only after a pause (strace: the worker's send took ~3.3 of the
// ~3.4 MB, then EAGAIN). The response must arrive whole and in order, and the connection must
// serve the next request.
TEST_F(ServerApiTest, ImageForASlowReaderArrivesWholeAndTheConnectionGoesOn) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  const int small = 8192;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));  // before connect: the window
  timeval tv{60, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port_));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  // Successful requests so far (all models), from /metrics.
  auto answered = [&] {
    const std::string m = Request(port_, "GET", "/metrics").body;
    double sum = 0;
    for (std::size_t at = m.find("\nnv_inference_request_success{"); at != std::string::npos;
         at = m.find("\nnv_inference_request_success{", at + 1)) {
      sum += std::atof(m.c_str() + m.find("} ", at) + 2);
    }
    return sum;
  };
  const double before = answered();
  const std::string body = R"({"prompt":"a slow reader","n":4,"size":"512x512","steps":2,"seed":3,)"
                           R"("response_format":"b64_json"})";
  ASSERT_TRUE(SendAll(fd, "POST /v1/images/generations HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body));
  // Read only once the server has answered (it counts the request just before sending) and the
  // send buffer has filled.
  for (int i = 0; i < 1200 && answered() <= before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  HttpResult r = ReadResponse(fd);
  ASSERT_EQ(r.status, 200) << r.head;
  Json j = Json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << r.body.size() << " bytes, not JSON";
  ASSERT_EQ(j["data"].size(), 4u);
  EXPECT_GT(r.body.size(), 1000000u);  // more than a send buffer holds at first
  EXPECT_EQ(j.dump(), r.body);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(j["data"][k]["b64_json"].get<std::string>().substr(0, 11), "iVBORw0KGgo") << k;
  }
  // Keep-alive: the same connection answers the next request.
  ASSERT_TRUE(SendAll(fd, "GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(ReadResponse(fd).status, 200);
  close(fd);
}

// A body is parsed from what arrived with the header when it is all there (one segment, chunked
// or not), and read when it comes later.
TEST_F(ServerApiTest, BodyWithTheHeaderChunkedOrLateIsRead) {
  const std::string body = R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1,8],)"
                           R"("data":[1,2,3,4,5,6,7,8]}]})";
  const std::string head = "POST /v2/models/mm/infer HTTP/1.1\r\nHost: x\r\n";
  const std::string len = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  char hex[16];
  std::snprintf(hex, sizeof(hex), "%zx", body.size());
  const std::string chunked =
      head + "Transfer-Encoding: chunked\r\n\r\n" + hex + "\r\n" + body + "\r\n0\r\n\r\n";
  int fd = Connect(port_, 10);
  ASSERT_GE(fd, 0);
  // Two whole requests in one send (the second pipelined, closing): both answered, in order.
  ASSERT_TRUE(SendAll(fd, head + len + body + head + "Connection: close\r\n" + len + body));
  std::string both = ReadUntilClosed(fd);
  close(fd);
  const std::size_t second = both.find("HTTP/1.1 ", 1);
  ASSERT_NE(second, std::string::npos) << both;
  HttpResult first;
  first.head = both.substr(0, both.find("\r\n\r\n"));
  first.status = std::atoi(first.head.substr(9, 3).c_str());
  first.body = both.substr(first.head.size() + 4, second - first.head.size() - 4);
  ASSERT_EQ(first.status, 200) << both;
  EXPECT_EQ(both.substr(second, 12), "HTTP/1.1 200") << both;
  EXPECT_EQ(both.substr(both.size() - first.body.size()), first.body);  // the same answer
  EXPECT_EQ(RawRequest(port_, chunked).status, 200);
  // The body after a pause: a second read.
  fd = Connect(port_, 10);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, head + len + body.substr(0, 10)));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(SendAll(fd, body.substr(10)));
  HttpResult late = ReadResponse(fd);
  close(fd);
  EXPECT_EQ(late.status, 200) << late.body;
  EXPECT_EQ(Json::parse(late.body)["outputs"], Json::parse(first.body)["outputs"]);
}

}  // namespace
}  // namespace tg::testing
