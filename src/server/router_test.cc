#include "server/router.h"

#include <gtest/gtest.h>

namespace tg::server {
namespace {

using Access = RouteTable::Access;

RouteTable::Handler Named(const std::string& name) {
  return [name](Call& c) -> ApiResult<Reply> {
    HttpResponse r;
    r.body = name + ":" + c.Param("model") + ":" + c.Param("version");
    return Reply(std::move(r));
  };
}

RouteTable Table() {
  RouteTable t;
  t.Add("GET", "/healthz", Access::kPublic, Named("live"));
  t.Add("GET", "/v2/models/{model}", Access::kWork, Named("meta"));
  t.Add("POST", "/v2/models/{model}/infer", Access::kWork, Named("infer"));
  t.Add("GET", "/v2/models/{model}/versions/{version}", Access::kWork, Named("vmeta"));
  return t;
}

std::string CallRoute(const RouteTable::Match& m, const std::string& path) {
  HttpRequest req;
  Call c{req, path, std::make_shared<RequestCtx>(), nullptr, m.params};
  ApiResult<Reply> r = m.route->handler(c);
  return r.ok() ? r.value().response().body : "error";
}

TEST(RouteTableTest, MatchesMethodAndPatternAndCapturesSegments) {
  RouteTable t = Table();
  RouteTable::Match m = t.Find("GET", "/v2/models/mm");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.access, Access::kWork);
  EXPECT_EQ(CallRoute(m, "/v2/models/mm"), "meta:mm:");
  m = t.Find("GET", "/v2/models/mm/versions/1");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(CallRoute(m, ""), "vmeta:mm:1");
  m = t.Find("POST", "/v2/models/sd15/infer");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(CallRoute(m, ""), "infer:sd15:");
  // HEAD is answered by the GET route.
  ASSERT_NE(t.Find("HEAD", "/healthz").route, nullptr);
}

// The first route added that takes the method and path wins, a literal one as any other: a
// pattern added before a literal route of the same path keeps it, and HEAD finds a literal GET.
TEST(RouteTableTest, TheFirstMatchingRouteWinsLiteralOrPattern) {
  RouteTable t;
  t.Add("GET", "/v1/models/{id}", Access::kToken, Named("get"));
  t.Add("GET", "/v1/models/list", Access::kPublic, Named("list"));
  t.Add("GET", "/v1/models", Access::kToken, Named("models"));
  t.Add("POST", "/v1/models", Access::kWork, Named("post"));
  RouteTable::Match m = t.Find("GET", "/v1/models/list");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.access, Access::kToken);
  EXPECT_EQ(CallRoute(m, ""), "get::");
  m = t.Find("HEAD", "/v1/models");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(CallRoute(m, ""), "models::");
  m = t.Find("POST", "/v1/models");
  ASSERT_NE(m.route, nullptr);
  EXPECT_EQ(m.access, Access::kWork);
  m = t.Find("DELETE", "/v1/models");
  EXPECT_EQ(m.route, nullptr);
  EXPECT_EQ(m.allow, "GET, POST");
}

TEST(RouteTableTest, OtherMethodsAre405WithAllowAndUnknownPaths404) {
  RouteTable t = Table();
  RouteTable::Match m = t.Find("GET", "/v2/models/mm/infer");
  EXPECT_EQ(m.route, nullptr);
  EXPECT_EQ(m.allow, "POST");
  EXPECT_EQ(m.access, Access::kWork);
  m = t.Find("POST", "/healthz");
  EXPECT_EQ(m.route, nullptr);
  EXPECT_EQ(m.allow, "GET");
  EXPECT_EQ(m.access, Access::kPublic);  // a health path needs no token, even for its 405
  for (const char* path :
       {"/v2/models", "/v2/models/", "/v2/models/mm/infer/x", "/v3", "", "/v2/models//infer"}) {
    m = t.Find("GET", path);
    EXPECT_EQ(m.route, nullptr) << path;
    EXPECT_EQ(m.allow, "") << path;
    EXPECT_EQ(m.access, Access::kToken) << path;  // unknown paths are behind the token
  }
}

TEST(RouteTableTest, HandlerErrorsStayErrorsUntilTheErrorPathShapesThem) {
  RouteTable t;
  t.Add("GET", "/v1/models/{id}", Access::kToken, [](Call& c) -> ApiResult<Reply> {
    return ApiError::From(common::Status::NotFound("no model '" + c.Param("id") + "'"), "model",
                          "model_not_found");
  });
  RouteTable::Match m = t.Find("GET", "/v1/models/x");
  ASSERT_NE(m.route, nullptr);
  HttpRequest req;
  auto ctx = std::make_shared<RequestCtx>();
  ctx->path = "/v1/models/x";
  Call c{req, ctx->path, ctx, nullptr, m.params};
  ApiResult<Reply> r = m.route->handler(c);
  ASSERT_FALSE(r.ok());
  HttpResponse e = ErrorFor(*ctx, r.error());
  EXPECT_EQ(e.status, 404);
  EXPECT_NE(e.body.find("\"param\":\"model\""), std::string::npos) << e.body;
  EXPECT_NE(e.body.find("no model 'x'"), std::string::npos) << e.body;
  // An OK status is never an answer: it becomes a bug report (500).
  ApiResult<Reply> bug = common::Status::Ok();
  ASSERT_FALSE(bug.ok());
  EXPECT_EQ(ErrorFor(*ctx, bug.error()).status, 500);
}

}  // namespace
}  // namespace tg::server
