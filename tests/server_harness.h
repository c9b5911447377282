// Test harness for `truegreen serve` integration tests: starts the server binary as a child on an
// ephemeral loopback port (found through --port-file), a tiny model repository made of symlinks
// to the build's models, and a blocking raw-socket HTTP/1.1 client (so malformed requests can be
// sent byte for byte). Header-only; used from the test thread only.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/strings.h"
#include "tests/support/measured_run.h"
#include "tests/support/test_util.h"

namespace tg::testing {

// A model repository: sd15 (the small real-architecture SD 1.5 legacy export, or the pipeline
// `sd_variant` names) and mm (matmul_softmax, dynamic batch).
inline void MakeRepository(const std::string& dir,
                           const std::string& mm_config =
                               "max_batch: 4\nbatch_delay_ms: 20\n"
                               "warmup:\n  - {x: [2, 8]}\n",
                           const std::string& sd_variant = "sd15-legacy") {
  namespace fs = std::filesystem;
  fs::create_directories(dir + "/mm");
  fs::create_symlink(BinaryDir() + "/models/sd-tiny/" + sd_variant, dir + "/sd15");
  fs::create_symlink(BinaryDir() + "/models/runtime/matmul_softmax.onnx", dir + "/mm/model.onnx");
  WriteFile(dir + "/mm/config.yaml", mm_config);
}

struct HttpResult {
  int status = 0;  // 0: no response (connection closed or timed out)
  std::string head;
  std::string body;
  std::string Header(const std::string& name) const {
    const std::string h = common::Lower(head);
    auto p = h.find("\r\n" + name + ":");
    if (p == std::string::npos) return "";
    p += name.size() + 3;
    auto e = h.find("\r\n", p);
    std::string v = head.substr(p, e - p);
    while (!v.empty() && v.front() == ' ') v.erase(0, 1);
    return v;
  }
};

inline int Connect(int port, int timeout_s = 60) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{timeout_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

inline bool SendAll(int fd, const std::string& data) {
  std::size_t off = 0;
  while (off < data.size()) {
    ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads one response (Content-Length framed) from fd.
inline HttpResult ReadResponse(int fd) {
  HttpResult r;
  std::string buf;
  char tmp[65536];
  std::size_t head_end = std::string::npos;
  std::size_t want = std::string::npos;
  while (true) {
    if (head_end == std::string::npos) {
      head_end = buf.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        r.head = buf.substr(0, head_end);
        if (r.head.size() > 12) r.status = std::atoi(r.head.substr(9, 3).c_str());
        std::string cl = r.Header("content-length");
        want = head_end + 4 + (cl.empty() ? 0 : std::stoul(cl));
      }
    }
    if (want != std::string::npos && buf.size() >= want) break;
    ssize_t n = recv(fd, tmp, sizeof(tmp), 0);
    if (n <= 0) break;
    buf.append(tmp, static_cast<std::size_t>(n));
  }
  if (want != std::string::npos && buf.size() >= want) {
    r.body = buf.substr(head_end + 4, want - head_end - 4);
  } else if (want == std::string::npos) {
    r.status = 0;
  }
  return r;
}

// Sends raw bytes on a fresh connection and reads one response.
inline HttpResult RawRequest(int port, const std::string& bytes, int timeout_s = 60) {
  int fd = Connect(port, timeout_s);
  if (fd < 0) return {};
  SendAll(fd, bytes);
  HttpResult r = ReadResponse(fd);
  close(fd);
  return r;
}

inline HttpResult Request(int port, const std::string& method, const std::string& path,
                          const std::string& body = "",
                          const std::map<std::string, std::string>& headers = {}) {
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n";
  for (const auto& [k, v] : headers) req += k + ": " + v + "\r\n";
  if (!body.empty() || method == "POST") {
    req +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return RawRequest(port, req + "\r\n" + body);
}

class ServerProcess {
 public:
  // Starts `truegreen <global...> serve --port 0 --port-file F <args...>`; stderr goes to a file.
  ServerProcess(const std::vector<std::string>& global, const std::vector<std::string>& args,
                const std::map<std::string, std::string>& env = {}) {
    port_file_ = dir_ / "port";
    log_ = dir_ / "stderr.log";
    std::vector<std::string> argv = {TruegreenPath()};
    argv.insert(argv.end(), global.begin(), global.end());
    argv.insert(argv.end(), {"serve", "--port", "0", "--port-file", port_file_});
    argv.insert(argv.end(), args.begin(), args.end());
    ChildIo io;
    io.err_file = log_;  // stdout to /dev/null
    io.env = env;
    // stdin stays the test's, as before: a server reads none.
    io.setup_stdin = [] {};
    pid_ = SpawnChild(std::move(argv), io);
  }
  ~ServerProcess() {
    if (pid_ > 0 && exit_code_ < 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  // Waits for the port file; 0 if the process exited or nothing appeared in `timeout_s`.
  int WaitPort(int timeout_s = 120) {
    for (int i = 0; i < timeout_s * 100; ++i) {
      std::string p;
      if (std::filesystem::exists(port_file_)) p = ReadFile(port_file_);
      if (!p.empty() && p.back() == '\n') return port_ = std::stoi(p);
      if (Exited()) return 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return 0;
  }
  // Polls /readyz until 200 (true) or the process exits / times out (false).
  bool WaitReady(int timeout_s = 120) {
    for (int i = 0; i < timeout_s * 20; ++i) {
      if (Request(port_, "GET", "/readyz").status == 200) return true;
      if (Exited()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  bool Exited() {
    if (exit_code_ >= 0) return true;
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) == pid_) {
      exit_code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      return true;
    }
    return false;
  }
  // Waits for exit (up to timeout_s; then SIGKILL) and returns the exit code.
  int Wait(int timeout_s = 120) {
    for (int i = 0; i < timeout_s * 100 && !Exited(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!Exited()) {
      kill(pid_, SIGKILL);
      int st = 0;
      waitpid(pid_, &st, 0);
      exit_code_ = 137;
    }
    return exit_code_;
  }
  void Signal(int sig) { kill(pid_, sig); }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string Log() const { return ReadFile(log_); }
  std::string Dir() const { return dir_.path(); }

 private:
  TempDir dir_;
  std::string port_file_;
  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0;
  int exit_code_ = -1;
};

// One dev-policy server for a whole test suite (started once, it keeps its state across the
// suite's tests). Derived supplies
//   static void MakeRepo(const std::string& models_dir);
//   static std::vector<std::string> ServeArgs(const std::string& models_dir);
// and its tests use port_ (and server_ for the log and the exit state).
template <typename Derived>
class SharedServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    repo_ = new TempDir();
    const std::string models = repo_->path() + "/models";
    Derived::MakeRepo(models);
    server_ = new ServerProcess({"--policy", "dev"}, Derived::ServeArgs(models));
    port_ = server_->WaitPort();
    ready_ = port_ > 0 && server_->WaitReady();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete repo_;
    repo_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(ready_) << server_->Log(); }

  static inline TempDir* repo_ = nullptr;
  static inline ServerProcess* server_ = nullptr;
  static inline int port_ = 0;
  static inline bool ready_ = false;
};

}  // namespace tg::testing
