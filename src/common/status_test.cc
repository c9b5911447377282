#include "common/status.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/support/test_util.h"

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

// Every code, from the first to kLastStatusCode: the properties below range over all of them, so
// a new code is covered without anyone adding a row.
std::vector<StatusCode> AllCodes() {
  std::vector<StatusCode> out;
  for (int c = 0; c <= static_cast<int>(kLastStatusCode); ++c) out.push_back(StatusCode(c));
  return out;
}

Status Of(StatusCode c) { return c == StatusCode::kOk ? Status::Ok() : Status(c, "m"); }

// The expectations, written from Triton's code set and RFC 9110, not from status.cc.
TEST(StatusTest, EachCodesHttpStatusAndExitCode) {
  EXPECT_EQ(HttpStatusFromStatus(Status::Ok()), 200);
  EXPECT_EQ(HttpStatusFromStatus(Status::InvalidArg("m")), 400);
  EXPECT_EQ(HttpStatusFromStatus(Status::NotFound("m")), 404);
  EXPECT_EQ(HttpStatusFromStatus(Status::Unavailable("m")), 503);
  EXPECT_EQ(HttpStatusFromStatus(Status::Unsupported("m")), 501);
  EXPECT_EQ(HttpStatusFromStatus(Status::FailedPrecondition("m")), 503);  // route around the node
  EXPECT_EQ(HttpStatusFromStatus(Status::Internal("m")), 500);
  EXPECT_EQ(ExitCodeFromStatus(Status::Ok()), 0);
  EXPECT_EQ(ExitCodeFromStatus(Status::InvalidArg("m")), 2);
  EXPECT_EQ(ExitCodeFromStatus(Status::NotFound("m")), 2);
  EXPECT_EQ(ExitCodeFromStatus(Status::Unavailable("m")), 3);
  EXPECT_EQ(ExitCodeFromStatus(Status::Unsupported("m")), 3);
  EXPECT_EQ(ExitCodeFromStatus(Status::FailedPrecondition("m")), 4);
  EXPECT_EQ(ExitCodeFromStatus(Status::Internal("m")), 1);
}

// The README's error-path paragraph states the exit code of every code; the mapping must agree
// with it, and it must name every code there is.
TEST(StatusTest, ExitCodesAreTheOnesTheReadmeStates) {
  const std::string readme = testing::ReadFile(testing::SourceDir() + "/README.md");
  const std::size_t at = readme.find("`exit_code` follows from it alone");
  ASSERT_NE(at, std::string::npos) << "README lost its exit-code paragraph";
  const std::string para = readme.substr(at, readme.find("\n\n", at) - at);
  // "`A`/`B` 2, `C` (why) 4": every backticked name up to the next number gets that number.
  const std::regex entry(R"(((?:`[A-Z_]+`/?)+)(?: \([^)]*\))? (\d))");
  const std::regex name_re("`([A-Z_]+)`");
  std::map<std::string, int> stated;
  for (auto it = std::sregex_iterator(para.begin(), para.end(), entry);
       it != std::sregex_iterator(); ++it) {
    const std::string names = (*it)[1];
    for (auto n = std::sregex_iterator(names.begin(), names.end(), name_re);
         n != std::sregex_iterator(); ++n) {
      stated[(*n)[1]] = std::stoi((*it)[2]);
    }
  }
  for (StatusCode c : AllCodes()) {
    if (c == StatusCode::kOk) continue;
    const std::string name(StatusCodeName(c));
    ASSERT_TRUE(stated.count(name)) << "README states no exit code for " << name << ":\n" << para;
    EXPECT_EQ(ExitCodeFromStatus(Of(c)), stated[name]) << name;
  }
}

TEST(StatusTest, OnlyFailedPreconditionMeansDrift) {
  for (StatusCode c : AllCodes()) {
    EXPECT_EQ(ExitCodeFromStatus(Of(c)) == kExitDrift, c == StatusCode::kFailedPrecondition)
        << StatusCodeName(c);
  }
}

// The two mappings tell the same story: the caller's fault is a 4xx and a usage error (exit 2),
// the node's or ours a 5xx and never exit 2, success 200 and 0.
TEST(StatusTest, HttpAndExitMappingsAgreeOnWhoseFaultItIs) {
  for (StatusCode c : AllCodes()) {
    const int http = HttpStatusFromStatus(Of(c));
    const int exit_code = ExitCodeFromStatus(Of(c));
    SCOPED_TRACE(std::string(StatusCodeName(c)));
    EXPECT_EQ(http == 200, exit_code == kExitOk);
    EXPECT_EQ(http >= 400 && http < 500, exit_code == kExitUsage);
    if (c != StatusCode::kOk) {
      EXPECT_TRUE(http >= 400 && http < 600) << http;
    }
    // Performance and audit failures are verdicts of their commands, never a Status's code.
    EXPECT_NE(exit_code, kExitPerformance);
    EXPECT_NE(exit_code, kExitAudit);
  }
}

TEST(StatusTest, NamesAreDistinctAndRoundTripThroughToString) {
  std::set<std::string> seen;
  for (StatusCode c : AllCodes()) {
    const std::string name(StatusCodeName(c));
    EXPECT_NE(name, "UNKNOWN");
    EXPECT_TRUE(seen.insert(name).second) << "two codes are called " << name;
    EXPECT_TRUE(std::all_of(name.begin(), name.end(), [](char ch) {
      return (ch >= 'A' && ch <= 'Z') || ch == '_';
    })) << name;
    if (c == StatusCode::kOk) continue;
    const Status s(c, "the message");
    EXPECT_EQ(s.ToString(), name + ": the message");
    EXPECT_EQ(s.WithPrefix("p").code(), c);
  }
  EXPECT_EQ(StatusCodeName(StatusCode(static_cast<int>(kLastStatusCode) + 1)), "UNKNOWN");
}

}  // namespace
}  // namespace tg::common
