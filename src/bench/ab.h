// One-command A/B (`truegreen bench --ab A.yaml B.yaml`): start a server from a YAML description,
// wait until it is ready, hand its URL to the caller's sweep, then stop it with SIGTERM.
//
// Server file (YAML):
//   name: before                 # optional, default the file's stem
//   serve_args: [--matrix, m.yaml, --models, models/]   # runs `<this binary> serve --host
//                                # 127.0.0.1 --port {port} <serve_args>`, or
//   command: [/path/server, --port, "{port}"]           # any server; "{port}" is substituted
//   ready_path: /readyz          # default /readyz; 200 means ready
//   ready_timeout_s: 300         # default 300
// Exactly one of serve_args and command. The server always listens on a free loopback port.
//
// ServerProcess owns the child through common::ChildProcess: the destructor sends SIGTERM, waits up
// to 10 s, then SIGKILL, and reaps it. Not thread-safe; use from one thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/process.h"
#include "common/status.h"

namespace tg::bench {

struct ServerSpec {
  std::string file;  // the YAML it came from
  std::string name;
  std::vector<std::string> argv;  // with "{port}" placeholders
  std::string ready_path = "/readyz";
  double ready_timeout_s = 300;
};

// Parses a server file; errors name file, line and field.
common::Result<ServerSpec> LoadServerSpec(const std::string& path, const std::string& self_exe);

class ServerProcess {
 public:
  // Picks a free loopback port, spawns the server (stdout to stderr, so our stdout stays ours)
  // and polls ready_path until 200. UNAVAILABLE if it exits or is not ready in time, naming the
  // file; the child is stopped before returning an error.
  static common::Result<std::unique_ptr<ServerProcess>> Start(const ServerSpec& spec);
  ~ServerProcess() = default;  // the child's owner stops it (10 s grace) and reaps it
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  // "http://127.0.0.1:<port>" of the running server (the port Start picked).
  const std::string& url() const { return url_; }
  // SIGTERM, wait up to `grace_s`, then SIGKILL; returns the exit status (128+signal if killed).
  int Stop(double grace_s = 10);

 private:
  ServerProcess(common::ChildProcess child, std::string url)
      : child_(std::move(child)), url_(std::move(url)) {}
  common::ChildProcess child_;
  std::string url_;
};

}  // namespace tg::bench
