// HTTP/1.1 transport of the server (Boost.Beast over Asio): accept loop with a connection cap,
// keep-alive sessions with header, body and idle timeouts, body and header size limits.
//
// Transport errors are answered here, before any handler runs: 413 for a body over the limit
// (from Content-Length when declared, else while reading), 431 for oversized headers, 400 for a
// malformed request line or header, 503 (then close) above the connection cap. A connection that
// does not deliver its header or body in time (slowloris) is closed.
//
// A Handler is called on an I/O thread for each complete request and must call its Responder
// exactly once (a streamed response: once per part, kFirst ... kLast, see HttpResponse::Part),
// from any thread. Called on the I/O thread before the handler returns (health,
// errors), the response is written right after it returns, with no hop; called from another thread
// (a lane worker), that thread sends it with non-blocking sendmsg calls (the connection has no
// read or timer armed while its request is in flight, so nothing else touches the socket) and
// posts the rest, if the send buffer filled, to the connection's I/O thread, which then arms the
// next read. The Responder never blocks. Handlers must not block for long: inference is handed to
// scheduler lanes.
//
// Speed: each I/O thread runs its own io_context and owns the connections it accepted,
// so a connection needs no strand; the response head is serialized by hand into a per-connection
// buffer and written with the body (never copied) as one two-buffer write; TCP_NODELAY is set.
//
// Thread safety: Start/StopAccepting/WaitForResponses/Stop may be called from any thread; Start
// runs `threads` I/O threads.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "server/serve_config.h"

namespace tg::server {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // path and query as sent
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string Header(const std::string& lower_name) const;   // "" when absent
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // When set, sent instead of `body`: an immutable body shared between responses (pre-rendered
  // health answers), so answering costs no copy. The transport holds a reference until written.
  std::shared_ptr<const std::string> shared_body;
  std::vector<std::pair<std::string, std::string>> headers;
  bool close = false;  // close the connection after writing
  // Streaming (server-sent events). kWhole: one response, framed by Content-Length. kFirst sends
  // the status line and headers with Transfer-Encoding: chunked and `body` as the first chunk;
  // each later call of the same Responder is kMore (its `body` the next chunk) until kLast (its
  // `body`, if any, then the terminating chunk; its status and headers are ignored). Parts are
  // written in call order on the connection's I/O thread; an HTTP/1.0 client gets the bytes
  // unframed and the connection closed after kLast.
  enum class Part { kWhole, kFirst, kMore, kLast };
  Part part = Part::kWhole;
};

using Responder = std::function<void(HttpResponse)>;
using Handler = std::function<void(HttpRequest, Responder)>;
// Called for transport-level rejections (413/431/400/503-cap/timeouts) so they are counted/logged.
using RejectHook = std::function<void(int status, const std::string& reason)>;

class HttpServer {
 public:
  HttpServer(Limits limits, Handler handler, RejectHook on_reject);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens; returns the bound port (useful with port 0). INVALID_ARG for a bad host
  // or an address that cannot be bound (in use, not local): a configuration error, exit 2.
  common::Result<int> Listen(const std::string& host, int port);
  // Runs `threads` I/O threads (returns at once; Stop joins them).
  void Start(int threads);
  // Closes the listening socket: new connections are refused.
  void StopAccepting();
  // Waits until every request handed to the handler has its response written to the socket in
  // full (a streamed one through its last part) or its connection closed, or until `limit`
  // passes; true when none is left. The drain calls it between StopAccepting and Stop.
  bool WaitForResponses(std::chrono::milliseconds limit);
  // Stops the I/O threads and joins them; open connections are dropped.
  void Stop();
  int open_connections() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tg::server
