#include "common/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "common/telemetry.h"

extern char** environ;

namespace tg::common {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> MergedEnv(const ProcessOptions& o) {
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) merged[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : o.env) merged[k] = v;
  for (const auto& k : o.unset_env) merged.erase(k);
  // Every child inherits the telemetry decision, whatever the caller's environment changes say.
  if (!OrtTelemetryOptedIn()) merged[kOrtDisableTelemetryVar] = "1";
  std::vector<std::string> out;
  for (const auto& [k, v] : merged) out.push_back(k + "=" + v);
  return out;
}

// Owns the three pipes; closes whatever is still open.
struct Pipes {
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  bool Open() {
    return ::pipe2(in, O_CLOEXEC) == 0 && ::pipe2(out, O_CLOEXEC) == 0 &&
           ::pipe2(err, O_CLOEXEC) == 0;
  }
  static void Close(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  ~Pipes() {
    for (int* p : {in, out, err}) {
      Close(p[0]);
      Close(p[1]);
    }
  }
};

void Kill(pid_t pid, ProcessResult* r) {
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);  // in case the child had not yet made its own group
  r->timed_out = true;
}

// Reaps the child; one that closed its outputs but keeps running is still bound by the deadline.
int Reap(pid_t pid, const std::optional<Clock::time_point>& deadline, ProcessResult* r) {
  int status = 0;
  while (true) {
    pid_t got = ::waitpid(pid, &status, deadline && !r->timed_out ? WNOHANG : 0);
    if (got == pid) return status;
    if (got < 0 && errno != EINTR) return status;
    if (got == 0) {
      if (Clock::now() >= *deadline) {
        Kill(pid, r);
      } else {
        ::usleep(5000);
      }
    }
  }
}

// The exit status of a child that could not exec its program (POSIX shells' convention for
// "command not found", process.h's "exec failure is exit 127"): the child exits with it before any
// of the program's code runs, so it is no truegreen outcome and stays outside the exit mappings.
constexpr int kExecFailedStatus = 127;

[[noreturn]] void ExecChild(Pipes& p, std::vector<char*>& args, std::vector<char*>& envp) {
  ::setpgid(0, 0);  // own group, so a timeout kill takes whatever the child started too
  ::dup2(p.in[0], 0);
  ::dup2(p.out[1], 1);
  ::dup2(p.err[1], 2);
  ::execve(args[0], args.data(), envp.data());
  std::fprintf(stderr, "exec %s: %s\n", args[0], std::strerror(errno));
  ::_exit(kExecFailedStatus);
}

// Pumps stdin/stdout/stderr until both outputs close or the deadline passes (then kills).
void Pump(Pipes& p, pid_t pid, const ProcessOptions& o,
          const std::optional<Clock::time_point>& deadline, ProcessResult* r) {
  ::fcntl(p.in[1], F_SETFL, O_NONBLOCK);
  std::size_t written = 0;
  if (o.stdin_data.empty()) Pipes::Close(p.in[1]);
  char buf[65536];
  while (p.out[0] >= 0 || p.err[0] >= 0) {
    int wait_ms = -1;
    if (deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now());
      if (left.count() <= 0) {
        Kill(pid, r);
        return;
      }
      wait_ms = static_cast<int>(left.count());
    }
    pollfd fds[3];
    int n = 0;
    for (int fd : {p.out[0], p.err[0]}) {
      if (fd >= 0) fds[n++] = {fd, POLLIN, 0};
    }
    if (p.in[1] >= 0) fds[n++] = {p.in[1], POLLOUT, 0};
    int rc = ::poll(fds, static_cast<nfds_t>(n), wait_ms);
    if (rc < 0 && errno != EINTR) return;
    if (rc <= 0) continue;
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      if (fds[i].fd == p.in[1]) {
        ssize_t w = ::write(p.in[1], o.stdin_data.data() + written, o.stdin_data.size() - written);
        if (w > 0) written += static_cast<std::size_t>(w);
        if ((w < 0 && errno != EAGAIN) || written >= o.stdin_data.size()) Pipes::Close(p.in[1]);
        continue;
      }
      const bool is_out = fds[i].fd == p.out[0];
      std::string* dst = is_out ? &r->out : &r->err;
      ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got <= 0) {
        Pipes::Close(is_out ? p.out[0] : p.err[0]);
        continue;
      }
      std::size_t room = o.max_output_bytes > dst->size() ? o.max_output_bytes - dst->size() : 0;
      std::size_t take = std::min(room, static_cast<std::size_t>(got));
      dst->append(buf, take);
      if (take < static_cast<std::size_t>(got)) r->truncated = true;
    }
  }
}

}  // namespace

ProcessResult RunProcess(const std::vector<std::string>& argv, const ProcessOptions& options) {
  ProcessResult r;
  if (argv.empty()) {
    r.error = "no program given";
    return r;
  }
  Pipes p;
  if (!p.Open()) {
    r.error = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  std::vector<std::string> env_strings = MergedEnv(options);
  std::vector<std::string> argv_copy = argv;
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  ::signal(SIGPIPE, SIG_IGN);
  pid_t pid = ::fork();
  if (pid < 0) {
    r.error = std::string("fork: ") + std::strerror(errno);
    return r;
  }
  if (pid == 0) ExecChild(p, args, envp);
  r.started = true;
  Pipes::Close(p.in[0]);
  Pipes::Close(p.out[1]);
  Pipes::Close(p.err[1]);
  const std::optional<Clock::time_point> deadline =
      options.timeout ? std::optional<Clock::time_point>(Clock::now() + *options.timeout)
                      : std::nullopt;
  Pump(p, pid, options, deadline, &r);
  const int status = Reap(pid, deadline, &r);
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.term_signal = WTERMSIG(status);
    r.exit_code = 128 + r.term_signal;
  }
  return r;
}

namespace {
int StatusOf(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}
}  // namespace

Result<ChildProcess> ChildProcess::Start(const std::vector<std::string>& argv,
                                         bool stdout_to_stderr) {
  if (argv.empty()) return Status::InvalidArg("no program given");
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (auto& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (stdout_to_stderr) posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
  pid_t pid = -1;
  // posix_spawnp, not fork: glibc reports a missing program here (as the return value) rather
  // than as a child that exits kExecFailedStatus. The child (a server) inherits the telemetry
  // opt-out.
  ApplyOrtTelemetryPolicy();
  const int rc = ::posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return Status::Unavailable("cannot start " + argv[0] + ": " + std::strerror(rc));
  return ChildProcess(pid);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), status_(other.status_) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    Stop(std::chrono::seconds(10));
    pid_ = std::exchange(other.pid_, -1);
    status_ = other.status_;
  }
  return *this;
}

ChildProcess::~ChildProcess() { Stop(std::chrono::seconds(10)); }

std::optional<int> ChildProcess::Poll() {
  if (pid_ < 0) return status_;
  int st = 0;
  if (::waitpid(pid_, &st, WNOHANG) != pid_) return std::nullopt;
  status_ = StatusOf(st);
  pid_ = -1;
  return status_;
}

int ChildProcess::Stop(std::chrono::milliseconds grace) {
  if (pid_ < 0) return status_;
  ::kill(pid_, SIGTERM);
  const auto deadline = Clock::now() + grace;
  int st = 0;
  while (::waitpid(pid_, &st, WNOHANG) == 0) {
    if (Clock::now() >= deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &st, 0);
      break;
    }
    ::usleep(20000);
  }
  status_ = StatusOf(st);
  pid_ = -1;
  return status_;
}

std::string SignalName(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGKILL:
      return "SIGKILL";
    case SIGTERM:
      return "SIGTERM";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGTRAP:
      return "SIGTRAP";
    default:
      return "signal " + std::to_string(sig);
  }
}

std::string SelfExePath() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("truegreen") : p.string();
}

}  // namespace tg::common
