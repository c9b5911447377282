// The server's one error path: an ApiError says what went wrong (a Status, or one of the few
// transport and flow-control outcomes a Status has no code for), HttpStatusOf maps it to the HTTP
// status (a Status through common::HttpStatusFromStatus, the one Status -> HTTP mapping, with
// nothing changed), and ErrorResponse shapes the body
// for the API the request addressed:
//   /v1/...  OpenAI   {"error":{"message","type","param","code"}} (openai-openapi `Error`)
//   /v2...   OIP      {"error":"<message>"} (open_inference_rest.yaml `*_error_response`)
//   others   plain    {"error":{"code":"<CODE>","message"}}, CODE a StatusCodeName or one of
//                     UNAUTHENTICATED, METHOD_NOT_ALLOWED, PAYLOAD_TOO_LARGE, RESOURCE_EXHAUSTED,
//                     DEADLINE_EXCEEDED, HEADER_TOO_LARGE, TIMEOUT (docs/SERVER.md "Errors").
// Handlers build ApiErrors with the named constructors and never write a status code.
//
// Plain value types; every function is pure and safe from any thread.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "common/status.h"
#include "server/http.h"

namespace tg::server {

enum class Api { kOpenAi, kOip, kPlain };
// The API a request path addresses: /v1/... OpenAI, /v2 and /v2/... OIP, anything else plain.
Api ApiForPath(std::string_view path);

enum class ErrorKind {
  kStatus,            // `status` decides (common::HttpStatusFromStatus)
  kUnauthenticated,   // 401, WWW-Authenticate: Bearer
  kMethodNotAllowed,  // 405, Allow: `allow`
  kPayloadTooLarge,   // 413
  kHeaderTooLarge,    // 431
  kMalformedHttp,     // 400 from the transport (request line or header unreadable)
  kQueueFull,         // 429, Retry-After: 1
  kDeadline,          // 504
  kTimeout,           // 408
};

struct ApiError {
  ErrorKind kind = ErrorKind::kStatus;
  common::Status status;  // message (every kind) and code (kStatus)
  // OpenAI only: the request field at fault ("" = null) and the error code ("" = null), e.g.
  // param "size", code "invalid_value".
  std::string param;
  std::string code;
  std::string allow;  // kMethodNotAllowed: the methods the route takes ("GET", "POST")

  static ApiError From(common::Status s, std::string param = "", std::string code = "") {
    return {ErrorKind::kStatus, std::move(s), std::move(param), std::move(code), ""};
  }
  static ApiError Of(ErrorKind kind, std::string message) {
    return {kind, common::Status::InvalidArg(std::move(message)), "", "", ""};
  }
  static ApiError MethodNotAllowed(std::string allow) {
    ApiError e = Of(ErrorKind::kMethodNotAllowed, "method not allowed: use " + allow);
    e.allow = std::move(allow);
    return e;
  }
  const std::string& message() const { return status.message(); }
};

// A value, or the ApiError that the one error path (ErrorResponse) answers: what handlers return.
// A non-OK Status converts to ApiError::From(status); an OK one is a bug (answered INTERNAL).
template <typename T>
class [[nodiscard]] ApiResult {
 public:
  ApiResult(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  ApiResult(ApiError e) : v_(std::move(e)) {}   // NOLINT(google-explicit-constructor)
  ApiResult(common::Status s)                   // NOLINT(google-explicit-constructor)
      : v_(ApiError::From(s.ok() ? common::Status::Internal("ApiResult from an OK status")
                                 : std::move(s))) {}

  bool ok() const { return v_.index() == 0; }
  T& value() { return std::get<0>(v_); }
  const ApiError& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, ApiError> v_;
};

// The one ApiError -> HTTP status mapping: kStatus through common::HttpStatusFromStatus, the
// other kinds their fixed codes.
int HttpStatusOf(const ApiError& e);

// What a check of a request's own fields returns, as the request's fault: UNSUPPORTED (a dtype,
// form or option this server does not implement) becomes INVALID_ARG with the same message (so
// it is 400, not 501); any other Status is returned unchanged. Failures after the request was
// accepted keep their code.
common::Status RequestFault(common::Status s);

// The error response of `api` for `e`: status, body and the kind's headers.
HttpResponse ErrorResponse(Api api, const ApiError& e);

// The response of a transport-level rejection (no handler ran); `target` is the request target
// when the header was read, else "" (the plain shape).
HttpResponse TransportErrorResponse(ErrorKind kind, std::string_view target,
                                    const std::string& message);

}  // namespace tg::server
