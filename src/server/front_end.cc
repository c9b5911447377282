#include "server/front_end.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>

#include "common/json_writer.h"

namespace tg::server {

using common::Json;
using common::Status;

AccessLog::AccessLog(const std::string& where) {
  if (where == "-") {
    // A stream of its own on a copy of stderr, so the log has one owner whatever it writes to.
    const int fd = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 0);
    file_ = common::UniqueFile(fd >= 0 ? ::fdopen(fd, "a") : nullptr);
    if (!file_ && fd >= 0) ::close(fd);
  } else if (where != "off") {
    // O_NONBLOCK: a FIFO put in place after ValidateServeConfig must not stop start-up; only a
    // regular file is kept (the same rule as the one writer, common::WriteFileAtomic).
    const int fd = ::open(where.c_str(),
                          O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
    struct stat st {};
    if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        ::fcntl(fd, F_SETFL, O_WRONLY | O_APPEND) == 0) {
      file_ = common::UniqueFile(::fdopen(fd, "a"));
    }
    if (!file_ && fd >= 0) ::close(fd);
    if (!file_) problem_ = "--access-log " + where + ": not a regular file";
  }
}

void AccessLog::Write(const std::string& line) {
  if (!file_) return;
  std::lock_guard<std::mutex> l(mu_);
  std::fwrite(line.data(), 1, line.size(), file_.get());
  std::fputc('\n', file_.get());
  std::fflush(file_.get());
}

FrontEnd::FrontEnd(const ServeConfig& config, const RouteTable& routes, const Readiness& readiness,
                   Metrics& metrics, const std::function<void(const std::string&)>& log)
    : config_(config),
      routes_(routes),
      readiness_(readiness),
      metrics_(metrics),
      access_log_(config.access_log) {
  if (!access_log_.problem().empty() && log) log(access_log_.problem());
}

bool FrontEnd::Authorized(const HttpRequest& req) const {
  if (config_.token.empty()) return true;
  const std::string got = req.Header("authorization");
  const std::string want = "Bearer " + config_.token;
  // Compare digests in constant time, so neither content nor length leaks through timing.
  unsigned char a[SHA256_DIGEST_LENGTH], b[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(got.data()), got.size(), a);
  SHA256(reinterpret_cast<const unsigned char*>(want.data()), want.size(), b);
  return CRYPTO_memcmp(a, b, sizeof(a)) == 0;
}

ApiResult<Reply> FrontEnd::Dispatch(Call& call) {
  RouteTable::Match m = routes_.Find(call.req.method, call.path);
  if (m.access != RouteTable::Access::kPublic && !Authorized(call.req)) {
    return ApiError::Of(ErrorKind::kUnauthenticated,
                        "missing or wrong bearer token (Authorization: Bearer <token>)");
  }
  if (!m.route) {
    if (!m.allow.empty()) return ApiError::MethodNotAllowed(m.allow);
    return Status::NotFound("no such endpoint: " + call.ctx->path);
  }
  if (m.access == RouteTable::Access::kWork && readiness_.draining()) {
    return Status::Unavailable("server is draining (SIGTERM): not accepting work");
  }
  call.params = std::move(m.params);
  return m.route->handler(call);
}

void FrontEnd::Handle(HttpRequest req, Responder respond) {
  in_flight_.fetch_add(1);
  auto ctx = std::make_shared<RequestCtx>();
  ctx->id = req.Header("x-request-id");
  if (ctx->id.empty() || ctx->id.size() > 64) ctx->id = "r" + std::to_string(next_id_++);
  ctx->start = Clock::now();
  ctx->method = req.method;
  std::string path = req.target.substr(0, req.target.find('?'));
  ctx->path = path.size() > 256 ? path.substr(0, 256) : path;
  if (path == "/v2/") path = "/v2";  // the spelling of open_inference_rest.yaml
  Call call{req, std::move(path), ctx, respond, {}};
  ApiResult<Reply> r = Dispatch(call);
  // The one place a handler's error becomes its API's error answer.
  if (!r.ok()) return Finish(ctx, respond, ErrorFor(*ctx, r.error()));
  if (!r.value().queued()) Finish(ctx, respond, std::move(r.value().response()));
}

void FrontEnd::Finish(const std::shared_ptr<RequestCtx>& ctx, const Responder& respond,
                      HttpResponse r) {
  const double total_ms = MsSince(ctx->start);
  if (r.status >= 0 && r.status < kMaxStatus) {
    status_counts_[r.status].fetch_add(1, std::memory_order_relaxed);
  }
  if (!ctx->model.empty()) {
    Labels lb = {{"model", ctx->model}};
    if (r.status == 200) {
      metrics_.Add("nv_inference_request_success", lb);
    } else {
      metrics_.Add("nv_inference_request_failure",
                   {{"model", ctx->model}, {"reason", std::to_string(r.status)}});
    }
    metrics_.Add("nv_inference_request_duration_us", lb, total_ms * 1e3);
    metrics_.Add("nv_inference_queue_duration_us", lb, ctx->queue_ms * 1e3);
    metrics_.Add("nv_inference_compute_infer_duration_us", lb, ctx->compute_ms * 1e3);
    metrics_.Observe("truegreen_request_duration_seconds", lb, total_ms / 1e3);
    metrics_.Observe("truegreen_queue_duration_seconds", lb, ctx->queue_ms / 1e3);
    if (ctx->compute_ms > 0) {
      metrics_.Observe("truegreen_compute_duration_seconds", lb, ctx->compute_ms / 1e3);
    }
  }
  r.headers.emplace_back("X-Request-Id", ctx->id);
  if (readiness_.draining()) r.close = true;
  if (access_log_.on()) {
    Json line = {{"ts", static_cast<std::int64_t>(std::time(nullptr))},
                 {"id", ctx->id},
                 {"method", ctx->method},
                 {"path", ctx->path},
                 {"model", ctx->model},
                 {"status", r.status},
                 {"outcome", r.status < 400 ? "ok" : "error"},
                 {"queue_ms", ctx->queue_ms},
                 {"compute_ms", ctx->compute_ms},
                 {"total_ms", total_ms},
                 {"items", ctx->items}};
    access_log_.Write(common::WriteJson(line, -1, common::JsonNotice::kNone));
  }
  respond(std::move(r));
  in_flight_.fetch_sub(1);
}

void FrontEnd::Export(Metrics& m) const {
  m.Set("truegreen_http_requests_in_flight", {}, in_flight_.load());
  for (int code = 0; code < kMaxStatus; ++code) {
    const std::uint64_t n = status_counts_[code].load(std::memory_order_relaxed);
    if (n != 0) {
      m.Set("truegreen_http_requests_total", {{"code", std::to_string(code)}},
            static_cast<double>(n));
    }
  }
}

}  // namespace tg::server
