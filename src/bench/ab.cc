#include "bench/ab.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "bench/loadgen.h"
#include "bench/server_metrics.h"
#include "common/config.h"
#include "common/file_util.h"

namespace tg::bench {
namespace {

using common::Status;

// A free port on 127.0.0.1: bind to port 0 and read it back. The small window before the server
// binds it is acceptable for a benchmark harness.
common::Result<int> FreeLoopbackPort() {
  common::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return Status::Unavailable("socket() failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = -1;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  if (port <= 0) return Status::Unavailable("no free loopback port");
  return port;
}

std::string Substitute(std::string s, int port) {
  for (std::size_t p; (p = s.find("{port}")) != std::string::npos;) {
    s.replace(p, 6, std::to_string(port));
  }
  return s;
}

}  // namespace

common::Result<ServerSpec> LoadServerSpec(const std::string& path, const std::string& self_exe) {
  TG_ASSIGN_OR_RETURN(YAML::Node root, common::LoadYamlFile(path));
  TG_ASSIGN_OR_RETURN(common::YamlMap m, common::YamlMap::From(root, path, ""));
  ServerSpec s;
  s.file = path;
  s.name = std::filesystem::path(path).stem().string();
  TG_RETURN_IF_ERROR(m.Get("name", &s.name));
  TG_RETURN_IF_ERROR(m.Get("ready_path", &s.ready_path));
  TG_RETURN_IF_ERROR(m.Get("ready_timeout_s", &s.ready_timeout_s));
  if (m.Has("serve_args") == m.Has("command")) {
    return Status::InvalidArg(path +
                              ": exactly one of the fields serve_args and command is required");
  }
  std::vector<std::string> list;
  const char* key = m.Has("command") ? "command" : "serve_args";
  TG_RETURN_IF_ERROR(m.Get(key, &list, true));
  if (list.empty()) return m.FieldError(key, "a non-empty list of strings");
  if (m.Has("command")) {
    s.argv = list;
  } else {
    s.argv = {self_exe, "serve", "--host", "127.0.0.1", "--port", "{port}"};
    s.argv.insert(s.argv.end(), list.begin(), list.end());
  }
  if (s.ready_path.empty() || s.ready_path[0] != '/' || s.ready_timeout_s <= 0) {
    return Status::InvalidArg(path +
                              ": field ready_path must start with / and ready_timeout_s be > 0");
  }
  TG_RETURN_IF_ERROR(m.Finish());
  return s;
}

common::Result<std::unique_ptr<ServerProcess>> ServerProcess::Start(const ServerSpec& spec) {
  TG_ASSIGN_OR_RETURN(int port, FreeLoopbackPort());
  std::vector<std::string> args;
  for (const auto& a : spec.argv) args.push_back(Substitute(a, port));
  auto child = common::ChildProcess::Start(args, /*stdout_to_stderr=*/true);
  if (!child.ok()) return child.status().WithPrefix(spec.file);
  std::string url = fmt::format("http://127.0.0.1:{}", port);
  std::unique_ptr<ServerProcess> proc(new ServerProcess(std::move(*child), url));
  Target target{"127.0.0.1", std::to_string(port), ""};
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(spec.ready_timeout_s));
  while (std::chrono::steady_clock::now() < deadline) {
    if (std::optional<int> status = proc->child_.Poll()) {
      return Status::Unavailable(fmt::format(
          "{}: server {} exited with status {} before it was ready", spec.file, args[0], *status));
    }
    auto r = HttpGet(target, spec.ready_path, 2.0);
    if (r.ok() && r->status == 200) return proc;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  proc->Stop(2);
  return Status::Unavailable(fmt::format("{}: server not ready ({} != 200) within {} s", spec.file,
                                         spec.ready_path, spec.ready_timeout_s));
}

int ServerProcess::Stop(double grace_s) {
  return child_.Stop(std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(grace_s)));
}

}  // namespace tg::bench
