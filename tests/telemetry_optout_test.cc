// ONNX Runtime's telemetry is off unless the user opts in. The npm core's telemetry,
// when it starts, writes $TMPDIR/mat-debug-<pid>.log and $TMPDIR/.ses, keeps a device id under
// $HOME/.cache/Microsoft and reads /etc/machine-id. These tests run the real binary on the real
// core with a private TMPDIR and HOME and an environment WITHOUT ORT_DISABLE_TELEMETRY (spawned
// here, not through common::RunProcess, which would add the opt-out itself), and check what the
// run left behind and what it opened:
// - files: none of telemetry's files after probe, doctor, doctor --canary (whose child loads the
//   core too) and run; the same commands with TRUEGREEN_ORT_TELEMETRY=1 leave them (one per
//   process), so the check sees telemetry when it is on;
// - /etc/machine-id: in a private mount namespace a file of ours is bind-mounted over it and
//   watched with inotify (IN_OPEN): no open without the opt-in, an open with it (needs root for the
//   mount namespace; skipped, saying so, without);
// - children: the environment `bench --ab` gives the servers it starts (read by the server from
//   /proc/<its pid>/environ) carries ORT_DISABLE_TELEMETRY=1, and not with the opt-in.
// Removing truegreen's opt-out (common/telemetry.cc) makes the first three fail.
#include <sched.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <set>

#include "common/config.h"
#include "common/strings.h"
#include "tests/support/measured_run.h"
#include "tests/support/test_util.h"

extern char** environ;

namespace tg {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// A private TMPDIR and HOME for one run.
struct Sandbox {
  testing::TempDir dir;
  std::string tmp() const { return dir / "tmp"; }
  std::string home() const { return dir / "home"; }
  Sandbox() {
    fs::create_directories(tmp());
    fs::create_directories(home());
  }
  // Telemetry's files left anywhere under TMPDIR or HOME (mat-debug-<pid>.log, .ses, the device
  // id and event cache under .cache/Microsoft).
  std::vector<std::string> TelemetryFiles() const {
    std::vector<std::string> found;
    for (const std::string& root : {tmp(), home()}) {
      for (const auto& e : fs::recursive_directory_iterator(root)) {
        const std::string name = e.path().filename().string();
        const std::string rel = e.path().string().substr(dir.path().size());
        if (name.rfind("mat-debug-", 0) == 0 || name == ".ses" ||
            rel.find("/Microsoft") != std::string::npos) {
          found.push_back(rel);
        }
      }
    }
    return found;
  }
  int MatDebugLogs() const {
    int n = 0;
    for (const auto& e : fs::directory_iterator(tmp())) {
      n += e.path().filename().string().rfind("mat-debug-", 0) == 0 ? 1 : 0;
    }
    return n;
  }
};

// The environment of this test minus every telemetry and sandbox variable, plus TMPDIR and HOME
// of `box` and `extra`. The npm core also keeps its telemetry off when it sees one of the CI
// systems' variables below (checked: CI=true, GITHUB_ACTIONS=true, JENKINS_URL=x, TF_BUILD=True
// each leave no file even with the opt-in), so under CI the checks without these would pass
// vacuously and the opt-in control would fail: they are dropped, and the core decides on our
// opt-out alone.
std::vector<std::string> ChildEnv(const Sandbox& box, const std::vector<std::string>& extra) {
  static const std::set<std::string> kDropped = {
      "ORT_DISABLE_TELEMETRY", "TRUEGREEN_ORT_TELEMETRY", "TMPDIR", "HOME", "TRUEGREEN_LIB_PATH",
      // The core's CI detection (strings in libonnxruntime.so.1.29.0).
      "CI", "TF_BUILD", "GITHUB_ACTIONS", "GITLAB_CI", "CIRCLECI", "TRAVIS", "JENKINS_URL",
      "CODEBUILD_BUILD_ID", "BUILDKITE", "TEAMCITY_VERSION", "APPVEYOR", "BITBUCKET_BUILD_NUMBER"};
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv(*e);
    if (kDropped.count(kv.substr(0, kv.find('='))) == 0) env.push_back(kv);
  }
  env.push_back("TMPDIR=" + box.tmp());
  env.push_back("HOME=" + box.home());
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

// Runs the truegreen binary with exactly `env` ("K=V" entries) through SpawnChild, its output in
// `box`. With `machine_id` set, the child first enters a private mount namespace in which that
// file is bind-mounted over /etc/machine-id (exit 121 when it cannot).
testing::MeasuredOutcome Spawn(const Sandbox& box, const std::vector<std::string>& args,
                               const std::vector<std::string>& env,
                               const std::string& machine_id = "") {
  std::vector<std::string> argv = {testing::TruegreenPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  testing::ChildIo io;
  io.out_file = box.dir / "stdout";
  io.err_file = box.dir / "stderr";
  io.file_mode = 0600;
  io.clear_env = true;
  for (const std::string& kv : env) {
    const auto eq = kv.find('=');
    io.env[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
  }
  if (!machine_id.empty()) {
    io.before_exec = [&machine_id] {
      if (::unshare(CLONE_NEWNS) != 0 ||
          ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
          ::mount(machine_id.c_str(), "/etc/machine-id", nullptr, MS_BIND, nullptr) != 0) {
        ::_exit(121);
      }
    };
  }
  return testing::WaitMeasured(testing::SpawnChild(std::move(argv), io), 300, io.out_file,
                               io.err_file);
}

const std::string kOptIn = "TRUEGREEN_ORT_TELEMETRY=1";

std::string Model(const std::string& name) {
  return testing::BinaryDir() + "/models/runtime/" + name;
}

// Each command that loads the ONNX Runtime core, with the exit codes it may end with here.
struct Command {
  std::vector<std::string> args;
  std::set<int> exits;
};

std::vector<Command> CoreCommands() {
  return {
      {{"--json", "probe"}, {0}},
      {{"--json", "doctor"}, {0, 3}},
      {{"--json", "--policy", "dev", "doctor", "--canary", "--canary-no-cache"}, {0, 3}},
      {{"--json", "--policy", "dev", "run", "--model", Model("unet_tiny.onnx"), "--runs", "1",
        "--min-time", "0"},
       {0}},
  };
}

TEST(TelemetryOptOutTest, NoCommandLeavesTelemetryFiles) {
  for (const Command& c : CoreCommands()) {
    Sandbox box;
    testing::MeasuredOutcome r = Spawn(box, c.args, ChildEnv(box, {}));
    EXPECT_TRUE(c.exits.count(r.exit_code))
        << common::Join(c.args, " ") << ": " << r.exit_code << "\n"
        << r.out << r.err;
    EXPECT_THAT(box.TelemetryFiles(), ::testing::IsEmpty()) << common::Join(c.args, " ");
  }
}

// The control: the same commands with the opt-in leave telemetry's files, one log per process
// that loaded the core (doctor --canary: the command and its canary child).
TEST(TelemetryOptOutTest, OptInLeavesTelemetryFilesSoTheCheckSeesThem) {
  for (const Command& c : CoreCommands()) {
    Sandbox box;
    testing::MeasuredOutcome r = Spawn(box, c.args, ChildEnv(box, {kOptIn}));
    EXPECT_TRUE(c.exits.count(r.exit_code))
        << common::Join(c.args, " ") << ": " << r.exit_code << "\n"
        << r.err;
    const bool canary = std::find(c.args.begin(), c.args.end(), "--canary") != c.args.end();
    EXPECT_GE(box.MatDebugLogs(), canary ? 2 : 1) << common::Join(c.args, " ");
  }
}

// Whether a private mount namespace can be made here (root, or CAP_SYS_ADMIN).
bool CanMount() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(::unshare(CLONE_NEWNS) == 0 ? 0 : 1);
  int status = 0;
  return pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

// Opens of `watched` while `args` runs with its /etc/machine-id bind-mounted from it.
int MachineIdOpens(const std::vector<std::string>& args, const std::vector<std::string>& extra) {
  Sandbox box;
  const std::string id = box.dir / "machine-id";
  testing::WriteFile(id, "0123456789abcdef0123456789abcdef\n");
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  EXPECT_GE(fd, 0);
  EXPECT_GE(::inotify_add_watch(fd, id.c_str(), IN_OPEN), 0);
  testing::MeasuredOutcome r = Spawn(box, args, ChildEnv(box, extra), id);
  EXPECT_NE(r.exit_code, 121) << "could not bind-mount over /etc/machine-id";
  EXPECT_NE(r.exit_code, 127) << r.err;
  int opens = 0;
  alignas(inotify_event) char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) {
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<inotify_event*>(p);
      opens += (ev->mask & IN_OPEN) ? 1 : 0;
      p += sizeof(inotify_event) + ev->len;
    }
  }
  ::close(fd);
  return opens;
}

TEST(TelemetryOptOutTest, NoCommandReadsMachineId) {
  if (!fs::is_regular_file("/etc/machine-id")) GTEST_SKIP() << "no /etc/machine-id to watch";
  if (!CanMount()) GTEST_SKIP() << "no private mount namespace here (needs CAP_SYS_ADMIN)";
  for (const Command& c : CoreCommands()) {
    EXPECT_EQ(MachineIdOpens(c.args, {}), 0) << common::Join(c.args, " ");
  }
  // The control: with the opt-in the core's telemetry opens it.
  EXPECT_GE(MachineIdOpens({"--json", "probe"}, {kOptIn}), 1);
}

// The servers `bench --ab` starts get the opt-out in their environment (they would load the
// core); each stand-in server copies its own /proc/<pid>/environ before it starts.
std::string AbServerEnv(const std::vector<std::string>& extra) {
  Sandbox box;
  const std::string stub = testing::BinaryDir() + "/bin/bench_stub_server";
  for (const char* name : {"a", "b"}) {
    testing::WriteFile(box.dir / (std::string(name) + ".yaml"),
                       "name: " + std::string(name) +
                           "\ncommand: [/bin/sh, -c, 'tr \"\\0\" \"\\n\" < /proc/$$/environ > " +
                           box.dir.path() + "/" + name + ".env; exec " + stub +
                           " --port \"$0\" --delay-ms 1', \"{port}\"]\n");
  }
  testing::MeasuredOutcome r =
      Spawn(box,
            {"bench", "--ab", box.dir / "a.yaml", box.dir / "b.yaml", "--warmup", "0.1", "--window",
             "0.2", "--max-trials", "1", "--metrics-interval", "0", "--ab-out", box.dir / "ab"},
            ChildEnv(box, extra));
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 5) << r.exit_code << "\n" << r.out << r.err;
  // Both servers' environments, each as "\nK=V\n" lines; TMPDIR shows it is what bench passed on.
  std::string both;
  for (const char* name : {"a", "b"}) {
    const std::string env = testing::ReadFile(box.dir / (std::string(name) + ".env"));
    EXPECT_THAT(env, HasSubstr("TMPDIR=" + box.tmp())) << name;
    both += "\n" + env;
  }
  return both;
}

TEST(TelemetryOptOutTest, AbServersGetTheOptOut) {
  const std::string off = AbServerEnv({});
  // Once per server.
  const auto first = off.find("\nORT_DISABLE_TELEMETRY=1\n");
  ASSERT_NE(first, std::string::npos) << off;
  EXPECT_NE(off.find("\nORT_DISABLE_TELEMETRY=1\n", first + 1), std::string::npos) << off;
  const std::string opted = AbServerEnv({kOptIn});
  EXPECT_THAT(opted, Not(HasSubstr("ORT_DISABLE_TELEMETRY")));
  EXPECT_THAT(opted, HasSubstr("\nTRUEGREEN_ORT_TELEMETRY=1\n"));
}

}  // namespace
}  // namespace tg
