#include "common/status.h"

#include <gtest/gtest.h>

namespace tg::common {
namespace {

Result<int> Half(int v) {
  if (v % 2 != 0) return Status::InvalidArg("odd value " + std::to_string(v));
  return v / 2;
}

Status UseHalf(int v, int* out) {
  TG_ASSIGN_OR_RETURN(*out, Half(v));
  return Status::Ok();
}

TEST(StatusTest, OkAndErrors) {
  EXPECT_TRUE(Status::Ok().ok());
  Status s = Status::NotFound("libcuda.so.1");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NOT_FOUND: libcuda.so.1");
  EXPECT_EQ(s.WithPrefix("probe").message(), "probe: libcuda.so.1");
}

TEST(StatusTest, ResultPropagation) {
  int out = 0;
  EXPECT_TRUE(UseHalf(8, &out).ok());
  EXPECT_EQ(out, 4);
  Status s = UseHalf(7, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArg);
  EXPECT_EQ(s.message(), "odd value 7");
}

TEST(StatusTest, HttpAndExitMappings) {
  EXPECT_EQ(HttpStatusFromStatus(Status::Ok()), 200);
  EXPECT_EQ(HttpStatusFromStatus(Status::InvalidArg("x")), 400);
  EXPECT_EQ(HttpStatusFromStatus(Status::NotFound("x")), 404);
  EXPECT_EQ(HttpStatusFromStatus(Status::Unavailable("x")), 503);
  EXPECT_EQ(HttpStatusFromStatus(Status::Unsupported("x")), 501);
  EXPECT_EQ(HttpStatusFromStatus(Status::Internal("x")), 500);
  EXPECT_EQ(ExitCodeFromStatus(Status::InvalidArg("x")), kExitUsage);
  EXPECT_EQ(ExitCodeFromStatus(Status::Unavailable("x")), kExitIntegrity);
  EXPECT_EQ(ExitCodeFromStatus(Status::FailedPrecondition("x")), kExitDrift);
  EXPECT_EQ(ExitCodeFromStatus(Status::Internal("x")), kExitInternal);
}

}  // namespace
}  // namespace tg::common
