#include "tests/support/test_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "common/process.h"

namespace tg::testing {
namespace fs = std::filesystem;

ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env,
                         const std::string& stdin_data) {
  common::ProcessOptions o;
  for (const auto& [k, v] : env) {
    if (v == kUnset) {
      o.unset_env.insert(k);
    } else {
      o.env[k] = v;
    }
  }
  o.stdin_data = stdin_data;
  const common::ProcessResult r = common::RunProcess(argv, o);
  ProcessResult result;
  result.exit_code = r.started ? r.exit_code : 127;
  result.out = r.out;
  result.err = r.started ? r.err : r.error;
  return result;
}

ProcessResult RunTruegreen(const std::vector<std::string>& args,
                           const std::map<std::string, std::string>& env,
                           const std::string& stdin_data) {
  std::vector<std::string> argv = {TruegreenPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, env, stdin_data);
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/tg-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    std::perror("mkdtemp");
    std::abort();
  }
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

void WriteFile(const std::string& path, const std::string& content) {
  fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::abort();
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string SourceDir() { return TG_SOURCE_DIR; }
std::string BinaryDir() { return TG_BINARY_DIR; }
std::string TruegreenPath() { return TG_CLI_PATH; }
std::string ClipMergesFile() {
  return std::string(TG_SOURCE_DIR) + "/data/clip/bpe_simple_vocab_16e6.txt.gz";
}
std::string OrtDir() { return std::string(TG_SOURCE_DIR) + "/third_party/onnxruntime"; }
std::string CpuOrtCore() {
  return std::string(TG_SOURCE_DIR) + "/third_party/onnxruntime-cpu/lib/libonnxruntime.so";
}
std::string FakeGpuDir() { return std::string(TG_BINARY_DIR) + "/fakegpu"; }
std::string SystemPython() { return "/usr/bin/python3"; }

namespace {

const common::Json* CliChild(const common::Json& node, const std::string& name) {
  for (const auto& c : node["subcommands"]) {
    if (c["name"] == name) return &c;
  }
  return nullptr;
}

const common::Json* CliOption(const std::vector<const common::Json*>& chain,
                              const std::string& flag) {
  for (const common::Json* n : chain) {
    for (const auto& o : (*n)["options"]) {
      for (const auto& name : o["names"]) {
        if (name == flag) return &o;
      }
    }
  }
  return nullptr;
}

// `exact`: words as a process receives them (no doc punctuation, no alternatives, no stops).
std::string CheckWords(const common::Json& tree, const std::vector<std::string>& toks, bool exact) {
  std::vector<const common::Json*> chain = {&tree};
  bool in_leaf = false;
  for (std::size_t i = 1; i < toks.size(); ++i) {
    std::string t = toks[i];
    if (!exact) {
      if (t == "|" || t == ">" || t == "&&" || t == "...") break;
      while (!t.empty() && (t.front() == '[' || t.front() == '(')) t.erase(0, 1);
      while (!t.empty() && (t.back() == ']' || t.back() == ')' || t.back() == ',')) t.pop_back();
      if (t.empty()) continue;
    }
    if (t.rfind("--", 0) == 0 || (t.size() == 2 && t[0] == '-')) {
      const std::string flag = t.substr(0, t.find('='));
      const common::Json* o = CliOption(chain, flag);
      if (o == nullptr)
        return "no flag " + flag + " on `truegreen " + (*chain.back())["path"].get<std::string>() +
               "`";
      if ((*o)["takes_value"].get<bool>() && t.find('=') == std::string::npos) {
        if (exact && i + 1 >= toks.size()) return "flag " + flag + " has no value";
        ++i;
      }
      continue;
    }
    if (in_leaf || (*chain.back())["subcommands"].empty()) {
      in_leaf = true;  // positional argument
      continue;
    }
    // Alternatives such as "image|dockerfile|k8s": each must exist.
    std::size_t start = 0;
    const common::Json* next = nullptr;
    while (start <= t.size()) {
      std::size_t bar = exact ? t.size() : t.find('|', start);
      if (bar == std::string::npos) bar = t.size();
      const std::string word = t.substr(start, bar - start);
      next = CliChild(*chain.back(), word);
      if (next == nullptr) return "no command '" + word + "'";
      start = bar + 1;
    }
    chain.push_back(next);
  }
  if (exact && !(*chain.back())["subcommands"].empty()) {
    return "`truegreen " + (*chain.back())["path"].get<std::string>() + "` needs a subcommand";
  }
  return "";
}

}  // namespace

common::Json CliTree() {
  ProcessResult t = RunTruegreen({"__cli-tree"});
  EXPECT_EQ(t.exit_code, 0) << t.err;
  auto j = common::ParseJson(t.out, "__cli-tree");
  EXPECT_TRUE(j.ok()) << t.out;
  return j.ok() ? *j : common::Json::object();
}

std::vector<std::string> CliWords(const std::string& line) {
  std::vector<std::string> w;
  std::size_t start = 0;
  while (start < line.size()) {
    std::size_t sp = line.find(' ', start);
    if (sp == std::string::npos) sp = line.size();
    if (sp > start) w.push_back(line.substr(start, sp - start));
    start = sp + 1;
  }
  return w;
}

std::string CheckCommandLine(const common::Json& tree, const std::string& line) {
  return CheckWords(tree, CliWords(line), false);
}

std::string CheckCommandWords(const common::Json& tree, const std::vector<std::string>& words) {
  return CheckWords(tree, words, true);
}

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* old = std::getenv(name)) old_ = old;
  if (value != nullptr) {
    ::setenv(name, value, 1);
  } else {
    ::unsetenv(name);
  }
}

ScopedEnv::~ScopedEnv() {
  if (old_) {
    ::setenv(name_, old_->c_str(), 1);
  } else {
    ::unsetenv(name_);
  }
}

int ListenLoopback(int* port, int backlog) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd, backlog) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

LoopbackAcceptor::LoopbackAcceptor(std::function<void(int fd)> serve) : serve_(std::move(serve)) {
  fd_ = ListenLoopback(&port_);
  if (fd_ < 0) return;  // port() stays 0: connecting fails and the test says so
  thread_ = std::thread([this] {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      serve_(c);
      ::close(c);
    }
  });
}

LoopbackAcceptor::~LoopbackAcceptor() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace tg::testing
