#include "bench/loadgen.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <queue>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "bench/loadgen_http.h"
#include "common/file_util.h"

namespace tg::bench {
namespace {

using Clock = common::Clock;
using common::Status;

constexpr std::uint64_t kMaxResponseBytes = 512ULL << 20;    // base64 images at large batch
constexpr std::uint64_t kTimerKey = ~0ULL;                   // epoll key of the thread's timerfd
constexpr auto kSweepEvery = std::chrono::milliseconds(50);  // deadline checks and stop polling
constexpr auto kRefusedPause = std::chrono::milliseconds(10);

// Sockets, the epoll set and the timerfd: each owned by one UniqueFd.
using Fd = common::UniqueFd;

struct Endpoint {
  sockaddr_storage addr{};
  socklen_t len = 0;
  int family = AF_INET;
};

common::Result<std::vector<Endpoint>> Resolve(const Target& t) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(t.host.c_str(), t.port.c_str(), &hints, &res);
  if (rc != 0) {
    return Status::Unavailable(
        fmt::format("cannot resolve {}:{}: {}", t.host, t.port, ::gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owner(res, ::freeaddrinfo);
  std::vector<Endpoint> out;
  for (addrinfo* p = res; p != nullptr; p = p->ai_next) {
    if (p->ai_addrlen > sizeof(sockaddr_storage)) continue;
    Endpoint e;
    std::memcpy(&e.addr, p->ai_addr, p->ai_addrlen);
    e.len = p->ai_addrlen;
    e.family = p->ai_family;
    out.push_back(e);
  }
  if (out.empty()) {
    return Status::Unavailable(fmt::format("cannot resolve {}:{}: no address", t.host, t.port));
  }
  return out;
}

struct WindowData {
  Histogram latency, service;
  std::uint64_t ok = 0;
  double latency_sum_us = 0;
  std::map<std::string, std::uint64_t> errors;
};

// Per-thread recording; the mutex is uncontended except when the main thread reads a window.
struct Shard {
  std::mutex mu;
  std::map<int, WindowData> windows;
};

struct Shared {
  const LoadOptions* opt;
  Clock* clock = nullptr;  // every timestamp, deadline and schedule (LoadOptions::clock)
  std::vector<Endpoint> endpoints;
  Clock::TimePoint start, measure_start;
  Clock::Duration interval{}, timeout{};
  std::atomic<bool> done{false};
  // Every request serialized once (HTTP/1.1, keep-alive): the hot path only writes bytes.
  std::vector<std::string> raw_requests;

  bool OpenLoop() const { return opt->rate > 0; }
  Clock::TimePoint Now() const { return clock->Now(); }
  // Window of a completion time; -1 during the warm-up.
  int WindowOf(Clock::TimePoint t) const {
    if (t < measure_start) return -1;
    double s = std::chrono::duration<double>(t - measure_start).count();
    return static_cast<int>(s / opt->window_s);
  }
};

std::int64_t Micros(Clock::Duration d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

Clock::Duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::Duration>(std::chrono::duration<double>(s));
}

enum class ConnState { kIdle, kWaiting, kConnecting, kWriting, kReading };

struct Conn {
  Conn(std::uint64_t slot, int index) : slot(slot), index(index), reader(kMaxResponseBytes) {}
  std::uint64_t slot;  // position in the worker's table (the epoll key)
  int index;           // global connection number (staggers the open-loop schedule)
  Fd fd;
  ConnState state = ConnState::kIdle;
  std::size_t endpoint = 0;
  bool want_out = false;   // EPOLLOUT registered (connecting, or a partial write)
  bool wake_next = false;  // at `wake`: schedule the next request (else send the current one)
  Clock::TimePoint next_intended, intended, sent, deadline, wake;
  std::size_t seq = 0;
  const std::string* request = nullptr;
  std::size_t written = 0;
  ResponseReader reader;
};

// One thread's event loop, as wrk runs one per thread: its own epoll set, a timerfd for the
// open-loop schedule, and its share of the connections. Per request on a kept-alive connection
// the hot path is one send(), usually one recv() and a share of one epoll_wait(); the response
// is framed without copying its body, and deadlines are checked by a sweep every 50 ms rather
// than a timer per operation. Not thread-safe: everything runs on the thread that calls Run().
class Worker {
 public:
  Worker(Shared& shared, Shard& shard) : shared_(shared), shard_(shard), buf_(64 * 1024) {}

  void Add(int index) { conns_.push_back(std::make_unique<Conn>(conns_.size(), index)); }

  Status Init() {
    epoll_ = Fd(::epoll_create1(EPOLL_CLOEXEC));
    timer_ = Fd(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    if (epoll_.get() < 0 || timer_.get() < 0) {
      return Status::Unavailable(fmt::format("load: epoll/timerfd: {}", std::strerror(errno)));
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kTimerKey;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, timer_.get(), &ev) != 0) {
      return Status::Unavailable(fmt::format("load: epoll_ctl: {}", std::strerror(errno)));
    }
    return Status::Ok();
  }

  void Run() {
    for (auto& c : conns_) {
      c->seq = static_cast<std::size_t>(c->index);
      // Open loop: connection k starts k/rate late, so the schedule is staggered.
      if (shared_.OpenLoop()) {
        c->next_intended = shared_.start + Seconds(c->index / shared_.opt->rate);
      }
      Next(*c);
    }
    std::vector<epoll_event> events(256);
    Clock::TimePoint next_sweep = shared_.Now() + kSweepEvery;
    while (!shared_.done.load(std::memory_order_relaxed)) {
      ArmTimer();
      int n = ::epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()),
                           static_cast<int>(kSweepEvery.count()));
      for (int i = 0; i < n; ++i) {
        if (events[i].data.u64 == kTimerKey) {
          std::uint64_t expirations;
          [[maybe_unused]] ssize_t r = ::read(timer_.get(), &expirations, sizeof expirations);
          armed_ = Clock::TimePoint::max();
        } else {
          OnEvent(*conns_[events[i].data.u64], events[i].events);
        }
      }
      Clock::TimePoint now = shared_.Now();
      FireTimers(now);
      if (now >= next_sweep) {
        SweepDeadlines(now);
        next_sweep = now + kSweepEvery;
      }
    }
  }

 private:
  void Next(Conn& c) {
    if (shared_.done.load(std::memory_order_relaxed)) return;
    if (!shared_.OpenLoop()) return Send(c);
    c.intended = c.next_intended;
    c.next_intended += shared_.interval;
    // Late: the backlog is sent at once, and its latency counts from the intended time.
    if (c.intended <= shared_.Now()) return Send(c);
    WaitUntil(c, c.intended, false);
  }

  void WaitUntil(Conn& c, Clock::TimePoint t, bool next) {
    c.state = ConnState::kWaiting;
    c.wake = t;
    c.wake_next = next;
    wakes_.emplace(t, c.slot);
  }

  bool Valid(const std::pair<Clock::TimePoint, std::uint64_t>& w) const {
    const Conn& c = *conns_[w.second];
    return c.state == ConnState::kWaiting && c.wake == w.first;
  }

  void FireTimers(Clock::TimePoint now) {
    while (!wakes_.empty() && wakes_.top().first <= now) {
      auto w = wakes_.top();
      wakes_.pop();
      if (!Valid(w)) continue;
      Conn& c = *conns_[w.second];
      c.state = ConnState::kIdle;
      if (c.wake_next) {
        Next(c);
      } else {
        Send(c);
      }
    }
  }

  // Points the timerfd at the earliest pending wake-up, re-arming only when that moves earlier.
  // The timer is relative (the wake-up's distance from the clock's Now()), not an absolute
  // CLOCK_MONOTONIC time, so it means the same on a clock other than the real one; FireTimers
  // decides by the clock what is due, so an early or late expiry only costs a loop turn.
  void ArmTimer() {
    while (!wakes_.empty() && !Valid(wakes_.top())) wakes_.pop();
    if (wakes_.empty()) return;
    Clock::TimePoint t = wakes_.top().first;
    if (t >= armed_) return;
    const auto ns = std::max<std::int64_t>(
        1, std::chrono::duration_cast<std::chrono::nanoseconds>(t - shared_.Now()).count());
    itimerspec its{};
    its.it_value.tv_sec = static_cast<time_t>(ns / 1000000000);
    its.it_value.tv_nsec = static_cast<long>(ns % 1000000000);  // NOLINT(runtime/int)
    ::timerfd_settime(timer_.get(), 0, &its, nullptr);
    armed_ = t;
  }

  void SweepDeadlines(Clock::TimePoint now) {
    for (auto& c : conns_) {
      bool busy = c->state == ConnState::kConnecting || c->state == ConnState::kWriting ||
                  c->state == ConnState::kReading;
      if (busy && now >= c->deadline) Fail(*c, "timeout", c->state == ConnState::kConnecting);
    }
  }

  void Send(Conn& c) {
    if (shared_.done.load(std::memory_order_relaxed)) return;
    if (c.fd.get() < 0) return Connect(c);
    StartWrite(c);
  }

  bool SetEvents(Conn& c, bool out) {
    epoll_event ev{};
    ev.events = EPOLLIN | (out ? EPOLLOUT : 0u);
    ev.data.u64 = c.slot;
    c.want_out = out;
    return ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev) == 0;
  }

  void Connect(Conn& c) {
    const Endpoint& ep = shared_.endpoints[c.endpoint];
    c.fd = Fd(::socket(ep.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (c.fd.get() < 0) return Fail(c, "connection", true);
    int one = 1;
    ::setsockopt(c.fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT;
    ev.data.u64 = c.slot;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, c.fd.get(), &ev) != 0) {
      return Fail(c, "connection", true);
    }
    c.want_out = true;
    c.state = ConnState::kConnecting;
    c.deadline = shared_.Now() + shared_.timeout;
    if (::connect(c.fd.get(), reinterpret_cast<const sockaddr*>(&ep.addr), ep.len) == 0) {
      return Connected(c);
    }
    if (errno != EINPROGRESS) ConnectFailed(c);
  }

  void ConnectFailed(Conn& c) {
    Close(c);
    if (c.endpoint + 1 < shared_.endpoints.size()) {
      ++c.endpoint;  // e.g. "localhost": ::1 refused, 127.0.0.1 next
      return Connect(c);
    }
    c.endpoint = 0;
    Fail(c, "connection", true);
  }

  void Connected(Conn& c) {
    if (!SetEvents(c, false)) return Fail(c, "connection", true);
    StartWrite(c);
  }

  void StartWrite(Conn& c) {
    const std::vector<std::string>& raw = shared_.raw_requests;
    c.request = &raw[c.seq++ % raw.size()];
    c.written = 0;
    c.sent = shared_.Now();
    if (!shared_.OpenLoop()) c.intended = c.sent;
    c.deadline = c.sent + shared_.timeout;
    c.reader.Reset();
    c.state = ConnState::kWriting;
    Write(c);
  }

  void Write(Conn& c) {
    const std::string& r = *c.request;
    while (c.written < r.size()) {
      ssize_t k = ::send(c.fd.get(), r.data() + c.written, r.size() - c.written, MSG_NOSIGNAL);
      if (k > 0) {
        c.written += static_cast<std::size_t>(k);
      } else if (k < 0 && errno == EINTR) {
        continue;
      } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (!c.want_out && !SetEvents(c, true)) Fail(c, "connection", false);
        return;
      } else {
        return Fail(c, "connection", false);
      }
    }
    if (c.want_out && !SetEvents(c, false)) return Fail(c, "connection", false);
    c.state = ConnState::kReading;
  }

  void OnEvent(Conn& c, std::uint32_t events) {
    switch (c.state) {
      case ConnState::kConnecting: {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(c.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0 || (events & (EPOLLERR | EPOLLHUP)) != 0) return ConnectFailed(c);
        if ((events & EPOLLOUT) != 0) Connected(c);
        return;
      }
      case ConnState::kWriting:
        if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) != 0) Write(c);
        // A server may answer (413, then close) before it has read the whole request.
        if (c.state == ConnState::kWriting && (events & EPOLLIN) != 0) Read(c);
        return;
      case ConnState::kReading:
        return Read(c);
      default:
        // An idle keep-alive connection became readable: the server closed it (or sent bytes
        // nobody asked for). Drop it; the next request reconnects.
        Close(c);
        return;
    }
  }

  void Read(Conn& c) {
    for (;;) {
      ssize_t k = ::recv(c.fd.get(), buf_.data(), buf_.size(), 0);
      if (k > 0) {
        std::size_t used = 0;
        auto n = static_cast<std::size_t>(k);
        ResponseReader::State s = c.reader.Feed(buf_.data(), n, &used);
        if (s == ResponseReader::State::kDone) return Complete(c, used < n);
        if (s == ResponseReader::State::kError) return Fail(c, "connection", false);
        // Level-triggered: a short read means the socket is drained; epoll reports the rest.
        if (n < buf_.size()) return;
      } else if (k == 0) {
        if (c.reader.Eof() == ResponseReader::State::kDone) return Complete(c, false);
        return Fail(c, "connection", false);
      } else if (errno == EINTR) {
        continue;
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return;
      } else {
        return Fail(c, "connection", false);
      }
    }
  }

  // Caller holds shard_.mu. Map nodes never move, so the pointer stays valid.
  WindowData& WindowAt(int w) {
    if (w != cached_window_) {
      cached_ = &shard_.windows[w];
      cached_window_ = w;
    }
    return *cached_;
  }

  void Complete(Conn& c, bool extra_bytes) {
    Clock::TimePoint now = shared_.Now();
    int code = c.reader.status();
    int w = shared_.WindowOf(now);
    if (w >= 0) {
      std::lock_guard<std::mutex> lock(shard_.mu);
      WindowData& d = WindowAt(w);
      if (code >= 200 && code < 300) {
        std::int64_t lat = Micros(now - c.intended);
        d.latency.Record(lat);
        d.service.Record(Micros(now - c.sent));
        d.latency_sum_us += static_cast<double>(lat);
        ++d.ok;
      } else {
        ++d.errors[fmt::format("http_{}", code)];
      }
    }
    // Reuse only a connection whose state is known: keep-alive, request fully written, and no
    // bytes beyond the response.
    bool reuse = c.reader.keep_alive() && !extra_bytes && c.written == c.request->size();
    c.state = ConnState::kIdle;
    if (!reuse) Close(c);
    Next(c);
  }

  void Fail(Conn& c, const char* kind, bool connecting) {
    if (shared_.done.load(std::memory_order_relaxed)) return;
    Clock::TimePoint now = shared_.Now();
    int w = shared_.WindowOf(now);
    if (w >= 0) {
      std::lock_guard<std::mutex> lock(shard_.mu);
      ++WindowAt(w).errors[kind];
    }
    Close(c);
    if (shared_.OpenLoop()) {
      // Deferred to the loop, so a server refusing every connection cannot recurse here.
      WaitUntil(c, now, true);
    } else if (connecting) {
      // A refused connection in closed loop would otherwise spin; retry after a short pause.
      WaitUntil(c, now + kRefusedPause, true);
    } else {
      Next(c);
    }
  }

  void Close(Conn& c) {
    c.fd.Close();  // closing also removes it from the epoll set
    c.want_out = false;
    c.state = ConnState::kIdle;
  }

  Shared& shared_;
  Shard& shard_;
  Fd epoll_, timer_;
  std::vector<std::unique_ptr<Conn>> conns_;
  using Wake = std::pair<Clock::TimePoint, std::uint64_t>;
  std::priority_queue<Wake, std::vector<Wake>, std::greater<>> wakes_;
  Clock::TimePoint armed_ = Clock::TimePoint::max();
  std::vector<char> buf_;  // read buffer shared by this thread's connections
  int cached_window_ = -1;
  WindowData* cached_ = nullptr;
};

WindowStat MergeWindow(std::vector<std::unique_ptr<Shard>>& shards, int w, double seconds,
                       WindowData* into) {
  std::uint64_t ok = 0;
  double sum = 0;
  for (auto& s : shards) {
    std::lock_guard<std::mutex> lock(s->mu);
    auto it = s->windows.find(w);
    if (it == s->windows.end()) continue;
    ok += it->second.ok;
    sum += it->second.latency_sum_us;
    if (into != nullptr) {
      into->latency.Merge(it->second.latency);
      into->service.Merge(it->second.service);
      into->ok += it->second.ok;
      for (const auto& [k, v] : it->second.errors) into->errors[k] += v;
    }
  }
  WindowStat st;
  st.throughput = seconds > 0 ? static_cast<double>(ok) / seconds : 0;
  st.latency_us = ok > 0 ? sum / static_cast<double>(ok) : 0;
  return st;
}

// User + system CPU of the whole process (all generator threads), in seconds.
double ProcessCpuSeconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

// HTTP/1.1 keep-alive request bytes, built once per run so the hot path only writes them.
std::vector<std::string> SerializeRequests(const LoadOptions& o) {
  std::vector<std::string> out;
  for (const HttpRequest& r : o.requests) {
    std::string path = o.target.base + r.path;
    if (path.empty()) path = "/";
    std::string raw =
        fmt::format("{} {} HTTP/1.1\r\nHost: {}:{}\r\nUser-Agent: truegreen-bench\r\n", r.method,
                    path, o.target.host, o.target.port);
    if (!r.body.empty() || r.method != "GET") {
      raw += fmt::format("Content-Type: application/json\r\nContent-Length: {}\r\n", r.body.size());
    }
    out.push_back(raw + "\r\n" + r.body);
  }
  return out;
}

}  // namespace

common::Result<Target> ParseUrl(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) {
    return Status::InvalidArg(fmt::format(
        "--url \"{}\": expected http://HOST[:PORT][/PREFIX] (https is not supported)", url));
  }
  std::string rest = url.substr(scheme.size());
  Target t;
  std::size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  if (slash != std::string::npos) t.base = rest.substr(slash);
  while (!t.base.empty() && t.base.back() == '/') t.base.pop_back();
  // An IPv6 literal is bracketed (RFC 3986 section 3.2.2): its colons are not the port's.
  std::size_t colon = hostport.rfind(':');
  if (!hostport.empty() && hostport[0] == '[') {
    const std::size_t close = hostport.find(']');
    if (close == std::string::npos || (close + 1 < hostport.size() && hostport[close + 1] != ':')) {
      return Status::InvalidArg(
          fmt::format("--url \"{}\": an IPv6 address must be written [ADDRESS]:PORT", url));
    }
    colon = close + 1 < hostport.size() ? close + 1 : std::string::npos;
    t.host = hostport.substr(1, close - 1);
  } else {
    t.host = hostport.substr(0, colon);
  }
  t.port = colon == std::string::npos ? "80" : hostport.substr(colon + 1);
  if (t.host.empty() || t.port.empty() || t.port.size() > 5 ||
      t.port.find_first_not_of("0123456789") != std::string::npos) {
    return Status::InvalidArg(fmt::format("--url \"{}\": host or port missing or invalid", url));
  }
  if (const int port = std::stoi(t.port); port < 1 || port > 65535) {
    return Status::InvalidArg(
        fmt::format("--url \"{}\": port {} is outside 1..65535", url, t.port));
  }
  // A host that no resolver could answer is a typing error, not an unreachable server: a name
  // (letters, digits, '-', '.', '_') or, bracketed, an IPv6 address (hex digits, ':', '.').
  const bool bracketed = hostport[0] == '[';
  const char* allowed = bracketed ? "0123456789abcdefABCDEF:." : nullptr;
  for (const char c : t.host) {
    const bool ok = allowed != nullptr ? std::strchr(allowed, c) != nullptr
                                       : (std::isalnum(static_cast<unsigned char>(c)) != 0 ||
                                          c == '-' || c == '.' || c == '_');
    if (!ok || c == '\0') {
      return Status::InvalidArg(
          fmt::format("--url \"{}\": host \"{}\" is not a host name or an {} address", url, t.host,
                      bracketed ? "IPv6" : "IPv4"));
    }
  }
  return t;
}

common::Result<LoadResult> RunLoad(const LoadOptions& o) {
  if (o.requests.empty() || o.connections < 1 || o.threads < 1 || o.window_s <= 0 ||
      o.max_trials < 1) {
    return Status::InvalidArg("load: need requests, connections >= 1, threads >= 1, window > 0");
  }
  Shared shared;
  shared.opt = &o;
  shared.clock = o.clock != nullptr ? o.clock : common::RealClock();
  TG_ASSIGN_OR_RETURN(shared.endpoints, Resolve(o.target));
  shared.raw_requests = SerializeRequests(o);
  shared.timeout = Seconds(o.timeout_s);
  if (o.rate > 0) shared.interval = Seconds(o.connections / o.rate);
  int threads = std::min(o.threads, o.connections);
  std::vector<std::unique_ptr<Shard>> shards;
  std::vector<std::unique_ptr<Worker>> workers;
  for (int t = 0; t < threads; ++t) {
    shards.push_back(std::make_unique<Shard>());
    workers.push_back(std::make_unique<Worker>(shared, *shards.back()));
    TG_RETURN_IF_ERROR(workers.back()->Init());
  }
  for (int c = 0; c < o.connections; ++c) workers[c % threads]->Add(c);
  shared.start = shared.Now();
  shared.measure_start = shared.start + Seconds(o.warmup_s);
  std::vector<std::thread> running;
  for (auto& w : workers) running.emplace_back([wp = w.get()] { wp->Run(); });

  std::vector<double> cpu;  // process CPU at the measure start and at the end of each window
  WindowHooks hooks;
  hooks.measure_started = [&] { cpu.push_back(ProcessCpuSeconds()); };
  hooks.read_window = [&](int index, double seconds) {
    cpu.push_back(ProcessCpuSeconds());
    return MergeWindow(shards, index, seconds, nullptr);
  };
  hooks.on_window = o.on_window;
  const WindowOptions wo{o.warmup_s,       o.window_s,  o.max_trials,
                         o.stable_windows, o.stability, o.stop};
  WindowOutcome w = RunWindows(wo, *shared.clock, shared.start, hooks);
  shared.done = true;
  for (auto& t : running) t.join();

  LoadResult out;
  out.interrupted = w.interrupted;
  out.point.windows = std::move(w.windows);
  out.point.stable = w.stable;
  out.point.trials = w.complete;
  out.point.open_loop = o.rate > 0;
  out.measured_begin = w.measured_begin;
  out.measured_end = w.measured_end;
  out.point.measured_s = w.measured_s;
  WindowData merged;
  for (int i = w.first; i < w.complete; ++i) MergeWindow(shards, i, o.window_s, &merged);
  if (w.partial) MergeWindow(shards, 0, 0, &merged);
  std::uint64_t requests = merged.ok;
  for (const auto& [kind, n] : merged.errors) requests += n;
  if (w.complete > 0 && requests > 0) {
    out.cpu_s = cpu[static_cast<std::size_t>(w.complete)] - cpu[static_cast<std::size_t>(w.first)];
    out.point.client_cpu_us_per_request = out.cpu_s * 1e6 / static_cast<double>(requests);
  }
  out.point.latency = std::move(merged.latency);
  out.point.service = std::move(merged.service);
  out.point.ok = merged.ok;
  out.point.errors = std::move(merged.errors);
  return out;
}

}  // namespace tg::bench
