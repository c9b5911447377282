#include "bench/server_metrics.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

namespace tg::bench {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

std::optional<double> Get(const MetricValues& v, const std::string& name) {
  auto it = v.sum.find(name);
  if (it == v.sum.end()) return std::nullopt;
  return it->second;
}

}  // namespace

common::Result<HttpResponse> HttpGet(const Target& target, const std::string& path,
                                     double timeout_s) {
  try {
    asio::io_context ioc;
    beast::tcp_stream stream(ioc);
    auto timeout =
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
    tcp::resolver resolver(ioc);
    stream.expires_after(timeout);
    stream.connect(resolver.resolve(target.host, target.port));
    http::request<http::empty_body> req{http::verb::get, target.base + path, 11};
    req.set(http::field::host, target.host + ":" + target.port);
    req.set(http::field::user_agent, "truegreen-bench");
    stream.expires_after(timeout);
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64ULL << 20);
    http::read(stream, buffer, parser);
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    return HttpResponse{static_cast<int>(parser.get().result_int()), parser.get().body()};
  } catch (const boost::system::system_error& e) {
    return common::Status::Unavailable(fmt::format("GET http://{}:{}{}{}: {}", target.host,
                                                   target.port, target.base, path,
                                                   e.code().message()));
  }
}

MetricValues ParsePrometheus(const std::string& text) {
  MetricValues out;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::size_t name_end = line.find_first_of("{ ");
    if (name_end == std::string::npos || name_end == 0) continue;
    std::string name = line.substr(0, name_end);
    std::size_t value_pos = name_end;
    if (line[name_end] == '{') {
      // Label values may contain '}' inside quotes; find the closing brace outside quotes.
      bool quoted = false;
      for (value_pos = name_end + 1; value_pos < line.size(); ++value_pos) {
        char c = line[value_pos];
        if (c == '\\' && quoted)
          ++value_pos;
        else if (c == '"')
          quoted = !quoted;
        else if (c == '}' && !quoted)
          break;
      }
      ++value_pos;
    }
    if (value_pos >= line.size()) continue;
    std::stringstream vs(line.substr(value_pos));
    double v = 0;
    if (!(vs >> v) || std::isnan(v)) continue;
    out.sum[name] += v;
    auto it = out.min.find(name);
    out.min[name] = it == out.min.end() ? v : std::min(it->second, v);
    ++out.series[name];
  }
  return out;
}

GpuSide AggregateGpu(const std::vector<MetricsSample>& samples, Clock::time_point begin,
                     Clock::time_point end, Clock::time_point origin) {
  GpuSide g;
  const MetricsSample* baseline = nullptr;
  const MetricsSample* last = nullptr;
  double util_sum = 0;
  int util_n = 0;
  double tx_sum = 0, rx_sum = 0;
  int tx_n = 0, rx_n = 0;
  for (const auto& s : samples) {
    if (s.t < begin) {
      baseline = &s;
      continue;
    }
    if (s.t > end) break;
    last = &s;
    if (auto u = Get(s.v, "nv_gpu_utilization")) {
      double mean = *u / std::max(1, s.v.series.at("nv_gpu_utilization"));
      util_sum += mean;
      ++util_n;
      g.utilization_series.emplace_back(std::chrono::duration<double>(s.t - origin).count(), mean);
    }
    if (auto m = Get(s.v, "nv_gpu_memory_used_bytes")) {
      g.memory_used_bytes = std::max(g.memory_used_bytes.value_or(0), *m);
    }
    if (auto tx = Get(s.v, "truegreen_gpu_pcie_tx_bytes_per_second")) {
      tx_sum += *tx;
      ++tx_n;
    }
    if (auto rx = Get(s.v, "truegreen_gpu_pcie_rx_bytes_per_second")) {
      rx_sum += *rx;
      ++rx_n;
    }
    if (s.v.min.count("truegreen_gate_status") != 0) {
      bool ok = s.v.min.at("truegreen_gate_status") >= 1;
      g.gates_ok = g.gates_ok.value_or(true) && ok;
    }
  }
  if (last == nullptr) return g;
  g.source = "server /metrics";
  if (util_n > 0) g.utilization = util_sum / util_n;
  if (tx_n > 0) g.pcie_tx_bytes_per_s = tx_sum / tx_n;
  if (rx_n > 0) g.pcie_rx_bytes_per_s = rx_sum / rx_n;
  if (baseline != nullptr) {
    auto count0 = Get(baseline->v, "nv_inference_count"),
         count1 = Get(last->v, "nv_inference_count");
    if (count0 && count1 && *count1 > *count0) {
      double n = *count1 - *count0;
      auto q0 = Get(baseline->v, "nv_inference_queue_duration_us");
      auto q1 = Get(last->v, "nv_inference_queue_duration_us");
      if (q0 && q1) g.queue_us_per_req = (*q1 - *q0) / n;
      auto c0 = Get(baseline->v, "nv_inference_compute_infer_duration_us");
      auto c1 = Get(last->v, "nv_inference_compute_infer_duration_us");
      if (c0 && c1) g.compute_us_per_req = (*c1 - *c0) / n;
    }
  }
  return g;
}

void MetricsScraper::Start() {
  thread_ = std::thread([this] {
    while (!stop_.load()) {
      auto r = HttpGet(target_, "/metrics", 2.0);
      if (r.ok() && r->status == 200) samples_.push_back({Clock::now(), ParsePrometheus(r->body)});
      for (int i = 0; i < static_cast<int>(interval_s_ * 50) && !stop_.load(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  });
}

void MetricsScraper::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

}  // namespace tg::bench
