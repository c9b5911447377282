// `truegreen serve` against the published specifications: every body of a route and error class
// is validated with python3-jsonschema against the official schemas kept in tests/reference/
// (open_inference_rest.yaml of kserve/open-inference-protocol; the images, models and error
// components of openai/openai-openapi), and the protocol rules a schema cannot say are asserted
// here: versions, ids, aliases, URLs, streaming, and the 413 read by a client that is still
// sending (Python's http.client, as the OpenAI Python SDK sends).
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/server_harness.h"

namespace tg::testing {
namespace {

using Json = nlohmann::json;

class ServerConformanceTest : public SharedServerTest<ServerConformanceTest> {
 public:
  // The toy pipeline (tools/sd_toy.py): these tests judge the protocol, not the images, and
  // generate at 512x512 with many steps, which costs milliseconds on the toy.
  static void MakeRepo(const std::string& dir) {
    MakeRepository(dir, "max_batch: 4\nbatch_delay_ms: 20\nwarmup:\n  - {x: [2, 8]}\n", "sd15-toy");
  }
  static std::vector<std::string> ServeArgs(const std::string& dir) {
    return {"--models",     dir,  "--max-body-bytes", "65536",
            "--max-steps",  "50", "--model-alias",    "dall-e-3=sd15",
            "--access-log", "off"};
  }

 protected:
  // Bodies to validate, one JSON line each (tests/reference/validate_api_bodies.py).
  void Expect(const std::string& schema, const std::string& label, const std::string& body) {
    Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(j.is_discarded()) << label << ": not JSON: " << body.substr(0, 300);
    cases_ += Json{{"schema", schema}, {"label", label}, {"body", j}}.dump() + "\n";
  }
  void ExpectStatus(const HttpResult& r, int status, const std::string& schema,
                    const std::string& label) {
    EXPECT_EQ(r.status, status) << label << ": " << r.body.substr(0, 400);
    Expect(schema, label, r.body);
  }
  // Runs the validator over every collected body; each failing body fails the test.
  void Validate() {
    TempDir d;
    WriteFile(d / "cases.jsonl", cases_);
    ProcessResult p =
        RunProcess({SystemPython(), SourceDir() + "/tests/reference/validate_api_bodies.py",
                    d / "cases.jsonl"});
    EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
    EXPECT_NE(p.out.find(" 0 failed"), std::string::npos) << p.out;
  }
  static HttpResult Images(const std::string& body) {
    return Request(port_, "POST", "/v1/images/generations", body);
  }
  static HttpResult Infer(const std::string& path, const Json& body) {
    return Request(port_, "POST", path, body.dump());
  }
  static Json XInput() {
    return {
        {"name", "x"}, {"datatype", "FP32"}, {"shape", {1, 8}}, {"data", {1, 2, 3, 4, 5, 6, 7, 8}}};
  }
  std::string cases_;
};

TEST_F(ServerConformanceTest, OipBodiesAndErrorsMatchTheSpec) {
  HttpResult v2 = Request(port_, "GET", "/v2"), v2slash = Request(port_, "GET", "/v2/");
  ExpectStatus(v2, 200, "oip:metadata_server_response", "GET /v2");
  ExpectStatus(v2slash, 200, "oip:metadata_server_response", "GET /v2/");
  EXPECT_EQ(v2.body, v2slash.body);  // /v2/ is the spelling of the OpenAPI file

  HttpResult meta = Request(port_, "GET", "/v2/models/mm");
  ExpectStatus(meta, 200, "oip:metadata_model_response", "model metadata");
  Json m = Json::parse(meta.body);
  EXPECT_EQ(m["platform"], "onnx_onnxv1");
  ASSERT_EQ(m["versions"].size(), 1u);
  const std::string version = m["versions"][0];
  // The advertised version is reachable, and is the model_version of every answer.
  HttpResult vmeta = Request(port_, "GET", "/v2/models/mm/versions/" + version);
  ExpectStatus(vmeta, 200, "oip:metadata_model_response", "versioned model metadata");
  EXPECT_EQ(vmeta.body, meta.body);
  EXPECT_EQ(Request(port_, "GET", "/v2/models/mm/versions/" + version + "/ready").status, 200);
  EXPECT_EQ(Request(port_, "GET", "/v2/models/mm/ready").status, 200);
  ExpectStatus(Request(port_, "GET", "/v2/models/sd15"), 200, "oip:metadata_model_response",
               "image model metadata");

  // Ids come back exactly as sent, the empty one and one at the documented limit included.
  for (const std::string& id : {std::string(), std::string("42"), std::string(1024, 'z'),
                                std::string("caf\xc3\xa9 \"quoted\"")}) {
    Json req = {{"id", id}, {"inputs", {XInput()}}};
    Expect("oip:inference_request", "request id " + std::to_string(id.size()), req.dump());
    for (const std::string& path :
         {std::string("/v2/models/mm/infer"), "/v2/models/mm/versions/" + version + "/infer"}) {
      HttpResult r = Infer(path, req);
      ExpectStatus(r, 200, "oip:inference_response", path + " id " + std::to_string(id.size()));
      Json j = Json::parse(r.body);
      EXPECT_EQ(j["id"], id) << path;
      EXPECT_EQ(j["model_version"], version);
      EXPECT_EQ(j["model_name"], "mm");
    }
  }
  HttpResult no_id = Infer("/v2/models/mm/infer", {{"inputs", {XInput()}}});
  ExpectStatus(no_id, 200, "oip:inference_response", "infer without id");
  EXPECT_FALSE(Json::parse(no_id.body).contains("id"));

  // Every error class of /v2 in the protocol's {"error": "<message>"} shape.
  HttpResult long_id =
      Infer("/v2/models/mm/infer", {{"id", std::string(1025, 'z')}, {"inputs", {XInput()}}});
  ExpectStatus(long_id, 400, "oip:inference_error_response", "id over the limit");
  EXPECT_NE(long_id.body.find("at most 1024 bytes"), std::string::npos) << long_id.body;
  ExpectStatus(Infer("/v2/models/mm/infer", {{"inputs", Json::array()}}), 400,
               "oip:inference_error_response", "missing input");
  ExpectStatus(Request(port_, "POST", "/v2/models/mm/infer", "{"), 400,
               "oip:inference_error_response", "infer not JSON");
  ExpectStatus(Request(port_, "GET", "/v2/models/nope"), 404, "oip:metadata_model_error_response",
               "unknown model");
  ExpectStatus(Request(port_, "GET", "/v2/models/mm/versions/7"), 404,
               "oip:metadata_model_error_response", "unknown version");
  ExpectStatus(Infer("/v2/models/mm/versions/7/infer", {{"inputs", {XInput()}}}), 404,
               "oip:inference_error_response", "infer unknown version");
  ExpectStatus(Request(port_, "POST", "/v2", "{}"), 405, "oip:metadata_server_error_response",
               "POST /v2");
  ExpectStatus(Request(port_, "GET", "/v2/models/mm/infer"), 405, "oip:inference_error_response",
               "GET infer");
  ExpectStatus(Request(port_, "GET", "/v2/nothing"), 404, "oip:metadata_server_error_response",
               "unknown /v2 route");
  ExpectStatus(
      RawRequest(port_, "POST /v2/models/mm/infer HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n"),
      413, "oip:inference_error_response", "413 on /v2");
  Validate();
}

TEST_F(ServerConformanceTest, TritonRawBinaryRequestIsAnsweredOrRefusedByName) {
  // Inference-Header-Content-Length: 0: the body is the single input's bytes.
  std::string bytes(2 * 8 * 4, '\0');
  for (int i = 0; i < 16; ++i) {
    const float f = static_cast<float>(i);
    std::memcpy(bytes.data() + 4 * i, &f, 4);
  }
  HttpResult raw = Request(port_, "POST", "/v2/models/mm/infer", bytes,
                           {{"Inference-Header-Content-Length", "0"}});
  ExpectStatus(raw, 200, "oip:inference_response", "raw binary");
  Json j = Json::parse(raw.body);
  EXPECT_EQ(j["outputs"][0]["shape"], Json::parse("[2,8]"));
  // The same rows as JSON give the same outputs.
  Json rows = {
      {"inputs",
       {{{"name", "x"}, {"datatype", "FP32"}, {"shape", {2, 8}}, {"data", Json::array()}}}}};
  for (int i = 0; i < 16; ++i) rows["inputs"][0]["data"].push_back(i);
  HttpResult as_json = Infer("/v2/models/mm/infer", rows);
  ASSERT_EQ(as_json.status, 200) << as_json.body;
  EXPECT_EQ(Json::parse(as_json.body)["outputs"], j["outputs"]);
  HttpResult odd = Request(port_, "POST", "/v2/models/mm/infer", std::string(33, '\0'),
                           {{"Inference-Header-Content-Length", "0"}});
  ExpectStatus(odd, 400, "oip:inference_error_response", "raw binary of the wrong length");
  EXPECT_NE(odd.body.find("raw binary"), std::string::npos) << odd.body;
  EXPECT_NE(odd.body.find("multiple of 32 bytes"), std::string::npos) << odd.body;
  Validate();
}

TEST_F(ServerConformanceTest, EveryCreateImageRequestFieldIsAcceptedAtItsDefaultAndAsNull) {
  // Each field of CreateImageRequest at the default the schema names, and each one null.
  const Json spec =
      Json::parse(ReadFile(SourceDir() + "/tests/reference/openai/images_api_schemas.json"));
  const Json& props = spec["components"]["schemas"]["CreateImageRequest"]["properties"];
  Json defaults = {{"prompt", "a red bicycle"}}, nulls = {{"prompt", "a red bicycle"}};
  for (const auto& [name, p] : props.items()) {
    if (name == "prompt") continue;
    const bool nullable =
        p.value("nullable", false) || p.dump().find(R"({"type":"null"})") != std::string::npos;
    if (nullable) nulls[name] = nullptr;
    if (p.contains("default")) defaults[name] = p["default"];
    if (name == "partial_images") defaults[name] = 0;  // its default sits inside anyOf
  }
  defaults.erase("model");  // "dall-e-2" is not served; null and absent mean the served model
  defaults["size"] = "auto";
  for (const Json& body : {defaults, nulls}) {
    Expect("openai:CreateImageRequest", "request", body.dump());
    Json b = body;
    b["steps"] = 2;  // this server's extension, to keep the test fast
    b["response_format"] = "b64_json";
    HttpResult r = Images(b.dump());
    ExpectStatus(r, 200, "openai:ImagesResponse", "defaults/nulls: " + body.dump());
    Json j = Json::parse(r.body);
    // "auto" and null: the model's native size (the tiny SD 1.5 pipeline's 512x512).
    EXPECT_EQ(j["truegreen"]["size"], "512x512");
  }
  Validate();
}

TEST_F(ServerConformanceTest, OpenAiResponsesUrlsAliasesAndModelsMatchTheSpec) {
  HttpResult b64 =
      Images(R"({"prompt":"a cat","size":"256x256","steps":2,"n":2,"response_format":"b64_json"})");
  ExpectStatus(b64, 200, "openai:ImagesResponse", "b64_json");
  // The API's default response_format is "url": images from the in-server store.
  HttpResult url =
      Images(R"({"prompt":"a cat","size":"256x256","steps":2,"n":2,"model":"dall-e-3"})");
  ExpectStatus(url, 200, "openai:ImagesResponse", "url via alias");
  Json u = Json::parse(url.body);
  ASSERT_EQ(u["data"].size(), 2u);
  EXPECT_EQ(u["truegreen"]["model"], "sd15");  // dall-e-3 is answered by the aliased model
  std::set<std::string> tokens;
  for (const Json& d : u["data"]) {
    const std::string link = d["url"];
    ASSERT_TRUE(link.starts_with("http://")) << link;
    const std::string path = link.substr(link.find('/', 7));
    const std::string token = path.substr(path.rfind('/') + 1);
    EXPECT_EQ(token.size(), 32u + 4u) << token;  // 128 random bits in hex, then .png
    tokens.insert(token);
    HttpResult img = Request(port_, "GET", path);
    EXPECT_EQ(img.status, 200);
    EXPECT_EQ(img.Header("content-type"), "image/png");
    EXPECT_EQ(img.body.substr(1, 3), "PNG");
  }
  EXPECT_EQ(tokens.size(), 2u);
  HttpResult gone = Request(port_, "GET", "/v1/images/files/00000000000000000000000000000000.png");
  ExpectStatus(gone, 404, "openai:ErrorResponse", "unknown image");

  HttpResult models = Request(port_, "GET", "/v1/models");
  ExpectStatus(models, 200, "openai:ListModelsResponse", "GET /v1/models");
  std::set<std::string> ids;
  const Json list = Json::parse(models.body);
  for (const Json& mdl : list["data"]) ids.insert(mdl["id"]);
  EXPECT_EQ(ids, (std::set<std::string>{"sd15", "dall-e-3"}));  // image models only, and aliases
  ExpectStatus(Request(port_, "GET", "/v1/models/dall-e-3"), 200, "openai:Model", "one model");
  ExpectStatus(Request(port_, "GET", "/v1/models/mm"), 404, "openai:ErrorResponse",
               "not an image model");

  // n up to 10 (above the pipeline's 8 at once): ten images, consecutive seeds.
  HttpResult ten = Images(
      R"({"prompt":"a cat","size":"256x256","steps":1,"n":10,"seed":5,"response_format":"b64_json"})");
  ExpectStatus(ten, 200, "openai:ImagesResponse", "n=10");
  Json t = Json::parse(ten.body);
  ASSERT_EQ(t["data"].size(), 10u);
  for (int k = 0; k < 10; ++k) EXPECT_EQ(t["data"][k]["seed"], 5 + k);
  EXPECT_NE(t["data"][0]["b64_json"], t["data"][9]["b64_json"]);
  Validate();
}

// An image larger than the whole store (--image-store-bytes) can never be served as a URL: the
// answer is a 400 on response_format that names b64_json, and b64_json then works.
TEST_F(ServerConformanceTest, ImageLargerThanTheStoreIs400OnResponseFormat) {
  TempDir repo;
  MakeRepo(repo / "models");
  ServerProcess s({"--policy", "dev"}, {"--models", repo / "models", "--image-store-bytes",
                                        "1048576", "--access-log", "off"});
  ASSERT_GT(s.WaitPort(), 0) << s.Log();
  ASSERT_TRUE(s.WaitReady()) << s.Log();
  const std::string req = R"({"prompt":"a cat","size":"2048x2048","steps":1,"seed":3)";
  HttpResult b64 = Request(s.port(), "POST", "/v1/images/generations",
                           req + R"(,"response_format":"b64_json"})");
  ASSERT_EQ(b64.status, 200) << b64.body.substr(0, 300);
  // The premise: this PNG is over the 1 MiB store (else the test would prove nothing).
  ASSERT_GT(Json::parse(b64.body)["data"][0]["b64_json"].get<std::string>().size() * 3 / 4,
            1048576u);
  HttpResult url = Request(s.port(), "POST", "/v1/images/generations", req + "}");
  ExpectStatus(url, 400, "openai:ErrorResponse", "image over the store");
  Json e = Json::parse(url.body)["error"];
  EXPECT_EQ(e["type"], "invalid_request_error");
  EXPECT_EQ(e["param"], "response_format");
  EXPECT_EQ(e["code"], "invalid_value");
  EXPECT_NE(e["message"].get<std::string>().find("--image-store-bytes 1048576"), std::string::npos)
      << e;
  EXPECT_NE(e["message"].get<std::string>().find("\"b64_json\""), std::string::npos) << e;
  Validate();
}

TEST_F(ServerConformanceTest, StreamAnswersWithImageGenerationEvents) {
  HttpResult r = Images(
      R"({"prompt":"a cat","size":"256x256","steps":2,"stream":true,"n":2,"partial_images":0})");
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
  EXPECT_EQ(r.Header("content-type"), "text/event-stream");
  int completed = 0;
  std::size_t at = 0;
  while ((at = r.body.find("event: ", at)) != std::string::npos) {
    const std::size_t nl = r.body.find('\n', at);
    const std::string name = r.body.substr(at + 7, nl - at - 7);
    ASSERT_TRUE(r.body.compare(nl + 1, 6, "data: ") == 0) << r.body.substr(at, 80);
    const std::size_t end = r.body.find("\n\n", nl);
    ASSERT_NE(end, std::string::npos);
    const std::string data = r.body.substr(nl + 7, end - nl - 7);
    EXPECT_EQ(name, "image_generation.completed");
    EXPECT_EQ(Json::parse(data)["type"], name);
    Expect("openai:ImageGenCompletedEvent", "stream event", data);
    Expect("openai:ImageGenStreamEvent", "stream event (union)", data);
    ++completed;
    at = end;
  }
  EXPECT_EQ(completed, 2);
  Validate();
}

// Reads a chunked response from `fd` up to its terminating chunk; `reads` receives the bytes of
// each recv() so the test can tell parts that arrived apart.
std::string ReadChunked(int fd, std::string* head, std::vector<std::string>* reads) {
  std::string buf, body;
  char tmp[65536];
  while (buf.find("\r\n0\r\n\r\n") == std::string::npos) {
    const ssize_t n = recv(fd, tmp, sizeof(tmp), 0);
    if (n <= 0) break;
    buf.append(tmp, static_cast<std::size_t>(n));
    reads->emplace_back(tmp, static_cast<std::size_t>(n));
  }
  const std::size_t he = buf.find("\r\n\r\n");
  if (he == std::string::npos) return "";
  *head = buf.substr(0, he);
  for (std::size_t at = he + 4; at < buf.size();) {
    const std::size_t nl = buf.find("\r\n", at);
    if (nl == std::string::npos) break;
    const std::size_t size = std::stoul(buf.substr(at, nl - at), nullptr, 16);
    if (size == 0) break;
    body += buf.substr(nl + 2, size);
    at = nl + 2 + size + 2;
  }
  return body;
}

TEST_F(ServerConformanceTest, StreamSendsPartialImagesWhileGeneratingThenTheImage) {
  const int fd = Connect(port_);
  ASSERT_GE(fd, 0);
  const std::string body =
      R"({"prompt":"a cat","size":"1024x1024","steps":48,"stream":true,"partial_images":3})";
  ASSERT_TRUE(SendAll(fd, "POST /v1/images/generations HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body));
  std::string head;
  std::vector<std::string> reads;
  const std::string sse = ReadChunked(fd, &head, &reads);
  EXPECT_NE(head.find("200 OK"), std::string::npos) << head;
  EXPECT_NE(head.find("Transfer-Encoding: chunked"), std::string::npos) << head;
  EXPECT_NE(head.find("text/event-stream"), std::string::npos) << head;
  std::vector<std::string> names;
  for (std::size_t at = 0; (at = sse.find("event: ", at)) != std::string::npos;) {
    const std::size_t nl = sse.find('\n', at), end = sse.find("\n\n", nl);
    ASSERT_NE(end, std::string::npos);
    names.push_back(sse.substr(at + 7, nl - at - 7));
    const std::string data = sse.substr(nl + 7, end - nl - 7);
    const bool partial = names.back() == "image_generation.partial_image";
    Expect(partial ? "openai:ImageGenPartialImageEvent" : "openai:ImageGenCompletedEvent",
           names.back(), data);
    Expect("openai:ImageGenStreamEvent", names.back() + " (union)", data);
    if (partial) {
      EXPECT_EQ(Json::parse(data)["partial_image_index"], static_cast<int>(names.size()) - 1);
    }
    at = end;
  }
  EXPECT_EQ(names, (std::vector<std::string>{
                       "image_generation.partial_image", "image_generation.partial_image",
                       "image_generation.partial_image", "image_generation.completed"}));
  // Streamed, not buffered: the first preview arrived in a read before the final image's (1024²
  // and 48 steps leave the rest of the generation between them).
  ASSERT_FALSE(reads.empty());
  EXPECT_EQ(reads.front().find("image_generation.completed"), std::string::npos)
      << reads.size() << " reads";
  // The chunked framing ends cleanly: the connection answers its next request.
  ASSERT_TRUE(SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(ReadResponse(fd).status, 200);
  close(fd);
  Validate();
}

TEST_F(ServerConformanceTest, OpenAiErrorsCarryTypeParamAndCodeAsTheApiFillsThem) {
  struct Case {
    std::string body;
    int status;
    const char* param;  // nullptr: null
    const char* code;
  };
  const std::vector<Case> cases = {
      {R"({"prompt":"a","size":"0x0"})", 400, "size", "invalid_value"},
      {R"({"prompt":"a","size":"4096x4096"})", 400, "size", "invalid_value"},
      {R"({"prompt":"a","n":11})", 400, "n", "invalid_value"},
      {R"({"prompt":"a","n":"2"})", 400, "n", "invalid_type"},
      {R"({"prompt":"a","size":"256x256","steps":2,"seed":99999999999})", 400, "seed",
       "invalid_value"},
      {R"({"prompt":"a","scheduler":"nope"})", 400, "scheduler", "invalid_value"},
      {R"({"prompt":"a","output_format":"webp"})", 400, "output_format", "invalid_value"},
      {R"({"prompt":"a","quality":"hd"})", 400, "quality", "invalid_value"},
      {R"({"prompt":"a","evil":1})", 400, "evil", "unknown_parameter"},
      {R"({"n":1})", 400, "prompt", "missing_required_parameter"},
      {R"({"prompt":"a","model":"gpt-image-1"})", 404, "model", "model_not_found"},
      {"{", 400, nullptr, nullptr},
  };
  for (const Case& c : cases) {
    HttpResult r = Images(c.body);
    ExpectStatus(r, c.status, "openai:ErrorResponse", c.body);
    Json e = Json::parse(r.body)["error"];
    EXPECT_EQ(e["type"], "invalid_request_error") << c.body;
    EXPECT_EQ(e["param"], c.param ? Json(c.param) : Json(nullptr)) << c.body;
    EXPECT_EQ(e["code"], c.code ? Json(c.code) : Json(nullptr)) << c.body;
  }
  // The message names the field, the value and what is supported.
  Json webp = Json::parse(Images(R"({"prompt":"a","output_format":"webp"})").body)["error"];
  EXPECT_NE(webp["message"].get<std::string>().find("\"webp\""), std::string::npos);
  EXPECT_NE(webp["message"].get<std::string>().find("\"png\""), std::string::npos);
  Json size = Json::parse(Images(R"({"prompt":"a","size":"0x0"})").body)["error"];
  EXPECT_NE(size["message"].get<std::string>().find("256..2048"), std::string::npos) << size;
  ExpectStatus(Request(port_, "GET", "/v1/images/generations"), 405, "openai:ErrorResponse",
               "GET images");
  ExpectStatus(Request(port_, "GET", "/v1/nothing"), 404, "openai:ErrorResponse",
               "unknown /v1 route");
  HttpResult big =
      RawRequest(port_, "POST /v1/images/generations HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n");
  ExpectStatus(big, 413, "openai:ErrorResponse", "413 on /v1");
  // Elsewhere the documented plain shape.
  Json plain = Json::parse(Request(port_, "POST", "/healthz", "{}").body);
  EXPECT_EQ(plain["error"]["code"], "METHOD_NOT_ALLOWED");
  Validate();
}

TEST_F(ServerConformanceTest, PythonHttpClientStillSendingReadsThe413) {
  // http.client writes the whole 12 MB body before reading; the server answers 413 after the
  // header and keeps reading (lingering close) so the answer is not lost to a reset.
  const std::string script = R"(
import http.client, json, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=60)
c.request("POST", "/v1/images/generations", body=b"x" * (12 << 20),
          headers={"Content-Type": "application/json"})
r = c.getresponse()
print(json.dumps({"status": r.status, "body": json.loads(r.read())}))
)";
  TempDir d;
  WriteFile(d / "send.py", script);
  for (int i = 0; i < 3; ++i) {
    ProcessResult p = RunProcess({SystemPython(), d / "send.py", std::to_string(port_)});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    Json j = Json::parse(p.out);
    EXPECT_EQ(j["status"], 413);
    Expect("openai:ErrorResponse", "413 to http.client", j["body"].dump());
  }
  EXPECT_EQ(Request(port_, "GET", "/healthz").status, 200);
  Validate();
}

}  // namespace
}  // namespace tg::testing
