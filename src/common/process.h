// Running a child process to completion (fork + exec) with captured output, an optional time limit
// and an output cap: the op canary's child, `audit image`'s ORT core inspector and its skopeo
// pulls, and an external kustomize. (bench's A/B server, which must outlive the call, is started
// by bench/ab.cc itself.)
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

// "SIGSEGV", "SIGKILL", ... ("signal N" for unnamed ones). Pure; thread-safe.
std::string SignalName(int sig);

// This executable's absolute path (/proc/self/exe), or "truegreen" when it cannot be read: how a
// command starts itself as a child (the op canary, the ORT core inspector, `bench --ab`).
std::string SelfExePath();

}  // namespace tg::common
