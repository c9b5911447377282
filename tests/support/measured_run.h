// Runs the truegreen binary of this build tree once, as the hostile-input tables do: stdin from
// /dev/null, stdout and stderr captured, a watchdog that kills the child after `timeout_s`, and
// the child's peak RSS (ru_maxrss from wait4). Header-only; not thread-safe (test thread only).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
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
  TempDir io;
  const std::string out_file = io / "out", err_file = io / "err";
  std::vector<std::string> argv = {TruegreenPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int o = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int in = ::open("/dev/null", O_RDONLY);
    if (o < 0 || e < 0 || in < 0) _exit(126);
    ::dup2(in, 0);
    ::dup2(o, 1);
    ::dup2(e, 2);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    ::execv(raw[0], raw.data());
    _exit(127);
  }
  return WaitMeasured(pid, timeout_s, out_file, err_file);
}

}  // namespace tg::testing
