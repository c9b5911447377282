// The server's route table (server/ only): each route is a method, a path pattern and a handler.
// A handler returns its answer or an ApiError; the server turns every error into the body of the
// API the path addresses (server/api_errors.h), so no handler writes a status code for an error.
//
// Patterns are "/"-separated segments, each a literal or "{name}" (one non-empty segment, given
// to the handler as Call::Param("name")). A GET route also answers HEAD. Find reports a path that
// some route matches under other methods (405 with Allow) apart from a path no route matches
// (404).
//
// Thread safety: Add before the server starts; afterwards Find may be called from any thread
// (the table is immutable).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/config.h"
#include "server/api_errors.h"
#include "server/http.h"
#include "server/lanes.h"

namespace tg::server {

// Per-request bookkeeping for metrics and the access log, shared by the handler and, for a
// queued request, its lane job.
struct RequestCtx {
  std::string id;
  std::string method;
  std::string path;
  std::string model;
  Clock::time_point start;
  double queue_ms = 0.0;
  double compute_ms = 0.0;
  int items = 0;  // images or batch rows produced
};

// One request as its handler sees it.
struct Call {
  const HttpRequest& req;
  std::string path;  // the target's path
  std::shared_ptr<RequestCtx> ctx;
  Responder respond;  // how a queued request is answered later (by its lane)
  std::map<std::string, std::string> params;
  // The "{name}" segment of the route's pattern ("" when the pattern has none of that name).
  const std::string& Param(const std::string& name) const;
};

// What a handler answers: the response to send now, or Queued() when a scheduler lane took the
// request and answers it itself through Call::respond.
class Reply {
 public:
  Reply(HttpResponse r) : response_(std::move(r)) {}  // NOLINT(google-explicit-constructor)
  static Reply Queued() { return Reply(); }
  bool queued() const { return !response_.has_value(); }
  HttpResponse& response() { return *response_; }

 private:
  Reply() = default;
  std::optional<HttpResponse> response_;
};

// The error answer of `e` in the shape of the API `ctx.path` addresses (the one error path:
// server/api_errors.h ErrorResponse).
HttpResponse ErrorFor(const RequestCtx& ctx, const ApiError& e);
// A 200-class JSON answer.
HttpResponse JsonResponse(int status, const common::Json& body);

using common::MsSince;

class RouteTable {
 public:
  // Who may call a route: anyone (health), a caller with the bearer token, or such a caller only
  // while the server is not draining (work that would outlive the drain).
  enum class Access { kPublic, kToken, kWork };
  using Handler = std::function<ApiResult<Reply>(Call&)>;

  struct Route {
    std::string method;
    std::vector<std::string> segments;
    Access access = Access::kToken;
    Handler handler;
  };
  struct Match {
    const Route* route = nullptr;  // null: no route for this method and path
    std::map<std::string, std::string> params;
    std::string allow;  // when null: the methods the path takes ("" = no such path, 404)
    Access access = Access::kToken;  // of the route, or of the path's routes when null
  };

  // `method` is "GET" or "POST"; `pattern` as in the file comment.
  void Add(std::string method, std::string_view pattern, Access access, Handler handler);
  // The first route, in the order added, that takes `method` and `path`. A path equal to a
  // literal pattern (health, /metrics) is found by comparing strings, without splitting it.
  Match Find(std::string_view method, std::string_view path) const;

 private:
  struct Literal {
    std::string path;   // the pattern as added
    std::size_t index;  // into routes_; no earlier route of its method matches this path
  };
  std::vector<Route> routes_;
  std::vector<Literal> literals_;
};

}  // namespace tg::server
