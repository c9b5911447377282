#include "server/api_errors.h"

#include <gtest/gtest.h>

#include "common/config.h"

namespace tg::server {
namespace {

using common::Json;
using common::Status;

Json Body(const HttpResponse& r) { return Json::parse(r.body); }

TEST(ApiErrorsTest, PathsChooseTheApi) {
  EXPECT_EQ(ApiForPath("/v1/images/generations"), Api::kOpenAi);
  EXPECT_EQ(ApiForPath("/v1"), Api::kOpenAi);
  EXPECT_EQ(ApiForPath("/v2"), Api::kOip);
  EXPECT_EQ(ApiForPath("/v2/models/m/infer"), Api::kOip);
  EXPECT_EQ(ApiForPath("/v20"), Api::kPlain);
  EXPECT_EQ(ApiForPath("/healthz"), Api::kPlain);
}

TEST(ApiErrorsTest, OneMappingToHttp) {
  EXPECT_EQ(HttpStatusOf(ApiError::From(Status::InvalidArg("x"))), 400);
  EXPECT_EQ(HttpStatusOf(ApiError::From(Status::NotFound("x"))), 404);
  EXPECT_EQ(HttpStatusOf(ApiError::From(Status::Unavailable("x"))), 503);
  EXPECT_EQ(HttpStatusOf(ApiError::From(Status::Unsupported("x"))), 501);
  EXPECT_EQ(HttpStatusOf(ApiError::From(Status::Internal("x"))), 500);
  EXPECT_EQ(HttpStatusOf(ApiError::Of(ErrorKind::kUnauthenticated, "x")), 401);
  EXPECT_EQ(HttpStatusOf(ApiError::MethodNotAllowed("GET")), 405);
  EXPECT_EQ(HttpStatusOf(ApiError::Of(ErrorKind::kPayloadTooLarge, "x")), 413);
  EXPECT_EQ(HttpStatusOf(ApiError::Of(ErrorKind::kQueueFull, "x")), 429);
  EXPECT_EQ(HttpStatusOf(ApiError::Of(ErrorKind::kHeaderTooLarge, "x")), 431);
  EXPECT_EQ(HttpStatusOf(ApiError::Of(ErrorKind::kDeadline, "x")), 504);
}

TEST(ApiErrorsTest, AStatusIsAnsweredByTheSharedMappingUnchanged) {
  for (const Status& s :
       {Status::InvalidArg("x"), Status::NotFound("x"), Status::Unavailable("x"),
        Status::Unsupported("x"), Status::FailedPrecondition("x"), Status::Internal("x")}) {
    EXPECT_EQ(HttpStatusOf(ApiError::From(s)), common::HttpStatusFromStatus(s))
        << common::StatusCodeName(s.code());
    EXPECT_EQ(ErrorResponse(Api::kOip, ApiError::From(s)).status, common::HttpStatusFromStatus(s));
  }
}

TEST(ApiErrorsTest, ARequestAskingForWhatIsNotImplementedIsTheRequestsFault) {
  const Status refused = RequestFault(Status::Unsupported("scheduler 'x': not implemented"));
  EXPECT_EQ(refused.code(), common::StatusCode::kInvalidArg);
  EXPECT_EQ(refused.message(), "scheduler 'x': not implemented");
  EXPECT_EQ(HttpStatusOf(ApiError::From(refused)), 400);
  for (const Status& s : {Status::Ok(), Status::NotFound("x"), Status::Unavailable("x"),
                          Status::FailedPrecondition("x"), Status::Internal("x")}) {
    EXPECT_EQ(RequestFault(s).code(), s.code()) << common::StatusCodeName(s.code());
  }
}

TEST(ApiErrorsTest, EachApiHasItsShape) {
  const ApiError bad = ApiError::From(Status::InvalidArg("size is wrong"), "size", "invalid_value");
  Json o = Body(ErrorResponse(Api::kOpenAi, bad));
  EXPECT_EQ(o, Json::parse(R"({"error":{"message":"size is wrong","type":"invalid_request_error",
                                       "param":"size","code":"invalid_value"}})"));
  Json k = Body(ErrorResponse(Api::kOip, bad));
  EXPECT_EQ(k, Json::parse(R"({"error":"size is wrong"})"));
  Json p = Body(ErrorResponse(Api::kPlain, bad));
  EXPECT_EQ(p, Json::parse(R"({"error":{"code":"INVALID_ARG","message":"size is wrong"}})"));
  // Throttling and server faults as the OpenAI API types them; null param and code.
  HttpResponse q = ErrorResponse(Api::kOpenAi, ApiError::Of(ErrorKind::kQueueFull, "full"));
  EXPECT_EQ(Body(q)["error"]["type"], "requests");
  EXPECT_EQ(Body(q)["error"]["code"], "rate_limit_exceeded");
  EXPECT_TRUE(Body(q)["error"]["param"].is_null());
  ASSERT_EQ(q.headers.size(), 1u);
  EXPECT_EQ(q.headers[0].first, "Retry-After");
  Json i = Body(ErrorResponse(Api::kOpenAi, ApiError::From(Status::Internal("bug"))));
  EXPECT_EQ(i["error"]["type"], "server_error");
  EXPECT_TRUE(i["error"]["code"].is_null());
  HttpResponse m = ErrorResponse(Api::kPlain, ApiError::MethodNotAllowed("POST"));
  EXPECT_EQ(Body(m)["error"]["code"], "METHOD_NOT_ALLOWED");
  ASSERT_EQ(m.headers.size(), 1u);
  EXPECT_EQ(m.headers[0], (std::pair<std::string, std::string>{"Allow", "POST"}));
}

TEST(ApiErrorsTest, TransportErrorsFollowTheTarget) {
  HttpResponse r =
      TransportErrorResponse(ErrorKind::kPayloadTooLarge, "/v2/models/m/infer?x=1", "too big");
  EXPECT_EQ(r.status, 413);
  EXPECT_TRUE(r.close);
  EXPECT_EQ(Body(r), Json::parse(R"({"error":"too big"})"));
  EXPECT_EQ(Body(TransportErrorResponse(ErrorKind::kMalformedHttp, "", "bad"))["error"]["code"],
            "INVALID_ARG");
}

}  // namespace
}  // namespace tg::server
