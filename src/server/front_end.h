// The request front end of the server (server/ only): every HTTP request enters through Handle and
// every answer leaves through Finish. Handle names the request (X-Request-Id, or one of ours),
// checks the bearer token of the routes that need it, refuses work while the server drains, and
// runs the route; Finish records the request's metrics, writes its access-log line, sets
// X-Request-Id (and Connection: close while draining) and hands the response to the transport.
// Between the two a request is "in flight" (truegreen_http_requests_in_flight).
//
// Ownership: FrontEnd owns the access log (AccessLog, the one owner of its stream) and the
// per-status counters; it reads the route table, readiness and configuration it is given, which
// must outlive it. Failure: an access log that cannot be opened is logged and left off; a handler's
// error becomes its API's error answer here (ErrorFor), the one place that happens for a routed
// request. Thread safety: Handle and Finish may be called from any thread at once.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "common/file_handles.h"
#include "server/http.h"
#include "server/metrics.h"
#include "server/readiness.h"
#include "server/router.h"
#include "server/serve_config.h"

namespace tg::server {

// The JSON-lines access log: one line per answered request, appended and flushed whole under one
// lock. "-" writes to a stream of its own on a copy of stderr, "off" writes nothing, any other
// value is a regular file opened for appending (a FIFO or device is refused: off, and problem()
// says why).
class AccessLog {
 public:
  explicit AccessLog(const std::string& where);
  bool on() const { return static_cast<bool>(file_); }
  const std::string& problem() const { return problem_; }  // "" unless `where` was refused
  void Write(const std::string& line);                     // `line` without its "\n"

 private:
  common::UniqueFile file_;
  std::string problem_;
  std::mutex mu_;
};

class FrontEnd {
 public:
  // `log` writes one operational line (the server's Log).
  FrontEnd(const ServeConfig& config, const RouteTable& routes, const Readiness& readiness,
           Metrics& metrics, const std::function<void(const std::string&)>& log);

  // The HTTP handler (see the file comment).
  void Handle(HttpRequest req, Responder respond);
  // Sends the answer of a request (see the file comment); called once per request, by Handle for
  // an answer made at once, by a lane for a queued one.
  void Finish(const std::shared_ptr<RequestCtx>& ctx, const Responder& respond, HttpResponse r);

  int in_flight() const { return in_flight_.load(); }
  // Sets truegreen_http_requests_in_flight and truegreen_http_requests_total{code} (each render).
  void Export(Metrics& m) const;

 private:
  bool Authorized(const HttpRequest& req) const;
  // Access (token, draining), then the route's handler; a path no route takes is 404 or 405.
  ApiResult<Reply> Dispatch(Call& call);

  const ServeConfig& config_;
  const RouteTable& routes_;
  const Readiness& readiness_;
  Metrics& metrics_;
  AccessLog access_log_;
  std::atomic<int> in_flight_{0};  // requests accepted and not yet answered
  std::atomic<std::uint64_t> next_id_{1};
  // Responses per HTTP status code, lock-free on the request path; folded into
  // truegreen_http_requests_total when /metrics renders.
  static constexpr int kMaxStatus = 600;
  std::array<std::atomic<std::uint64_t>, kMaxStatus> status_counts_{};
};

}  // namespace tg::server
