#include "common/process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

namespace tg::common {
namespace {

using ::testing::HasSubstr;

const std::string kSh = "/bin/sh";

TEST(Process, CapturesOutputsAndExitCode) {
  ProcessResult r = RunProcess({kSh, "-c", "echo out; echo err >&2; exit 7"});
  ASSERT_TRUE(r.started) << r.error;
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(r.term_signal, 0);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_FALSE(r.timed_out);
}

TEST(Process, FeedsStdinAndSetsAndUnsetsEnvironment) {
  ProcessOptions o;
  o.stdin_data = std::string(300000, 'x');  // more than a pipe buffer
  o.env["TG_PROCESS_TEST"] = "set";
  o.unset_env.insert("HOME");
  ProcessResult r = RunProcess({kSh, "-c", "wc -c; echo \"$TG_PROCESS_TEST/${HOME:-unset}\""}, o);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("300000"));
  EXPECT_THAT(r.out, HasSubstr("set/unset"));
}

TEST(Process, NamesTheSignalThatKilledTheChild) {
  ProcessResult r = RunProcess({kSh, "-c", "kill -SEGV $$"});
  EXPECT_EQ(r.term_signal, SIGSEGV);
  EXPECT_EQ(r.exit_code, 128 + SIGSEGV);
  EXPECT_EQ(SignalName(r.term_signal), "SIGSEGV");
  EXPECT_EQ(SignalName(64), "signal 64");
}

TEST(Process, KillsAChildThatOutlivesItsTimeLimit) {
  ProcessOptions o;
  o.timeout = std::chrono::milliseconds(200);
  ProcessResult r = RunProcess({kSh, "-c", "echo started; exec sleep 30"}, o);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.term_signal, SIGKILL);
  EXPECT_EQ(r.out, "started\n");
}

TEST(Process, ChildThatClosesItsOutputsIsStillBoundByTheTimeLimit) {
  ProcessOptions o;
  o.timeout = std::chrono::milliseconds(200);
  ProcessResult r = RunProcess({kSh, "-c", "exec sleep 30 >/dev/null 2>&1"}, o);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.term_signal, SIGKILL);
}

TEST(Process, CapsOutputAndSaysSo) {
  ProcessOptions o;
  o.max_output_bytes = 1000;
  ProcessResult r = RunProcess({kSh, "-c", "head -c 100000 /dev/zero"}, o);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.size(), 1000u);
  EXPECT_TRUE(r.truncated);
}

TEST(Process, ExecFailureIsExit127AndEmptyArgvAnError) {
  ProcessResult r = RunProcess({"/nonexistent/program"});
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/program"));
  ProcessResult e = RunProcess({});
  EXPECT_FALSE(e.started);
  EXPECT_FALSE(e.error.empty());
}

}  // namespace
}  // namespace tg::common
