#include "server/http.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <thread>

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

struct HttpServer::Impl {
  // Declared first so it outlives the io_context, whose destructor releases connections.
  std::atomic<int> connections{0};
  Limits limits;
  Handler handler;
  RejectHook on_reject;
  asio::io_context io;
  std::optional<tcp::acceptor> acceptor;
  std::vector<std::thread> threads;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;

  void Accept();
};

namespace {

std::string ReasonText(int status) {
  return std::string(bhttp::obsolete_reason(static_cast<bhttp::status>(status)));
}

std::string ErrorBody(int status, const std::string& message) {
  // Hand-built: this path must not depend on any JSON machinery (and message is ASCII we wrote).
  std::string m;
  for (char c : message) m += (c == '"' || c == '\\') ? ' ' : c;
  return "{\"error\":{\"code\":\"" + ReasonText(status) + "\",\"message\":\"" + m + "\"}}";
}

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, HttpServer::Impl* srv, bool over_cap)
      : stream_(std::move(socket)), srv_(srv), over_cap_(over_cap) {
    ++srv_->connections;
  }
  ~Connection() { --srv_->connections; }

  void Start() {
    if (over_cap_) {
      Reject(503, "connection limit reached (" + std::to_string(srv_->limits.max_connections) +
                      " open connections)");
      return;
    }
    ReadHeader();
  }

 private:
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
      return Reject(413, "request body of " + std::to_string(*cl) + " bytes is over the limit of " +
                             std::to_string(srv_->limits.max_body_bytes) + " bytes");
    }
    stream_.expires_after(std::chrono::milliseconds(srv_->limits.body_timeout_ms));
    head_ = parser_->get().method() == bhttp::verb::head;
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
      if (srv_->on_reject) srv_->on_reject(408, std::string(what) + " read timeout");
      return;
    }
    if (ec == bhttp::error::body_limit) {
      return Reject(413, "request body is over the limit of " +
                             std::to_string(srv_->limits.max_body_bytes) + " bytes");
    }
    if (ec == bhttp::error::header_limit) return Reject(431, "request header over 16 KiB");
    Reject(400, std::string("malformed HTTP request (") + what + "): " + ec.message());
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
      std::string name(f.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      req.headers.emplace_back(std::move(name), std::string(f.value()));
    }
    keep_alive_ = msg.keep_alive();
    version_ = msg.version();
    auto self = shared_from_this();
    auto exec = stream_.get_executor();
    srv_->handler(std::move(req), [self, exec](HttpResponse r) {
      asio::post(exec, [self, r = std::move(r)]() mutable { self->Write(std::move(r)); });
    });
  }

  void Reject(int status, const std::string& reason) {
    if (srv_->on_reject) srv_->on_reject(status, reason);
    HttpResponse r;
    r.status = status;
    r.body = ErrorBody(status, reason);
    r.close = true;
    Write(std::move(r));
  }

  void Write(HttpResponse r) {
    auto res = std::make_shared<bhttp::response<bhttp::string_body>>(
        static_cast<bhttp::status>(r.status), version_ ? version_ : 11);
    res->set(bhttp::field::server, "truegreen");
    res->set(bhttp::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res->set(k, v);
    close_ = r.close || !keep_alive_;
    res->keep_alive(!close_);
    if (head_) {
      res->content_length(r.body.size());  // HEAD: the GET's length, no body
    } else {
      res->body() = std::move(r.body);
      res->prepare_payload();
    }
    stream_.expires_after(std::chrono::milliseconds(srv_->limits.body_timeout_ms));
    bhttp::async_write(stream_, *res,
                       [self = shared_from_this(), res](beast::error_code ec, std::size_t) {
                         if (ec || self->close_) return self->Close();
                         self->ReadHeader();
                       });
  }

  void Close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
  }

  beast::tcp_stream stream_;
  HttpServer::Impl* srv_;
  bool over_cap_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  bool first_ = true;
  bool keep_alive_ = false;
  bool close_ = false;
  bool head_ = false;
  unsigned version_ = 11;
};

}  // namespace

void HttpServer::Impl::Accept() {
  if (!acceptor || !acceptor->is_open()) return;
  acceptor->async_accept(asio::make_strand(io), [this](beast::error_code ec, tcp::socket s) {
    if (ec == asio::error::operation_aborted || !acceptor || !acceptor->is_open()) return;
    if (!ec) {
      const bool over = connections.load() >= limits.max_connections;
      std::make_shared<Connection>(std::move(s), this, over)->Start();
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
  impl_->work.emplace(impl_->io.get_executor());
  impl_->Accept();
  for (int i = 0; i < threads; ++i) impl_->threads.emplace_back([this] { impl_->io.run(); });
}

void HttpServer::StopAccepting() {
  asio::post(impl_->io, [this] {
    beast::error_code ec;
    if (impl_->acceptor) impl_->acceptor->close(ec);
  });
}

void HttpServer::Stop() {
  if (!impl_) return;
  impl_->work.reset();
  impl_->io.stop();
  for (auto& t : impl_->threads) {
    if (t.joinable()) t.join();
  }
  impl_->threads.clear();
}

int HttpServer::open_connections() const { return impl_->connections.load(); }

}  // namespace tg::server
