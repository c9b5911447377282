#include "bench/loadgen.h"

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

namespace tg::bench {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using common::Status;

constexpr std::uint64_t kMaxResponseBytes = 512ULL << 20;  // base64 images at large batch

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
  tcp::resolver::results_type endpoints;
  Clock::time_point start, measure_start;
  std::atomic<bool> done{false};
  // Every request serialized once (HTTP/1.1, keep-alive): the hot path only writes bytes.
  std::vector<std::string> raw_requests;

  // Window of a completion time; -1 during the warm-up.
  int WindowOf(Clock::time_point t) const {
    if (t < measure_start) return -1;
    double s = std::chrono::duration<double>(t - measure_start).count();
    return static_cast<int>(s / opt->window_s);
  }
};

std::int64_t Micros(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(asio::io_context& ioc, Shared& shared, Shard& shard, int index)
      : shared_(shared), shard_(shard), stream_(ioc), timer_(ioc), index_(index) {
    const LoadOptions& o = *shared.opt;
    if (o.rate > 0) {
      interval_ = std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(o.connections / o.rate));
      next_intended_ = shared.start + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(index / o.rate));
    }
    seq_ = static_cast<std::size_t>(index);
  }

  void Start() { Next(); }

 private:
  bool OpenLoop() const { return shared_.opt->rate > 0; }

  void Next() {
    if (shared_.done.load(std::memory_order_relaxed)) return;
    if (!OpenLoop()) {
      Send();
      return;
    }
    intended_ = next_intended_;
    next_intended_ += interval_;
    if (intended_ <= Clock::now()) {
      Send();  // late: the backlog is sent at once, and its latency counts from intended_
      return;
    }
    timer_.expires_at(intended_);
    timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec) self->Send();
    });
  }

  void Send() {
    if (shared_.done.load(std::memory_order_relaxed)) return;
    if (connected_) {
      Write();
      return;
    }
    SetDeadline();
    stream_.async_connect(shared_.endpoints,
                          [self = shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
                            if (ec) return self->Fail(ec, true);
                            self->connected_ = true;
                            self->Write();
                          });
  }

  void SetDeadline() {
    stream_.expires_after(std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(shared_.opt->timeout_s)));
  }

  void Write() {
    const std::vector<std::string>& raw = shared_.raw_requests;
    const std::string& bytes = raw[seq_++ % raw.size()];
    sent_ = Clock::now();
    if (!OpenLoop()) intended_ = sent_;
    SetDeadline();
    asio::async_write(stream_, asio::buffer(bytes),
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        if (ec) return self->Fail(ec, false);
                        self->Read();
                      });
  }

  void Read() {
    parser_.emplace();
    parser_->body_limit(kMaxResponseBytes);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (ec) return self->Fail(ec, false);
                       self->Done();
                     });
  }

  void Done() {
    Clock::time_point now = Clock::now();
    const auto& res = parser_->get();
    unsigned code = res.result_int();
    int w = shared_.WindowOf(now);
    if (w >= 0) {
      std::lock_guard<std::mutex> lock(shard_.mu);
      WindowData& d = shard_.windows[w];
      if (code >= 200 && code < 300) {
        std::int64_t lat = Micros(now - intended_);
        d.latency.Record(lat);
        d.service.Record(Micros(now - sent_));
        d.latency_sum_us += static_cast<double>(lat);
        ++d.ok;
      } else {
        ++d.errors[fmt::format("http_{}", code)];
      }
    }
    if (!res.keep_alive()) Close();
    Next();
  }

  void Fail(beast::error_code ec, bool connecting) {
    Clock::time_point now = Clock::now();
    if (shared_.done.load(std::memory_order_relaxed)) return;
    int w = shared_.WindowOf(now);
    if (w >= 0) {
      std::lock_guard<std::mutex> lock(shard_.mu);
      ++shard_.windows[w].errors[ec == beast::error::timeout ? "timeout" : "connection"];
    }
    Close();
    if (!connecting || OpenLoop()) {
      Next();
      return;
    }
    // A refused connection in closed loop would otherwise spin; retry after a short pause.
    timer_.expires_after(std::chrono::milliseconds(10));
    timer_.async_wait([self = shared_from_this()](beast::error_code e) {
      if (!e) self->Next();
    });
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
    buffer_.clear();
    connected_ = false;
  }

  Shared& shared_;
  Shard& shard_;
  beast::tcp_stream stream_;
  asio::steady_timer timer_;
  [[maybe_unused]] int index_;
  beast::flat_buffer buffer_;
  std::optional<http::response_parser<http::string_body>> parser_;
  Clock::duration interval_{};
  Clock::time_point next_intended_, intended_, sent_;
  std::size_t seq_ = 0;
  bool connected_ = false;
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

// Sleeps until `t` in short steps so SIGINT is noticed quickly; false when stopped.
bool SleepUntil(Clock::time_point t, const std::atomic<bool>* stop) {
  while (Clock::now() < t) {
    if (stop != nullptr && stop->load()) return false;
    std::this_thread::sleep_for(
        std::min<Clock::duration>(t - Clock::now(), std::chrono::milliseconds(20)));
  }
  return true;
}

// HTTP/1.1 keep-alive request bytes, built once per run so the hot path only writes them.
std::vector<std::string> SerializeRequests(const LoadOptions& o) {
  std::vector<std::string> out;
  for (const HttpRequest& r : o.requests) {
    std::string raw =
        fmt::format("{} {}{} HTTP/1.1\r\nHost: {}:{}\r\nUser-Agent: truegreen-bench\r\n", r.method,
                    o.target.base, r.path, o.target.host, o.target.port);
    if (!r.body.empty() || r.method != "GET") {
      raw += fmt::format("Content-Type: application/json\r\nContent-Length: {}\r\n", r.body.size());
    }
    out.push_back(raw + "\r\n" + r.body);
  }
  return out;
}

}  // namespace

bool IsStable(const std::vector<WindowStat>& windows, int n, double tolerance) {
  if (n <= 0 || static_cast<int>(windows.size()) < n) return false;
  double tmin = 1e300, tmax = 0, lmin = 1e300, lmax = 0;
  for (auto it = windows.end() - n; it != windows.end(); ++it) {
    tmin = std::min(tmin, it->throughput);
    tmax = std::max(tmax, it->throughput);
    lmin = std::min(lmin, it->latency_us);
    lmax = std::max(lmax, it->latency_us);
  }
  if (tmin <= 0 || lmin <= 0) return false;
  return tmax / tmin <= 1 + tolerance && lmax / lmin <= 1 + tolerance;
}

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
  std::size_t colon = hostport.rfind(':');
  t.host = hostport.substr(0, colon);
  t.port = colon == std::string::npos ? "80" : hostport.substr(colon + 1);
  if (t.host.empty() || t.port.empty() ||
      t.port.find_first_not_of("0123456789") != std::string::npos) {
    return Status::InvalidArg(fmt::format("--url \"{}\": host or port missing or invalid", url));
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
  {
    asio::io_context ioc;
    tcp::resolver resolver(ioc);
    beast::error_code ec;
    shared.endpoints = resolver.resolve(o.target.host, o.target.port, ec);
    if (ec) {
      return Status::Unavailable(
          fmt::format("cannot resolve {}:{}: {}", o.target.host, o.target.port, ec.message()));
    }
  }
  shared.raw_requests = SerializeRequests(o);
  int threads = std::min(o.threads, o.connections);
  std::vector<std::unique_ptr<Shard>> shards;
  std::vector<std::unique_ptr<asio::io_context>> iocs;
  for (int t = 0; t < threads; ++t) {
    shards.push_back(std::make_unique<Shard>());
    iocs.push_back(std::make_unique<asio::io_context>(1));
  }
  shared.start = Clock::now();
  shared.measure_start = shared.start + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(o.warmup_s));
  for (int c = 0; c < o.connections; ++c) {
    int t = c % threads;
    std::make_shared<Connection>(*iocs[t], shared, *shards[t], c)->Start();
  }
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) workers.emplace_back([&, t] { iocs[t]->run(); });

  LoadResult out;
  auto window =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.window_s));
  bool interrupted = !SleepUntil(shared.measure_start, o.stop);
  Clock::time_point partial_end = Clock::now();
  int complete = 0;
  while (!interrupted) {
    Clock::time_point end = shared.measure_start + window * (complete + 1);
    if (!SleepUntil(end, o.stop)) {
      interrupted = true;
      partial_end = Clock::now();
      break;
    }
    out.point.windows.push_back(MergeWindow(shards, complete, o.window_s, nullptr));
    ++complete;
    out.point.stable = IsStable(out.point.windows, o.stable_windows, o.stability);
    if (o.on_window) o.on_window(complete, out.point.stable);
    if (out.point.stable || complete >= o.max_trials) break;
  }
  shared.done = true;
  for (auto& ioc : iocs) ioc->stop();
  for (auto& w : workers) w.join();

  out.interrupted = interrupted;
  out.point.trials = complete;
  out.point.open_loop = o.rate > 0;
  WindowData merged;
  int first = std::max(0, complete - std::max(1, o.stable_windows));
  for (int w = first; w < complete; ++w) MergeWindow(shards, w, o.window_s, &merged);
  out.measured_begin = shared.measure_start + window * first;
  out.measured_end = shared.measure_start + window * complete;
  out.point.measured_s = o.window_s * (complete - first);
  if (complete == 0 && partial_end > shared.measure_start) {
    // Interrupted inside the first window: report the partial window with its real length.
    MergeWindow(shards, 0, 0, &merged);
    out.measured_end = partial_end;
    out.point.measured_s =
        std::chrono::duration<double>(partial_end - shared.measure_start).count();
  }
  out.point.latency = std::move(merged.latency);
  out.point.service = std::move(merged.service);
  out.point.ok = merged.ok;
  out.point.errors = std::move(merged.errors);
  return out;
}

}  // namespace tg::bench
