// `truegreen serve` start-up gates, exit codes, readiness, background canary, scheduling limits
// (429, 504), SIGTERM drain, bearer token and connection cap. Each test starts its own server.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/server_harness.h"

namespace tg::testing {
namespace {

using Json = nlohmann::json;

class ServerLifecycleTest : public ::testing::Test {
 protected:
  // The toy pipeline (tools/sd_toy.py): these tests need jobs the server files in its large lane
  // (1024x1024, 150 steps) that finish in about a second; on the real-architecture UNet such a
  // job costs minutes of CPU and gigabytes of attention scores.
  void SetUp() override {
    MakeRepository(repo_ / "models", "max_batch: 4\nbatch_delay_ms: 20\nwarmup:\n  - {x: [2, 8]}\n",
                   "sd15-toy");
  }
  std::string Models() const { return repo_ / "models"; }
  static HttpResult Generate(int port, int steps, const std::string& size = "256x256") {
    return Request(
        port, "POST", "/v1/images/generations",
        R"({"prompt":"a cat","size":")" + size + R"(","steps":)" + std::to_string(steps) + "}");
  }
  TempDir repo_;
};

bool HasGpuDevice() { return std::filesystem::exists("/dev/nvidiactl"); }

TEST_F(ServerLifecycleTest, ProductionWithoutGpuExits3NamingTheCause) {
  if (HasGpuDevice()) GTEST_SKIP() << "this node has NVIDIA devices";
  ServerProcess s({}, {"--models", Models()});
  EXPECT_EQ(s.Wait(), 3) << s.Log();
  const std::string log = s.Log();
  EXPECT_NE(log.find("gate admit: FAILED"), std::string::npos) << log;
  EXPECT_NE(log.find("NOT ACCELERATED"), std::string::npos) << log;
  EXPECT_NE(log.find("/dev/nvidia"), std::string::npos) << log;
}

TEST_F(ServerLifecycleTest, JsonSummaryOnStdoutNamesTheFailedGate) {
  if (HasGpuDevice()) GTEST_SKIP() << "this node has NVIDIA devices";
  ProcessResult r = RunTruegreen({"--json", "serve", "--models", Models(), "--port", "0"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  Json j = Json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["exit_code"], 3);
  EXPECT_FALSE(j["ok"].get<bool>());
  // A failed gate is an error: the CLI's one error object, the summary beside it.
  EXPECT_EQ(j["error"]["code"], "UNAVAILABLE") << r.out;
  EXPECT_EQ(j["error"]["exit_code"], 3) << r.out;
  EXPECT_FALSE(j["error"]["message"].get<std::string>().empty());
  EXPECT_EQ(j["gates"][0]["name"], "admit");
  EXPECT_EQ(j["gates"][0]["status"], "failed");
  EXPECT_EQ(j["gates"][1]["status"], "pending");
  // The one server state: a failed gate is not_ready, with the gate's reason.
  EXPECT_EQ(j["state"], "not_ready") << r.out;
  EXPECT_EQ(j["reason"].get<std::string>().rfind("gate admit failed: ", 0), 0u) << r.out;
}

TEST_F(ServerLifecycleTest, ExitOnFailFalseStaysUpAnswering503WithTheReason) {
  if (HasGpuDevice()) GTEST_SKIP() << "this node has NVIDIA devices";
  ServerProcess s({}, {"--models", Models()}, {{"TRUEGREEN_EXIT_ON_FAIL", "false"}});
  const int port = s.WaitPort();
  ASSERT_GT(port, 0) << s.Log();
  HttpResult r;
  for (int i = 0; i < 200; ++i) {
    r = Request(port, "GET", "/readyz");
    if (r.body.find("failed") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(r.status, 503);
  Json j = Json::parse(r.body);
  EXPECT_NE(j["reason"].get<std::string>().find("gate admit failed: NOT ACCELERATED"),
            std::string::npos)
      << r.body;
  EXPECT_EQ(Request(port, "GET", "/healthz").status, 200);
  // A refused node still shows what admission measured and decided (server::NodeAdmission).
  HttpResult caps = Request(port, "GET", "/v1/capabilities");
  ASSERT_EQ(caps.status, 200) << caps.body;
  Json c = Json::parse(caps.body);
  EXPECT_EQ(c["verdict"], "NOT ACCELERATED") << caps.body;
  EXPECT_TRUE(c["snapshot"].is_object() && c["snapshot"].contains("nvml")) << caps.body;
  EXPECT_TRUE(c["admission"].is_object()) << caps.body;
  EXPECT_EQ(Request(port, "GET", "/v2/health/ready").status, 503);
  EXPECT_EQ(Generate(port, 2).status, 503);
  EXPECT_FALSE(s.Exited());
  s.Signal(SIGTERM);
  EXPECT_EQ(s.Wait(), 0) << s.Log();
}

// Each stderr line of a serve run under --log-format json is one JSON object: the server's own
// lines {"ts","level","msg"} (every gate, ready, draining, stopped), the access log's request lines
// {"ts","id","method","path","status",...}. Returns how many of the server's own lines there were.
int ExpectJsonServeLog(const std::string& log) {
  int own = 0;
  std::size_t start = 0;
  while (start < log.size()) {
    std::size_t nl = log.find('\n', start);
    if (nl == std::string::npos) nl = log.size();
    const std::string line = log.substr(start, nl - start);
    start = nl + 1;
    Json j = Json::parse(line, nullptr, false);
    EXPECT_TRUE(j.is_object()) << "not a JSON object: " << line;
    if (!j.is_object()) continue;
    const bool server_line = j.contains("level") && j.contains("msg");
    EXPECT_TRUE(server_line || (j.contains("path") && j.contains("status"))) << line;
    if (server_line && j["msg"].get<std::string>().starts_with("truegreen serve: ")) ++own;
  }
  return own;
}

TEST_F(ServerLifecycleTest, LogFormatJsonMakesEveryServeStderrLineJson) {
  ServerProcess s({"--log-format", "json", "--policy", "dev"}, {"--models", Models()});
  ASSERT_GT(s.WaitPort(), 0) << s.Log();
  ASSERT_TRUE(s.WaitReady()) << s.Log();
  EXPECT_EQ(Generate(s.port(), 1).status, 200);
  s.Signal(SIGTERM);
  EXPECT_EQ(s.Wait(), 0) << s.Log();
  const std::string log = s.Log();
  // listening, 4 gates running + passed, warm-up, ready, received SIGTERM, draining, stopped.
  EXPECT_GE(ExpectJsonServeLog(log), 14) << log;
  for (const char* msg : {"truegreen serve: gate canary: passed in ", "truegreen serve: ready",
                          "truegreen serve: draining", "truegreen serve: stopped"}) {
    EXPECT_NE(log.find(std::string("\"msg\":\"") + msg), std::string::npos) << msg << "\n" << log;
  }
  EXPECT_NE(log.find("\"path\":\"/v1/images/generations\""), std::string::npos) << log;
  if (HasGpuDevice()) return;
  // A failed gate's line is an error line; the run exits with the gate's code.
  ServerProcess refused({"--log-format", "json"}, {"--models", Models()});
  EXPECT_EQ(refused.Wait(), 3) << refused.Log();
  EXPECT_GE(ExpectJsonServeLog(refused.Log()), 3) << refused.Log();
  EXPECT_NE(refused.Log().find("\"level\":\"error\",\"msg\":\"truegreen serve: gate admit: FAILED"),
            std::string::npos)
      << refused.Log();
}

TEST_F(ServerLifecycleTest, ImpossibleCanaryWindowExits5) {
  ServerProcess s({"--policy", "dev"}, {"--models", Models(), "--canary-p95-ms", "0.001"});
  EXPECT_EQ(s.Wait(), 5) << s.Log();
  EXPECT_NE(s.Log().find("is above the ceiling 0.00 ms"), std::string::npos) << s.Log();
}

TEST_F(ServerLifecycleTest, BadModelRepositoryExits2) {
  ServerProcess missing({"--policy", "dev"}, {}, {{"TRUEGREEN_MODELS", repo_ / "nope"}});
  EXPECT_EQ(missing.Wait(), 2);
  EXPECT_NE(missing.Log().find(repo_ / "nope"), std::string::npos) << missing.Log();
  WriteFile(repo_ / "models/mm/config.yaml", "max_batch: 2\nbatch_dleay_ms: 3\n");
  ServerProcess typo({"--policy", "dev"}, {"--models", Models()});
  EXPECT_EQ(typo.Wait(), 2);
  EXPECT_NE(typo.Log().find("config.yaml:2"), std::string::npos) << typo.Log();
  EXPECT_NE(typo.Log().find("batch_dleay_ms"), std::string::npos) << typo.Log();
}

// The admit gate keeps the refusing step's code: a matrix that cannot be read is a
// configuration error (INVALID_ARG, exit 2), not "no GPU path" (3).
TEST_F(ServerLifecycleTest, UnreadableMatrixAtTheAdmitGateExits2) {
  WriteFile(repo_ / "matrix.yaml", "matrix: [\n");
  ServerProcess s({"--policy", "dev"}, {"--models", Models(), "--matrix", repo_ / "matrix.yaml"});
  EXPECT_EQ(s.Wait(), 2) << s.Log();
  EXPECT_NE(s.Log().find("gate admit: FAILED"), std::string::npos) << s.Log();
  EXPECT_NE(s.Log().find("matrix.yaml"), std::string::npos) << s.Log();
}

TEST_F(ServerLifecycleTest, PortInUseExits2) {
  int port = 0;
  const int fd = ListenLoopback(&port, 1);
  ASSERT_GE(fd, 0);
  ProcessResult r = RunTruegreen(
      {"--policy", "dev", "serve", "--models", Models(), "--port", std::to_string(port)});
  close(fd);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cannot listen"), std::string::npos) << r.err;
}

TEST_F(ServerLifecycleTest, ReadyzIs503UntilWarmupAndCanaryPass) {
  ServerProcess s({"--policy", "dev"}, {"--models", Models()});
  const int port = s.WaitPort();
  ASSERT_GT(port, 0) << s.Log();
  std::vector<std::string> pending_reasons;
  bool ready = false;
  bool inference_refused = false;
  for (int i = 0; i < 2400 && !ready; ++i) {
    HttpResult r = Request(port, "GET", "/readyz");
    Json j = Json::parse(r.body, nullptr, false);
    if (r.status == 200) {
      ready = true;
      for (const auto& g : j["gates"]) EXPECT_EQ(g["status"], "passed") << r.body;
      break;
    }
    ASSERT_EQ(r.status, 503) << r.body;
    pending_reasons.push_back(j["reason"]);
    if (!inference_refused) inference_refused = Generate(port, 2).status == 503;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(ready) << s.Log();
  ASSERT_FALSE(pending_reasons.empty());
  EXPECT_EQ(pending_reasons.front().rfind("gate ", 0), 0u) << pending_reasons.front();
  EXPECT_TRUE(inference_refused);
  // The log shows each gate with its duration, warm-up and canary before "ready".
  const std::string log = s.Log();
  const auto warm = log.find("gate warmup: passed in ");
  const auto canary = log.find("gate canary: passed in ");
  const auto rdy = log.find("truegreen serve: ready");
  ASSERT_NE(warm, std::string::npos) << log;
  ASSERT_NE(canary, std::string::npos) << log;
  EXPECT_LT(warm, canary);
  EXPECT_LT(canary, rdy);
}

TEST_F(ServerLifecycleTest, BackgroundCanaryFlipsReadinessAndBack) {
  const std::string fault = repo_ / "fault";
  ServerProcess s({"--policy", "dev"}, {"--models", Models(), "--canary-interval-s", "1",
                                        "--canary-steps", "1", "--fault-file", fault});
  ASSERT_GT(s.WaitPort(), 0);
  ASSERT_TRUE(s.WaitReady()) << s.Log();
  WriteFile(fault, "canary-fail\n");
  auto wait_for = [&](int status) {
    for (int i = 0; i < 300; ++i) {
      HttpResult r = Request(s.port(), "GET", "/readyz");
      if (r.status == status) return r;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return HttpResult{};
  };
  HttpResult down = wait_for(503);
  ASSERT_EQ(down.status, 503) << s.Log();
  EXPECT_NE(down.body.find("background canary failed: injected fault"), std::string::npos)
      << down.body;
  std::string metrics = Request(s.port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("truegreen_canary_runs_total{outcome=\"fail\"}"), std::string::npos);
  EXPECT_NE(metrics.find("truegreen_ready 0"), std::string::npos);
  EXPECT_NE(metrics.find("truegreen_server_state{state=\"not_ready\"} 1"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("truegreen_server_state{state=\"ready\"} 0"), std::string::npos);
  std::filesystem::remove(fault);
  EXPECT_EQ(wait_for(200).status, 200) << s.Log();
  // Latency drift past the tolerance flips it too.
  WriteFile(fault, "canary-slow\n");
  HttpResult slow = wait_for(503);
  EXPECT_NE(slow.body.find("latency drift"), std::string::npos) << slow.body;
  std::filesystem::remove(fault);
  EXPECT_EQ(wait_for(200).status, 200);
}

TEST_F(ServerLifecycleTest, FloodGets429WithRetryAfter) {
  ServerProcess s({"--policy", "dev"},
                  {"--models", Models(), "--queue-size", "1", "--concurrency", "1"});
  ASSERT_GT(s.WaitPort(), 0);
  ASSERT_TRUE(s.WaitReady()) << s.Log();
  std::vector<HttpResult> rs(10);
  std::vector<std::thread> ts;
  for (int i = 0; i < 10; ++i) ts.emplace_back([&, i] { rs[i] = Generate(s.port(), 10); });
  for (auto& t : ts) t.join();
  int ok = 0, limited = 0;
  for (const auto& r : rs) {
    if (r.status == 200) ++ok;
    if (r.status == 429) {
      ++limited;
      EXPECT_EQ(r.Header("retry-after"), "1");
      EXPECT_NE(r.body.find("is full"), std::string::npos);
    }
  }
  EXPECT_GE(ok, 1);
  EXPECT_GE(limited, 1);
  EXPECT_EQ(ok + limited, 10);
  EXPECT_FALSE(s.Exited());
}

TEST_F(ServerLifecycleTest, DeadlineGets504AndTheGenerationIsCancelled) {
  ServerProcess s({"--policy", "dev"}, {"--models", Models(), "--deadline-ms", "200"});
  ASSERT_GT(s.WaitPort(), 0);
  ASSERT_TRUE(s.WaitReady()) << s.Log();
  const auto t0 = std::chrono::steady_clock::now();
  // 150 steps at the largest size take well over a second even on a fast CPU (the tiny UNet runs
  // about 2 ms per 512² step here), far past the 200 ms deadline.
  HttpResult r = Generate(s.port(), 150, "1024x1024");
  EXPECT_EQ(r.status, 504) << r.body;
  EXPECT_NE(r.body.find("cancelled"), std::string::npos) << r.body;
  // Cancelled between steps: far sooner than 150 steps would take.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  EXPECT_EQ(Generate(s.port(), 1).status, 200);
}

TEST_F(ServerLifecycleTest, SigtermDrainsEveryAcceptedRequest) {
  ServerProcess s({"--policy", "dev"}, {"--models", Models(), "--concurrency", "1"});
  ASSERT_GT(s.WaitPort(), 0);
  ASSERT_TRUE(s.WaitReady()) << s.Log();
  constexpr int kN = 6;
  std::vector<HttpResult> rs(kN);
  std::vector<std::thread> ts;
  // Each request long enough (100 steps at 512²: a few hundred ms even on a fast CPU, where the
  // tiny UNet runs about 2 ms per step) that all of them are in flight before the first finishes.
  for (int i = 0; i < kN; ++i) {
    ts.emplace_back([&, i] { rs[i] = Generate(s.port(), 100, "512x512"); });
  }
  // Wait until every request is accepted (the /metrics request itself is one more in flight).
  // Generous: on a loaded 2-core CI machine the six connections can take seconds to arrive.
  bool accepted = false;
  for (int i = 0; i < 3000 && !accepted; ++i) {
    accepted = Request(s.port(), "GET", "/metrics")
                   .body.find("truegreen_http_requests_in_flight " + std::to_string(kN + 1)) !=
               std::string::npos;
    if (!accepted) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(accepted);  // not ASSERT: the client threads must be joined either way
  s.Signal(SIGTERM);
  for (auto& t : ts) t.join();
  if (!accepted) return;
  for (const auto& r : rs) EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(s.Wait(), 0) << s.Log();
  const std::string log = s.Log();
  EXPECT_NE(log.find("draining"), std::string::npos);
  // The JSON-lines access log (stderr by default) has one line per answered image request.
  int logged = 0;
  for (std::size_t p = 0;
       (p = log.find("\"path\":\"/v1/images/generations\"", p)) != std::string::npos; ++p) {
    ++logged;
  }
  EXPECT_EQ(logged, kN);
}

TEST_F(ServerLifecycleTest, LargeJobDoesNotHoldSmallOnesBehindIt) {
  ServerProcess s({"--policy", "dev"}, {"--models", Models(), "--concurrency", "1"});
  ASSERT_GT(s.WaitPort(), 0);
  ASSERT_TRUE(s.WaitReady()) << s.Log();
  using Clock = std::chrono::steady_clock;
  Clock::time_point large_done, small_done;
  HttpResult large, small;
  std::thread t([&] {
    // The large lane, and long enough (over a second even on a fast CPU: the tiny UNet runs about
    // 2 ms per 512² step) that the small job, sent once it runs, must overtake it.
    large = Generate(s.port(), 150, "1024x1024");
    large_done = Clock::now();
  });
  // The small job goes out only once the large one is running, as /metrics shows; otherwise it
  // would not be behind it and the test would prove nothing.
  bool large_running = false;
  for (int i = 0; i < 3000 && !large_running; ++i) {
    large_running =
        Request(s.port(), "GET", "/metrics")
            .body.find("truegreen_in_flight{model=\"sd15\",lane=\"large\"} 1") != std::string::npos;
    if (!large_running) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(large_running) << s.Log();  // not ASSERT: the client thread must be joined
  small = Generate(s.port(), 2);
  small_done = Clock::now();
  t.join();
  EXPECT_EQ(large.status, 200) << large.body;
  EXPECT_EQ(small.status, 200) << small.body;
  EXPECT_LT(small_done, large_done);
}

TEST_F(ServerLifecycleTest, BearerTokenGuardsEverythingButHealth) {
  WriteFile(repo_ / "token", "s3cret\n");
  ServerProcess s({"--policy", "dev"}, {"--models", Models(), "--token-file", repo_ / "token"});
  ASSERT_GT(s.WaitPort(), 0);
  ASSERT_TRUE(s.WaitReady()) << s.Log();
  EXPECT_EQ(Request(s.port(), "GET", "/healthz").status, 200);
  EXPECT_EQ(Request(s.port(), "GET", "/v2/health/live").status, 200);
  HttpResult none = Request(s.port(), "GET", "/metrics");
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.Header("www-authenticate"), "Bearer");
  EXPECT_EQ(Request(s.port(), "GET", "/metrics", "", {{"Authorization", "Bearer s3cre"}}).status,
            401);
  EXPECT_EQ(
      Request(s.port(), "GET", "/v2/models/mm", "", {{"Authorization", "Bearer s3cret"}}).status,
      200);
  HttpResult refused = Generate(s.port(), 1);
  EXPECT_EQ(refused.status, 401);
  EXPECT_EQ(Json::parse(refused.body)["error"]["code"], "invalid_api_key") << refused.body;
  // A response_format "url" image sits behind the same token.
  HttpResult made = Request(s.port(), "POST", "/v1/images/generations",
                            R"({"prompt":"a cat","size":"256x256","steps":1})",
                            {{"Authorization", "Bearer s3cret"}});
  ASSERT_EQ(made.status, 200) << made.body;
  const std::string url = Json::parse(made.body)["data"][0]["url"];
  const std::string path = url.substr(url.find('/', 7));
  EXPECT_EQ(Request(s.port(), "GET", path).status, 401);
  HttpResult img = Request(s.port(), "GET", path, "", {{"Authorization", "Bearer s3cret"}});
  EXPECT_EQ(img.status, 200);
  EXPECT_EQ(img.Header("content-type"), "image/png");
}

TEST_F(ServerLifecycleTest, ConnectionCapRefusesExtraConnections) {
  ServerProcess s({"--policy", "dev"}, {"--models", Models(), "--max-connections", "2"});
  ASSERT_GT(s.WaitPort(), 0);
  ASSERT_TRUE(s.WaitReady()) << s.Log();
  int a = Connect(s.port(), 10), b = Connect(s.port(), 10);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  // The server counts a connection once its accept ran: poll rather than sleep a fixed time, so a
  // loaded (or sanitized) server is given up to 10 s.
  HttpResult r;
  for (int i = 0; i < 200; ++i) {
    r = Request(s.port(), "GET", "/healthz");
    if (r.status == 503) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(r.body.find("connection limit"), std::string::npos);
  close(a);
  close(b);
  int after = 0;
  for (int i = 0; i < 200 && after != 200; ++i) {
    after = Request(s.port(), "GET", "/healthz").status;
    if (after != 200) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(after, 200);
}

}  // namespace
}  // namespace tg::testing
