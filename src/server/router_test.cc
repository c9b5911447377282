#include "server/router.h"

#include <gtest/gtest.h>

#include <ostream>

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

// What `t` answers for a method and path: the found route's body (its name and captures), or
// "none"; the access the match carries.
struct Answer {
  std::string body;
  Access access;
  bool operator==(const Answer&) const = default;
};
void PrintTo(const Answer& a, std::ostream* os) {
  *os << a.body << " (access " << static_cast<int>(a.access) << ")";
}

Answer Ask(const RouteTable& t, const std::string& method, const std::string& path) {
  RouteTable::Match m = t.Find(method, path);
  return {m.route == nullptr ? "none" : CallRoute(m, path), m.access};
}

TEST(RouteTableTest, MatchesMethodAndPatternAndCapturesSegments) {
  RouteTable t = Table();
  EXPECT_EQ(Ask(t, "GET", "/v2/models/mm"), (Answer{"meta:mm:", Access::kWork}));
  EXPECT_EQ(Ask(t, "GET", "/v2/models/mm/versions/1"), (Answer{"vmeta:mm:1", Access::kWork}));
  EXPECT_EQ(Ask(t, "POST", "/v2/models/sd15/infer"), (Answer{"infer:sd15:", Access::kWork}));
  // HEAD is answered by the GET route.
  EXPECT_EQ(Ask(t, "HEAD", "/healthz"), (Answer{"live::", Access::kPublic}));
}

// The first route added that takes the method and path wins, a literal one as any other: a
// pattern added before a literal route of the same path keeps it, and HEAD finds a literal GET.
TEST(RouteTableTest, TheFirstMatchingRouteWinsLiteralOrPattern) {
  RouteTable t;
  t.Add("GET", "/v1/models/{id}", Access::kToken, Named("get"));
  t.Add("GET", "/v1/models/list", Access::kPublic, Named("list"));
  t.Add("GET", "/v1/models", Access::kToken, Named("models"));
  t.Add("POST", "/v1/models", Access::kWork, Named("post"));
  EXPECT_EQ(Ask(t, "GET", "/v1/models/list"), (Answer{"get::", Access::kToken}));
  EXPECT_EQ(Ask(t, "HEAD", "/v1/models"), (Answer{"models::", Access::kToken}));
  EXPECT_EQ(Ask(t, "POST", "/v1/models"), (Answer{"post::", Access::kWork}));
  RouteTable::Match m = t.Find("DELETE", "/v1/models");
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
