// The tests' one way to start a child process by hand (SpawnChild: fork + exec with its standard
// streams in files, extra or exact environment, a CPU limit), and RunMeasured, which runs the
// truegreen binary of this build tree once, as the hostile-input tables do: stdin from /dev/null,
// stdout and stderr captured, a watchdog that kills the child after `timeout_s`, and the child's
// peak RSS (ru_maxrss from wait4). Product code starts children through common/process.h instead.
// Header-only; not thread-safe (test thread only).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/test_util.h"

namespace tg::testing {

struct MeasuredOutcome {
  int exit_code = -1;  // exit status, or 128+signal
  bool timed_out = false;
  long max_rss_kb = 0;
  std::string out, err;
};

// How SpawnChild sets up the child before exec.
struct ChildIo {
  std::string out_file;         // stdout into this file (created, truncated); "" = /dev/null
  std::string err_file;         // stderr into this file; "" = where stdout goes
  bool inherit_stderr = false;  // stderr stays the caller's (err_file unused)
  int file_mode = 0644;         // of the files it creates
  std::map<std::string, std::string> env;  // set on top of the current environment
  bool clear_env = false;                  // true: `env` is the child's whole environment
  // Runs in the child after stdout and stderr are in place (so a closed stdin cannot take
  // descriptor 1 or 2) and sets up descriptor 0; none: stdin from /dev/null.
  std::function<void()> setup_stdin;
  long cpu_limit_s = 0;  // RLIMIT_CPU when > 0: a hang becomes a SIGXCPU/SIGKILL, not a stuck test
  // Runs in the child last, just before exec (e.g. to enter a namespace); may _exit.
  std::function<void()> before_exec;
};

// Starts `argv` (argv[0] a path, not searched) in a forked child set up by `io`. The child exits
// 126 when it cannot open its files and 127 when exec fails. Returns the child's pid, or -1 when
// fork failed; the caller reaps it.
inline pid_t SpawnChild(std::vector<std::string> argv, const ChildIo& io) {
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  const char* out_path = io.out_file.empty() ? "/dev/null" : io.out_file.c_str();
  const int o = ::open(out_path, O_WRONLY | O_CREAT | O_TRUNC, io.file_mode);
  const int e = io.inherit_stderr ? 2
                : io.err_file.empty()
                    ? o
                    : ::open(io.err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, io.file_mode);
  if (o < 0 || e < 0) _exit(126);
  ::dup2(o, 1);
  if (e != 2) ::dup2(e, 2);
  if (o > 2) ::close(o);
  if (e > 2 && e != o) ::close(e);
  if (io.setup_stdin) {
    io.setup_stdin();
  } else {
    const int in = ::open("/dev/null", O_RDONLY);
    if (in < 0) _exit(126);
    ::dup2(in, 0);
    if (in > 2) ::close(in);
  }
  if (io.clear_env) ::clearenv();
  for (const auto& [k, v] : io.env) ::setenv(k.c_str(), v.c_str(), 1);
  if (io.cpu_limit_s > 0) {
    const rlimit cpu{static_cast<rlim_t>(io.cpu_limit_s), static_cast<rlim_t>(io.cpu_limit_s)};
    ::setrlimit(RLIMIT_CPU, &cpu);
  }
  if (io.before_exec) io.before_exec();
  ::execv(raw[0], raw.data());
  _exit(127);
}

// Waits for the child `pid` (killing it after `timeout_s`), then reads what it wrote to
// `out_file` and `err_file`. Reaps the child in every case.
inline MeasuredOutcome WaitMeasured(pid_t pid, int timeout_s, const std::string& out_file,
                                    const std::string& err_file) {
  MeasuredOutcome r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  rusage ru{};
  for (;;) {
    if (::wait4(pid, &status, WNOHANG, &ru) == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::wait4(pid, &status, 0, &ru);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.max_rss_kb = ru.ru_maxrss;
  r.out = ReadFile(out_file);
  r.err = ReadFile(err_file);
  return r;
}

// `env`: variables set in the child on top of the current environment.
inline MeasuredOutcome RunMeasured(const std::vector<std::string>& args, int timeout_s,
                                   const std::map<std::string, std::string>& env = {}) {
  TempDir dir;
  const std::string out_file = dir / "out", err_file = dir / "err";
  std::vector<std::string> argv = {TruegreenPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildIo io;
  io.out_file = out_file;
  io.err_file = err_file;
  io.env = env;
  return WaitMeasured(SpawnChild(std::move(argv), io), timeout_s, out_file, err_file);
}

}  // namespace tg::testing
