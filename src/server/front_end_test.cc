#include "server/front_end.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/file_util.h"

namespace tg::server {
namespace {

namespace fs = std::filesystem;

HttpRequest Get(const std::string& target,
                std::vector<std::pair<std::string, std::string>> h = {}) {
  HttpRequest r;
  r.method = "GET";
  r.target = target;
  r.headers = std::move(h);
  return r;
}

class FrontEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("front_end_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    config_.token = "s3cret";
    config_.access_log = (dir_ / "access.log").string();
    routes_.Add("GET", "/healthz", RouteTable::Access::kPublic,
                [](Call&) -> ApiResult<Reply> { return Reply(HttpResponse()); });
    routes_.Add("GET", "/metrics", RouteTable::Access::kToken,
                [](Call&) -> ApiResult<Reply> { return Reply(HttpResponse()); });
    routes_.Add("GET", "/v2/models/{name}/work", RouteTable::Access::kWork,
                [](Call& c) -> ApiResult<Reply> {
                  c.ctx->model = c.Param("name");
                  return Reply(HttpResponse());
                });
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Handle's answer to `req` (the front end answers these routes at once).
  HttpResponse Answer(FrontEnd& fe, HttpRequest req) {
    HttpResponse got;
    got.status = -1;
    fe.Handle(std::move(req), [&got](HttpResponse r) { got = std::move(r); });
    return got;
  }

  static std::string HeaderOf(const HttpResponse& r, const std::string& name) {
    for (const auto& [k, v] : r.headers) {
      if (k == name) return v;
    }
    return "";
  }

  fs::path dir_;
  ServeConfig config_;
  RouteTable routes_;
  Readiness readiness_{{"admit"}, nullptr};
  Metrics metrics_;
};

// The token, the request id, the drain refusal and the access log, through the one finish path.
TEST_F(FrontEndTest, ChecksTheTokenNamesTheRequestAndLogsEachAnswer) {
  std::vector<std::string> logged;
  FrontEnd fe(config_, routes_, readiness_, metrics_,
              [&logged](const std::string& l) { logged.push_back(l); });
  EXPECT_TRUE(logged.empty()) << "a regular file is a valid access log";

  EXPECT_EQ(Answer(fe, Get("/healthz")).status, 200) << "public: no token needed";
  EXPECT_EQ(Answer(fe, Get("/metrics")).status, 401);
  EXPECT_EQ(Answer(fe, Get("/metrics", {{"authorization", "Bearer wrong"}})).status, 401);
  HttpResponse ok = Answer(
      fe, Get("/metrics?x=1", {{"authorization", "Bearer s3cret"}, {"x-request-id", "abc-1"}}));
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(HeaderOf(ok, "X-Request-Id"), "abc-1");
  EXPECT_FALSE(ok.close);
  EXPECT_EQ(Answer(fe, Get("/nope", {{"authorization", "Bearer s3cret"}})).status, 404);

  const auto auth =
      std::vector<std::pair<std::string, std::string>>{{"authorization", "Bearer s3cret"}};
  EXPECT_EQ(Answer(fe, Get("/v2/models/m/work", auth)).status, 200);
  readiness_.SetDraining();
  HttpResponse refused = Answer(fe, Get("/v2/models/m/work", auth));
  EXPECT_EQ(refused.status, 503);
  EXPECT_TRUE(refused.close) << "a draining server closes each connection after its answer";
  EXPECT_NE(refused.body.find("draining"), std::string::npos) << refused.body;
  HttpResponse health = Answer(fe, Get("/healthz"));
  EXPECT_EQ(health.status, 200) << "health still answers while draining";
  EXPECT_FALSE(HeaderOf(health, "X-Request-Id").empty()) << "an id of ours when none was sent";
  EXPECT_EQ(fe.in_flight(), 0);

  auto text = common::ReadFileLimited(config_.access_log, 1 << 20);
  ASSERT_TRUE(text.ok()) << text.status().message();
  std::istringstream lines(*text);
  std::vector<common::Json> entries;
  for (std::string line; std::getline(lines, line);) {
    entries.push_back(common::Json::parse(line, nullptr, false));
    ASSERT_TRUE(entries.back().is_object()) << line;
  }
  ASSERT_EQ(entries.size(), 8u) << *text;
  EXPECT_EQ(entries[3]["id"], "abc-1");
  EXPECT_EQ(entries[3]["path"], "/metrics") << "the path without its query";
  EXPECT_EQ(entries[5]["model"], "m");
  EXPECT_EQ(entries[6]["status"], 503);
  EXPECT_EQ(entries[6]["outcome"], "error");

  metrics_.DeclareCounter("truegreen_http_requests_total", "responses by code");
  metrics_.DeclareGauge("truegreen_http_requests_in_flight", "accepted, not yet answered");
  fe.Export(metrics_);
  const std::string m = metrics_.Render();
  EXPECT_NE(m.find("truegreen_http_requests_total{code=\"401\"} 2"), std::string::npos) << m;
  EXPECT_NE(m.find("truegreen_http_requests_in_flight 0"), std::string::npos) << m;
}

// A FIFO (or any non-regular file) is no access log: the front end says so and logs nothing.
TEST_F(FrontEndTest, AnAccessLogThatIsNoRegularFileIsRefusedAndNamed) {
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  config_.access_log = fifo.string();
  std::vector<std::string> logged;
  FrontEnd fe(config_, routes_, readiness_, metrics_,
              [&logged](const std::string& l) { logged.push_back(l); });
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0], "--access-log " + fifo.string() + ": not a regular file");
  EXPECT_EQ(Answer(fe, Get("/healthz")).status, 200);

  AccessLog off("off");
  EXPECT_FALSE(off.on());
  EXPECT_TRUE(off.problem().empty());
}

}  // namespace
}  // namespace tg::server
