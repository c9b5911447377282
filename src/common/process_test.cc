#include "common/process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <optional>

#include "common/file_util.h"

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

TEST(ChildProcess, FindsTheProgramInPathAndReportsItsExitStatus) {
  auto child = ChildProcess::Start({"sh", "-c", "exit 5"}, /*stdout_to_stderr=*/true);
  ASSERT_TRUE(child.ok()) << child.status().message();
  std::optional<int> status;
  for (int i = 0; i < 2000 && !(status = child->Poll()); ++i) ::usleep(5000);
  ASSERT_TRUE(status.has_value()) << "sh -c 'exit 5' did not end within 10 s";
  EXPECT_EQ(*status, 5);
  EXPECT_EQ(child->Poll(), 5);  // reaped once, the status stays
  EXPECT_EQ(child->Stop(std::chrono::milliseconds(0)), 5);
}

TEST(ChildProcess, StopTerminatesARunningChildAndKillsOneThatIgnoresSigterm) {
  auto polite = ChildProcess::Start({kSh, "-c", "exec sleep 30"}, false);
  ASSERT_TRUE(polite.ok()) << polite.status().message();
  EXPECT_EQ(polite->Poll(), std::nullopt);
  EXPECT_EQ(polite->Stop(std::chrono::seconds(10)), 128 + SIGTERM);

  auto dir = ScopedTempDir::Create("tg-child-test");
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  const std::string armed = dir->path() + "/armed";
  // The file appears once SIGTERM is ignored; the exec'd sleep inherits the ignored disposition.
  auto stubborn =
      ChildProcess::Start({kSh, "-c", "trap '' TERM; : > " + armed + "; exec sleep 30"}, false);
  ASSERT_TRUE(stubborn.ok()) << stubborn.status().message();
  for (int i = 0; i < 2000 && ::access(armed.c_str(), F_OK) != 0; ++i) ::usleep(5000);
  ASSERT_EQ(::access(armed.c_str(), F_OK), 0) << "the child did not start within 10 s";
  EXPECT_EQ(stubborn->Stop(std::chrono::milliseconds(100)), 128 + SIGKILL);
}

TEST(ChildProcess, AMissingProgramIsUnavailableNamingIt) {
  auto child = ChildProcess::Start({"/nonexistent/tg-no-such-server"}, true);
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(child.status().message(), HasSubstr("/nonexistent/tg-no-such-server"));
  EXPECT_FALSE(ChildProcess::Start({}, true).ok());
}

}  // namespace
}  // namespace tg::common
