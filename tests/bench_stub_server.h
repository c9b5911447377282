// A stub inference server for the bench tests: loopback only, ephemeral port, one thread per
// connection (tests use a handful). It answers the OpenAI images endpoint, KServe v2 infer,
// /metrics (Triton names, counters advance with requests), /v1/capabilities and /readyz, with a
// configurable service delay, and can stall exactly once for `stall_ms` on the first request that
// arrives `stall_after_ms` after Arm(). Owns its threads; Stop() (or the destructor) joins them
// once the clients have closed their connections.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tg::testing {

class StubServer {
 public:
  explicit StubServer(int delay_ms = 0, int port = 0) : delay_ms_(delay_ms), acceptor_(ioc_) {
    namespace asio = boost::asio;
    asio::ip::tcp::endpoint ep(asio::ip::make_address("127.0.0.1"),
                               static_cast<unsigned short>(port));
    acceptor_.open(ep.protocol());
    acceptor_.set_option(asio::socket_base::reuse_address(true));
    acceptor_.bind(ep);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }
  ~StubServer() { Stop(); }
  StubServer(const StubServer&) = delete;
  StubServer& operator=(const StubServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void set_delay_ms(int ms) { delay_ms_ = ms; }
  // false: /metrics answers 404 (a server without Prometheus metrics).
  void set_serve_metrics(bool on) { serve_metrics_ = on; }
  // Arms the one-time stall.
  void Arm(int stall_after_ms, int stall_ms) {
    armed_at_ = std::chrono::steady_clock::now();
    stall_after_ms_ = stall_after_ms;
    stall_ms_ = stall_ms;
    stalled_ = false;
    armed_ = true;
  }
  std::uint64_t requests() const { return requests_.load(); }
  // The target and body of the last POST ("" before any).
  std::string last_post() {
    std::lock_guard<std::mutex> lock(post_mu_);
    return last_post_;
  }

  void Stop() {
    if (stopping_.exchange(true)) return;
    // Wake the blocking accept with a connection of our own.
    try {
      boost::asio::io_context ioc;
      boost::asio::ip::tcp::socket s(ioc);
      s.connect({boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port_)});
    } catch (...) {
    }
    accept_thread_.join();
    boost::system::error_code ignored;
    acceptor_.close(ignored);  // later connects are refused
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& t : conn_threads_) t.join();
    conn_threads_.clear();
  }

 private:
  void AcceptLoop() {
    while (true) {
      boost::asio::ip::tcp::socket s(ioc_);
      boost::system::error_code ec;
      acceptor_.accept(s, ec);
      if (stopping_.load() || ec) return;
      std::lock_guard<std::mutex> lock(mu_);
      conn_threads_.emplace_back([this, sock = std::move(s)]() mutable { Serve(std::move(sock)); });
    }
  }

  std::string Respond(const std::string& target) {
    if (target == "/metrics") {
      std::uint64_t n = requests_.load();
      return "# TYPE nv_gpu_utilization gauge\nnv_gpu_utilization{gpu_uuid=\"GPU-0\"} 0.75\n"
             "nv_gpu_utilization{gpu_uuid=\"GPU-1\"} 0.25\n"
             "nv_gpu_memory_used_bytes{gpu_uuid=\"GPU-0\"} 1000\n"
             "truegreen_gpu_pcie_tx_bytes_per_second{gpu_uuid=\"GPU-0\"} 3000\n"
             "truegreen_gpu_pcie_tx_bytes_per_second{gpu_uuid=\"GPU-1\"} 1000\n"
             "truegreen_gpu_pcie_rx_bytes_per_second{gpu_uuid=\"GPU-0\"} 500\n"
             "nv_inference_count{model=\"m\"} " +
             std::to_string(n) +
             "\n"
             "nv_inference_queue_duration_us{model=\"m\"} " +
             std::to_string(n * 100) +
             "\n"
             "nv_inference_compute_infer_duration_us{model=\"m\"} " +
             std::to_string(n * 300) +
             "\n"
             "truegreen_gate_status{gate=\"canary\"} 1\n";
    }
    if (target == "/v1/capabilities") return R"({"verdict":"pass","snapshot":{"gpu":"stub"}})";
    if (target == "/readyz") return "ready";
    return R"({"data":[{"b64_json":"iVBORw0KGgo="}]})";
  }

  void MaybeStall() {
    if (!armed_.load()) return;
    auto since = std::chrono::steady_clock::now() - armed_at_;
    if (since < std::chrono::milliseconds(stall_after_ms_)) return;
    if (stalled_.exchange(true)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(stall_ms_));
  }

  void Serve(boost::asio::ip::tcp::socket sock) {
    namespace http = boost::beast::http;
    boost::beast::flat_buffer buf;
    while (!stopping_.load()) {
      http::request<http::string_body> req;
      boost::system::error_code ec;
      http::read(sock, buf, req, ec);
      if (ec) return;
      std::string target(req.target());
      bool work = req.method() == http::verb::post;
      if (work) {
        {
          std::lock_guard<std::mutex> lock(post_mu_);
          last_post_ = target + "\n" + req.body();
        }
        MaybeStall();
        if (delay_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
        ++requests_;
      }
      bool missing = target == "/metrics" && !serve_metrics_.load();
      http::response<http::string_body> res{missing ? http::status::not_found : http::status::ok,
                                            req.version()};
      res.set(http::field::content_type, target == "/metrics" ? "text/plain" : "application/json");
      res.body() = Respond(target);
      res.keep_alive(req.keep_alive());
      res.prepare_payload();
      http::write(sock, res, ec);
      if (ec || !req.keep_alive()) return;
    }
  }

  std::atomic<int> delay_ms_;
  std::atomic<bool> serve_metrics_{true};
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  int port_ = 0;
  std::thread accept_thread_;
  std::mutex mu_;
  std::vector<std::thread> conn_threads_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> armed_{false}, stalled_{false};
  std::chrono::steady_clock::time_point armed_at_;
  int stall_after_ms_ = 0, stall_ms_ = 0;
  std::atomic<std::uint64_t> requests_{0};
  std::mutex post_mu_;
  std::string last_post_;
};

}  // namespace tg::testing
