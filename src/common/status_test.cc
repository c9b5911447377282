#include "common/status.h"

#include <gtest/gtest.h>

#include <iterator>

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

// Every code, its name, its HTTP status and its process exit code (README's table): one row each.
struct Mapping {
  StatusCode code;
  const char* name;
  int http;
  int exit_code;
};
constexpr Mapping kMappings[] = {
    {StatusCode::kOk, "OK", 200, kExitOk},
    {StatusCode::kInvalidArg, "INVALID_ARG", 400, kExitUsage},
    {StatusCode::kNotFound, "NOT_FOUND", 404, kExitUsage},
    {StatusCode::kUnavailable, "UNAVAILABLE", 503, kExitIntegrity},
    {StatusCode::kUnsupported, "UNSUPPORTED", 501, kExitIntegrity},
    {StatusCode::kFailedPrecondition, "FAILED_PRECONDITION", 503, kExitDrift},
    {StatusCode::kInternal, "INTERNAL", 500, kExitInternal},
};

TEST(StatusTest, EveryCodeHasANameAnHttpStatusAndAnExitCode) {
  for (const Mapping& m : kMappings) {
    const Status s = m.code == StatusCode::kOk ? Status::Ok() : Status(m.code, "x");
    EXPECT_EQ(StatusCodeName(m.code), m.name);
    EXPECT_EQ(HttpStatusFromStatus(s), m.http) << m.name;
    EXPECT_EQ(ExitCodeFromStatus(s), m.exit_code) << m.name;
  }
}

TEST(StatusTest, TheMappingTableCoversEveryCode) {
  // A new code must get a row above (and so a decided HTTP status and exit code).
  for (int c = 0; c <= static_cast<int>(kLastStatusCode); ++c) {
    bool found = false;
    for (const Mapping& m : kMappings) found = found || static_cast<int>(m.code) == c;
    EXPECT_TRUE(found) << "StatusCode " << c << " has no row in kMappings";
    EXPECT_NE(StatusCodeName(static_cast<StatusCode>(c)), "UNKNOWN") << c;
  }
  EXPECT_EQ(std::size(kMappings), static_cast<std::size_t>(kLastStatusCode) + 1);
}

TEST(StatusTest, OnlyFailedPreconditionMeansDrift) {
  for (const Mapping& m : kMappings) {
    EXPECT_EQ(m.exit_code == kExitDrift, m.code == StatusCode::kFailedPrecondition) << m.name;
  }
}

}  // namespace
}  // namespace tg::common
