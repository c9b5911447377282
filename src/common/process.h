// Running child processes, the project's one process runner. RunProcess runs one to completion
// (fork + exec) with captured output, an optional time limit and an output cap: the op canary's
// child, `audit image`'s ORT core inspector and its skopeo pulls, and an external kustomize.
// ChildProcess starts one that outlives the call, beside the caller (bench's A/B servers).
//
// RunProcess never throws and never leaves a zombie: the child is always reaped. A child that
// outlives `timeout` is killed with SIGKILL (its whole process group: the child is made a group
// leader) and reported as timed_out. Output beyond `max_output_bytes` per stream is read and
// dropped (so the child never blocks on a full pipe) and flagged as truncated.
// Thread safety: safe to call concurrently from several threads (each call owns its pipes);
// SIGPIPE is ignored process-wide while a call writes the child's stdin.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <sys/types.h>

#include "common/status.h"

namespace tg::common {

struct ProcessOptions {
  std::map<std::string, std::string> env;  // added to / overriding the current environment
  std::set<std::string> unset_env;         // removed from it
  std::string stdin_data;
  std::optional<std::chrono::milliseconds> timeout;  // none = wait for ever
  std::size_t max_output_bytes = 64u << 20;          // per stream
};

struct ProcessResult {
  bool started = false;    // false: pipe/fork failed (see error); exec failure is exit 127
  int exit_code = -1;      // exit status, or 128 + signal when killed by a signal
  int term_signal = 0;     // the signal that ended the child (0 = it exited)
  bool timed_out = false;  // killed by RunProcess after `timeout`
  bool truncated = false;  // some output was dropped (max_output_bytes)
  std::string out, err;
  std::string error;  // why it could not start
};

// Runs argv[0] (a path, not searched in PATH) with argv and waits for it (or for the timeout).
// Never fails as a call: a child that could not start is started == false with `error` set.
ProcessResult RunProcess(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// One child process running beside the caller, and its one owner: the destructor stops it (as
// Stop() with a 10 s grace) and reaps it, so it never outlives its owner or stays a zombie.
// Move-only; not thread-safe (use one object from one thread).
class ChildProcess {
 public:
  // Starts argv[0] (searched in PATH when it has no '/', like a shell) with argv and this
  // process's environment; stdin is shared, stdout goes to our stderr when `stdout_to_stderr`
  // (so a command's stdout stays its result). UNAVAILABLE naming argv[0] and the reason when it
  // cannot start (missing program included: nothing is left running).
  static Result<ChildProcess> Start(const std::vector<std::string>& argv, bool stdout_to_stderr);
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  // Never blocks. nullopt while the child runs; once it has ended (it is then reaped), its exit
  // status, or 128 + the signal that ended it, on this and every later call.
  std::optional<int> Poll();
  // SIGTERM, then up to `grace` for it to end, then SIGKILL; reaps it and returns its status as
  // Poll does. A child that already ended just gives its status.
  int Stop(std::chrono::milliseconds grace);

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;  // -1 once reaped (or moved from)
  int status_ = -1;
};

// "SIGSEGV", "SIGKILL", ... ("signal N" for unnamed ones). Pure; thread-safe.
std::string SignalName(int sig);

// This executable's absolute path (/proc/self/exe), or "truegreen" when it cannot be read: how a
// command starts itself as a child (the op canary, the ORT core inspector, `bench --ab`).
std::string SelfExePath();

}  // namespace tg::common
