#include "common/outcome.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "tests/support/test_util.h"

namespace tg::common {
namespace {

const std::vector<Outcome> kAll = {Outcome::kOk,          Outcome::kNotAccelerated,
                                   Outcome::kDrift,       Outcome::kPerformanceFailed,
                                   Outcome::kAuditFailed, Outcome::kInterrupted};

// The expectations, written from the README's exit-code table, not from outcome.cc.
TEST(OutcomeTest, EachOutcomesExitCode) {
  EXPECT_EQ(ExitCodeFromOutcome(Outcome::kOk), 0);
  EXPECT_EQ(ExitCodeFromOutcome(Outcome::kNotAccelerated), 3);
  EXPECT_EQ(ExitCodeFromOutcome(Outcome::kDrift), 4);
  EXPECT_EQ(ExitCodeFromOutcome(Outcome::kPerformanceFailed), 5);
  EXPECT_EQ(ExitCodeFromOutcome(Outcome::kAuditFailed), 6);
  EXPECT_EQ(ExitCodeFromOutcome(Outcome::kInterrupted), 130);
}

// A result is never an error's code: 1 (a bug) and 2 (bad input) come only from a Status.
TEST(OutcomeTest, NoResultSharesAnErrorsExitCode) {
  std::set<int> codes;
  for (Outcome o : kAll) {
    const int code = ExitCodeFromOutcome(o);
    EXPECT_NE(code, ExitCodeFromStatus(Status::Internal("m"))) << OutcomeName(o);
    EXPECT_NE(code, ExitCodeFromStatus(Status::InvalidArg("m"))) << OutcomeName(o);
    EXPECT_TRUE(codes.insert(code).second) << "two outcomes exit " << code;
  }
}

// The README states each result's exit code: the table's rows 3-6 and the interrupted bench.
TEST(OutcomeTest, ExitCodesAreTheOnesTheReadmeStates) {
  const std::string readme = testing::ReadFile(testing::SourceDir() + "/README.md");
  for (Outcome o : kAll) {
    if (o == Outcome::kOk || o == Outcome::kInterrupted) continue;
    const std::string row = "\n| " + std::to_string(ExitCodeFromOutcome(o)) + " | ";
    EXPECT_NE(readme.find(row), std::string::npos) << "README has no exit-code row " << row;
  }
  EXPECT_NE(readme.find("exits " + std::to_string(ExitCodeFromOutcome(Outcome::kInterrupted))),
            std::string::npos);
}

TEST(OutcomeTest, SeverityOrder) {
  // Most severe first, as outcome.h states it.
  const std::vector<Outcome> order = {
      Outcome::kInterrupted, Outcome::kNotAccelerated,    Outcome::kDrift,
      Outcome::kAuditFailed, Outcome::kPerformanceFailed, Outcome::kOk};
  for (std::size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(WorseOutcome(order[i], order[i]), order[i]);
    for (std::size_t j = i + 1; j < order.size(); ++j) {
      EXPECT_EQ(WorseOutcome(order[i], order[j]), order[i])
          << OutcomeName(order[i]) << " vs " << OutcomeName(order[j]);
      EXPECT_EQ(WorseOutcome(order[j], order[i]), order[i])
          << OutcomeName(order[j]) << " vs " << OutcomeName(order[i]);
    }
  }
}

TEST(OutcomeTest, NamesAreDistinct) {
  std::set<std::string> seen;
  for (Outcome o : kAll) EXPECT_TRUE(seen.insert(std::string(OutcomeName(o))).second);
  EXPECT_EQ(OutcomeName(Outcome::kOk), "ok");
}

}  // namespace
}  // namespace tg::common
