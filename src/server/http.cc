#include "server/http.h"

#include "common/strings.h"
#include "server/api_errors.h"

#include <algorithm>
#include <array>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>

#include <sys/socket.h>
#include <sys/uio.h>

namespace tg::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

std::string HttpRequest::Header(const std::string& lower_name) const {
  for (const auto& [k, v] : headers) {
    if (k == lower_name) return v;
  }
  return "";
}

// Each I/O thread runs its own io_context; a connection lives on one of them for its whole life,
// so its handlers never run concurrently and it needs no strand (the old per-connection strand
// and the type-erased executor cost ~6 % of the CPU per health request under wrk).
using Executor = asio::io_context::executor_type;
using Stream = beast::basic_stream<tcp, Executor>;
using Socket = asio::basic_stream_socket<tcp, Executor>;

struct HttpServer::Impl {
  // Declared first so it outlives the io_contexts, whose destructors release connections.
  std::atomic<int> connections{0};
  // Requests handed to the handler whose response is not yet written in full (WaitForResponses).
  // The counter stays lock-free on the request path; only while a drain waits (draining) does
  // the last answer take idle_mu to wake it.
  std::atomic<int> answering{0};
  std::atomic<bool> draining{false};
  std::mutex idle_mu;
  std::condition_variable idle_cv;
  Limits limits;
  Handler handler;
  RejectHook on_reject;
  // One per further I/O thread. Declared before `io` so they outlive it: an accept still pending
  // when `io` is destroyed (Stop ran before the acceptor's close did) holds the peer socket it was
  // opening on one of these, and destroying that operation touches its context.
  std::vector<std::unique_ptr<asio::io_context>> more;
  asio::io_context io{1};  // the first I/O thread's context; it also runs the acceptor
  std::size_t next = 0;    // round-robin; touched by the acceptor only
  std::optional<tcp::acceptor> acceptor;
  std::vector<std::thread> threads;
  std::vector<asio::executor_work_guard<Executor>> work;

  void Accept();
  void Answered() {
    if (answering.fetch_sub(1) == 1 && draining.load()) {
      std::lock_guard<std::mutex> l(idle_mu);
      idle_cv.notify_all();
    }
  }
  asio::io_context& NextContext() {
    const std::size_t n = 1 + more.size();
    const std::size_t i = next++ % n;
    return i == 0 ? io : *more[i - 1];
  }
};

namespace {

std::string_view ReasonText(int status) {
  const auto r = bhttp::obsolete_reason(static_cast<bhttp::status>(status));
  return {r.data(), r.size()};
}

// After a refused body (413) the socket is not closed at once: a client still sending would
// meet a reset and never read the answer. The rest of its bytes are read and dropped (at most
// this long between reads, this long in all), as nginx's lingering close does.
constexpr int kLingerReadMs = 2000;
constexpr int kLingerTotalMs = 10000;

class Connection;
// The connection whose handler runs on this thread right now: a Responder called on the same
// thread before the handler returns writes without posting (health answers, errors).
thread_local Connection* t_in_handler = nullptr;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Socket socket, HttpServer::Impl* srv, bool over_cap)
      : stream_(std::move(socket)), srv_(srv), over_cap_(over_cap) {
    ++srv_->connections;
  }
  ~Connection() {
    Answered();  // a request whose connection went away unanswered
    --srv_->connections;
  }

  void Start() {
    // Small responses go out at once instead of waiting for Nagle's ACK (keep-alive clients).
    beast::error_code ec;
    stream_.socket().set_option(tcp::no_delay(true), ec);
    if (over_cap_) {
      Reject(ErrorKind::kStatus, "connection limit reached (" +
                                     std::to_string(srv_->limits.max_connections) +
                                     " open connections)");
      return;
    }
    ReadHeader();
  }

 private:
  // The request handed to the handler has its response written (or can have none): counted once.
  void Answered() {
    if (!answering_) return;
    answering_ = false;
    srv_->Answered();
  }

  void ReadHeader() {
    head_ = false;
    parser_.emplace();
    parser_->header_limit(16 * 1024);
    parser_->body_limit(srv_->limits.max_body_bytes);
    const int ms = first_ ? srv_->limits.header_timeout_ms : srv_->limits.idle_timeout_ms;
    stream_.expires_after(std::chrono::milliseconds(ms));
    bhttp::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    first_ = false;
    if (ec) return OnReadError(ec, "header");
    // A declared body over the limit is refused before it is read.
    if (auto cl = parser_->content_length(); cl && *cl > srv_->limits.max_body_bytes) {
      linger_ = true;
      return Reject(ErrorKind::kPayloadTooLarge,
                    "request body of " + std::to_string(*cl) + " bytes is over the limit of " +
                        std::to_string(srv_->limits.max_body_bytes) + " bytes");
    }
    head_ = parser_->get().method() == bhttp::verb::head;
    // A request without a body (every GET) is complete with its header: no second read. A small
    // body usually arrived in the same segment as its header: it is parsed from the buffer now,
    // not through a second asynchronous read (one pass through the event loop, ~30 us).
    if (!parser_->is_done() && ParseBuffered(&ec)) return OnReadError(ec, "body");
    if (parser_->is_done()) return OnBody({});
    stream_.expires_after(std::chrono::milliseconds(srv_->limits.body_timeout_ms));
    // Clients that send large bodies (curl above 1 KiB) wait for "100 Continue" first.
    if (beast::iequals(parser_->get()[bhttp::field::expect], "100-continue")) {
      auto cont = std::make_shared<bhttp::response<bhttp::empty_body>>(bhttp::status::continue_,
                                                                       parser_->get().version());
      bhttp::async_write(stream_, *cont,
                         [self = shared_from_this(), cont](beast::error_code ec, std::size_t) {
                           if (ec) return self->Close();
                           self->ReadBody();
                         });
      return;
    }
    ReadBody();
  }

  // Feeds the bytes already buffered to the parser; true (with *ec) on a parse error, e.g. a
  // chunked body over the limit. Whatever is still missing is read by ReadBody.
  bool ParseBuffered(beast::error_code* ec) {
    while (!parser_->is_done() && buffer_.size() > 0) {
      const std::size_t used = parser_->put(buffer_.data(), *ec);
      if (*ec == bhttp::error::need_more) {
        *ec = {};
        return false;
      }
      if (*ec) return true;
      buffer_.consume(used);
      if (used == 0) return false;
    }
    return false;
  }

  void ReadBody() {
    bhttp::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnBody(ec); });
  }

  void OnReadError(beast::error_code ec, const char* what) {
    if (ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
      return Close();
    }
    if (ec == beast::error::timeout) {
      // The stream already closed the socket; nothing can be written.
      if (srv_->on_reject)
        srv_->on_reject(HttpStatusOf(ApiError::Of(ErrorKind::kTimeout, "")),
                        std::string(what) + " read timeout");
      return;
    }
    if (ec == bhttp::error::body_limit) {
      linger_ = true;
      return Reject(ErrorKind::kPayloadTooLarge, "request body is over the limit of " +
                                                     std::to_string(srv_->limits.max_body_bytes) +
                                                     " bytes");
    }
    if (ec == bhttp::error::header_limit) {
      return Reject(ErrorKind::kHeaderTooLarge, "request header over 16 KiB");
    }
    Reject(ErrorKind::kMalformedHttp,
           std::string("malformed HTTP request (") + what + "): " + ec.message());
  }

  void OnBody(beast::error_code ec) {
    if (ec) return OnReadError(ec, "body");
    stream_.expires_never();
    auto& msg = parser_->get();
    HttpRequest req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    req.body = std::move(msg.body());
    for (const auto& f : msg) {
      const auto name = f.name_string();  // Boost's string_view: no conversion to std's
      req.headers.emplace_back(common::Lower(std::string_view(name.data(), name.size())),
                               std::string(f.value()));
    }
    keep_alive_ = msg.keep_alive();
    version_ = msg.version();
    sync_ready_ = false;
    answering_ = true;
    ++srv_->answering;
    Connection* const outer = t_in_handler;
    t_in_handler = this;
    srv_->handler(std::move(req), [self = shared_from_this()](HttpResponse r) {
      if (r.part != HttpResponse::Part::kWhole) {
        // Streamed parts always go through the I/O thread, in order, one write at a time.
        auto exec = self->stream_.get_executor();
        asio::post(exec, [self, r = std::move(r)]() mutable { self->QueuePart(std::move(r)); });
        return;
      }
      if (t_in_handler == self.get()) {  // this I/O thread, inside the handler: no hop
        self->sync_response_ = std::move(r);
        self->sync_ready_ = true;
        return;
      }
      // A lane worker (or any other thread). Until this response is written nothing else touches
      // the connection: no read is armed (the next is armed after the write) and no timer runs
      // (expires_never above). So this thread offers the response to the kernel itself instead of
      // first waking the I/O thread for it (a thread hand-off per generated image); the I/O
      // thread gets what the send buffer did not take.
      self->PrepareWrite(std::move(r));
      const std::size_t sent = self->SendNow();
      auto exec = self->stream_.get_executor();
      asio::post(exec, [self, sent] { self->WriteRest(sent); });
    });
    t_in_handler = outer;
    if (sync_ready_) {
      sync_ready_ = false;
      Write(std::move(sync_response_));
    }
  }

  // Answers a transport error in the shape of the API the request addressed (when its request
  // line was read) and closes. The connection cap's refusal is UNAVAILABLE (503).
  void Reject(ErrorKind kind, const std::string& reason) {
    // The request line is parsed before any header field, so the target is known for every
    // error found after it (a Content-Length over the limit included); "" before it.
    std::string target;
    if (parser_) target = std::string(parser_->get().target());
    HttpResponse r =
        kind == ErrorKind::kStatus
            ? ErrorResponse(Api::kPlain, ApiError::From(common::Status::Unavailable(reason)))
            : TransportErrorResponse(kind, target, reason);
    r.close = true;
    if (srv_->on_reject) srv_->on_reject(r.status, reason);
    Write(std::move(r));
  }

  // A streamed part: framed as an HTTP/1.1 chunk (HTTP/1.0: unframed) and queued behind the parts
  // before it. Runs on the connection's I/O thread.
  void QueuePart(HttpResponse r) {
    if (stream_dead_) return;
    using Part = HttpResponse::Part;
    std::string out;
    const bool v10 = version_ == 10;
    if (r.part == Part::kFirst) {
      close_ = r.close || !keep_alive_ || v10;
      out = v10 ? "HTTP/1.0 " : "HTTP/1.1 ";
      out += std::to_string(r.status) + " " + std::string(ReasonText(r.status));
      out += "\r\nServer: truegreen\r\nContent-Type: " + r.content_type + "\r\n";
      for (const auto& [k, v] : r.headers) {
        out += k + ": ";
        for (char c : v) out += (c == '\r' || c == '\n') ? ' ' : c;
        out += "\r\n";
      }
      out += v10 ? "Connection: close\r\n\r\n" : "Transfer-Encoding: chunked\r\n";
      if (!v10) out += close_ ? "Connection: close\r\n\r\n" : "\r\n";
    }
    const std::string& body = r.shared_body ? *r.shared_body : r.body;
    if (head_) {
      // HEAD: the head only.
    } else if (v10) {
      out += body;
    } else if (!body.empty()) {
      char size[24];
      std::snprintf(size, sizeof(size), "%zx\r\n", body.size());
      out += size;
      out += body;
      out += "\r\n";
    }
    if (r.part == Part::kLast) {
      if (!v10 && !head_) out += "0\r\n\r\n";
      stream_last_ = true;
    }
    parts_.push_back(std::move(out));
    if (!part_writing_) WriteNextPart();
  }

  void WriteNextPart() {
    if (parts_.empty()) {
      part_writing_ = false;
      if (!stream_last_) {
        // More parts to come, maybe only after many denoising steps: no timer while waiting.
        stream_.expires_never();
        return;
      }
      stream_last_ = false;
      Answered();
      if (close_) return Close();
      return ReadHeader();
    }
    part_writing_ = true;
    stream_.expires_after(std::chrono::milliseconds(srv_->limits.body_timeout_ms));
    asio::async_write(stream_, asio::buffer(parts_.front()),
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        self->parts_.pop_front();
                        if (ec) {
                          self->stream_dead_ = true;
                          self->parts_.clear();
                          self->Answered();
                          return self->Close();
                        }
                        self->WriteNextPart();
                      });
  }

  // Serializes the status line and header fields into head_buf_ (capacity kept across requests)
  // and keeps the response in response_ until it is written; the body is never copied.
  void PrepareWrite(HttpResponse r) {
    response_ = std::move(r);
    const std::string& body = Body();
    close_ = response_.close || !keep_alive_;
    const bool v10 = version_ == 10;
    std::string& h = head_buf_;
    h.clear();
    h += v10 ? "HTTP/1.0 " : "HTTP/1.1 ";
    h += std::to_string(response_.status);
    h += ' ';
    h += ReasonText(response_.status);
    h += "\r\nServer: truegreen\r\nContent-Type: ";
    h += response_.content_type;
    h += "\r\n";
    for (const auto& [k, v] : response_.headers) {
      h += k;
      h += ": ";
      // A value can echo the client (X-Request-Id): a CR or LF must never start a new line.
      for (char c : v) h += (c == '\r' || c == '\n') ? ' ' : c;
      h += "\r\n";
    }
    // What Beast's keep_alive() wrote: only the non-default of each version is spelled out.
    if (!v10 && close_) h += "Connection: close\r\n";
    if (v10 && !close_) h += "Connection: keep-alive\r\n";
    h += "Content-Length: ";  // HEAD: the GET's length, no body
    h += std::to_string(body.size());
    h += "\r\n\r\n";
  }

  const std::string& Body() const {
    return response_.shared_body ? *response_.shared_body : response_.body;
  }
  std::size_t BodyBytes() const { return head_ ? 0 : Body().size(); }

  // Non-blocking gather sends of the prepared response from the calling thread; returns the bytes
  // the kernel took. Stops when it takes no more (send buffer full, or an error: the I/O thread's
  // write then goes on from there and meets the error itself).
  std::size_t SendNow() {
    const std::size_t head = head_buf_.size(), total = head + BodyBytes();
    std::size_t sent = 0;
    while (sent < total) {
      iovec iov[2];
      int n = 0;
      if (sent < head) iov[n++] = {head_buf_.data() + sent, head - sent};
      const std::size_t off = sent > head ? sent - head : 0;
      iov[n++] = {const_cast<char*>(Body().data()) + off, BodyBytes() - off};
      msghdr m{};
      m.msg_iov = iov;
      m.msg_iovlen = static_cast<std::size_t>(n);
      const ssize_t k =
          ::sendmsg(stream_.socket().native_handle(), &m, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (k <= 0) break;  // EAGAIN, EINTR or an error
      sent += static_cast<std::size_t>(k);
    }
    return sent;
  }

  void Write(HttpResponse r) {
    PrepareWrite(std::move(r));
    WriteRest(0);
  }

  // Writes the prepared response from byte `sent` on (head, then body) in one gather write, then
  // arms the next read or closes. Runs on the connection's I/O thread.
  void WriteRest(std::size_t sent) {
    const std::size_t head = head_buf_.size();
    const std::array<asio::const_buffer, 2> bufs = {
        asio::buffer(head_buf_) + std::min(sent, head),
        asio::buffer(Body().data(), BodyBytes()) + (sent > head ? sent - head : 0)};
    stream_.expires_after(std::chrono::milliseconds(srv_->limits.body_timeout_ms));
    // Asio's default completion condition caps each send at 64 KiB; a ~1 MB image then took 16+
    // sendmsg calls. Offer the kernel everything left (it takes what its send buffer holds).
    auto all_left = [](const beast::error_code& ec, std::size_t) -> std::size_t {
      return ec ? 0 : std::size_t{1} << 30;
    };
    asio::async_write(stream_, bufs, all_left,
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        // Large bodies (images) are released now, not at the next response.
                        self->response_ = HttpResponse();
                        self->Answered();
                        if (ec) return self->Close();
                        if (self->close_) return self->linger_ ? self->Linger() : self->Close();
                        self->ReadHeader();
                      });
  }

  // Half-closes (the client reads EOF after the answer) and drops what the client still sends
  // until it stops, goes quiet for kLingerReadMs, or kLingerTotalMs pass; then closes.
  void Linger() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    linger_until_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(kLingerTotalMs);
    LingerRead();
  }
  void LingerRead() {
    if (std::chrono::steady_clock::now() >= linger_until_) return Close();
    stream_.expires_after(std::chrono::milliseconds(kLingerReadMs));
    if (!linger_buf_) linger_buf_ = std::make_unique<std::array<char, 16384>>();
    stream_.async_read_some(asio::buffer(*linger_buf_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec) return self->Close();
                              self->LingerRead();
                            });
  }

  void Close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
  }

  Stream stream_;
  HttpServer::Impl* srv_;
  bool over_cap_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  HttpResponse response_;       // being written; owns the body until the write completes
  HttpResponse sync_response_;  // answered inside the handler, written when it returns
  std::string head_buf_;
  bool sync_ready_ = false;
  bool answering_ = false;  // a request is with the handler or its response is being written
  bool first_ = true;
  bool keep_alive_ = false;
  bool close_ = false;
  bool head_ = false;
  bool linger_ = false;            // the answer refused a body: linger after writing it
  std::deque<std::string> parts_;  // streamed parts not yet written, oldest first
  bool part_writing_ = false;
  bool stream_last_ = false;  // kLast is queued: after it the connection goes on or closes
  bool stream_dead_ = false;  // a streamed write failed: later parts are dropped
  std::chrono::steady_clock::time_point linger_until_;
  std::unique_ptr<std::array<char, 16384>> linger_buf_;
  unsigned version_ = 11;
};

}  // namespace

void HttpServer::Impl::Accept() {
  if (!acceptor || !acceptor->is_open()) return;
  asio::io_context& ctx = NextContext();
  acceptor->async_accept(ctx, [this, &ctx](beast::error_code ec, Socket s) {
    if (ec == asio::error::operation_aborted || !acceptor || !acceptor->is_open()) return;
    if (!ec) {
      const bool over = connections.load() >= limits.max_connections;
      auto c = std::make_shared<Connection>(std::move(s), this, over);
      // Started on its own I/O thread, which runs every later handler of it.
      asio::post(ctx, [c] { c->Start(); });
    }
    Accept();
  });
}

HttpServer::HttpServer(Limits limits, Handler handler, RejectHook on_reject)
    : impl_(std::make_unique<Impl>()) {
  impl_->limits = limits;
  impl_->handler = std::move(handler);
  impl_->on_reject = std::move(on_reject);
}

HttpServer::~HttpServer() { Stop(); }

common::Result<int> HttpServer::Listen(const std::string& host, int port) {
  beast::error_code ec;
  auto addr = asio::ip::make_address(host, ec);
  if (ec) return common::Status::InvalidArg("--host '" + host + "' is not an IP address");
  tcp::endpoint ep(addr, static_cast<unsigned short>(port));
  auto& a = impl_->acceptor.emplace(impl_->io);
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return common::Status::InvalidArg("--host/--port: cannot listen on " + host + ":" +
                                      std::to_string(port) + ": " + ec.message());
  }
  return static_cast<int>(a.local_endpoint().port());
}

void HttpServer::Start(int threads) {
  threads = std::max(threads, 1);
  for (int i = 1; i < threads; ++i) impl_->more.push_back(std::make_unique<asio::io_context>(1));
  impl_->work.push_back(asio::make_work_guard(impl_->io));
  for (auto& c : impl_->more) impl_->work.push_back(asio::make_work_guard(*c));
  impl_->Accept();
  impl_->threads.emplace_back([this] { impl_->io.run(); });
  for (auto& c : impl_->more) {
    asio::io_context* ctx = c.get();
    impl_->threads.emplace_back([ctx] { ctx->run(); });
  }
}

void HttpServer::StopAccepting() {
  asio::post(impl_->io, [this] {
    beast::error_code ec;
    if (impl_->acceptor) impl_->acceptor->close(ec);
  });
}

bool HttpServer::WaitForResponses(std::chrono::milliseconds limit) {
  impl_->draining.store(true);
  std::unique_lock<std::mutex> l(impl_->idle_mu);
  return impl_->idle_cv.wait_for(l, limit, [this] { return impl_->answering.load() == 0; });
}

void HttpServer::Stop() {
  if (!impl_) return;
  impl_->work.clear();
  impl_->io.stop();
  for (auto& c : impl_->more) c->stop();
  for (auto& t : impl_->threads) {
    if (t.joinable()) t.join();
  }
  impl_->threads.clear();
}

int HttpServer::open_connections() const { return impl_->connections.load(); }

}  // namespace tg::server
