#include "server/api_errors.h"

#include "common/config.h"
#include "common/json_writer.h"

namespace tg::server {

using common::Json;
using common::StatusCode;

Api ApiForPath(std::string_view path) {
  if (path.starts_with("/v1/") || path == "/v1") return Api::kOpenAi;
  if (path.starts_with("/v2/") || path == "/v2") return Api::kOip;
  return Api::kPlain;
}

int HttpStatusOf(const ApiError& e) {
  switch (e.kind) {
    case ErrorKind::kStatus:
      return common::HttpStatusFromStatus(e.status);
    case ErrorKind::kUnauthenticated:
      return 401;
    case ErrorKind::kMethodNotAllowed:
      return 405;
    case ErrorKind::kPayloadTooLarge:
      return 413;
    case ErrorKind::kHeaderTooLarge:
      return 431;
    case ErrorKind::kMalformedHttp:
      return 400;
    case ErrorKind::kQueueFull:
      return 429;
    case ErrorKind::kDeadline:
      return 504;
    case ErrorKind::kTimeout:
      return 408;
  }
  return 500;
}

common::Status RequestFault(common::Status s) {
  // UNSUPPORTED answers 501, a server fault clients may retry elsewhere; a request asking for
  // what this server does not implement is the request's fault, answered 400 with the same text.
  if (s.code() == StatusCode::kUnsupported) return common::Status::InvalidArg(s.message());
  return s;
}

namespace {

std::string PlainCode(const ApiError& e) {
  switch (e.kind) {
    case ErrorKind::kStatus:
      return std::string(common::StatusCodeName(e.status.code()));
    case ErrorKind::kUnauthenticated:
      return "UNAUTHENTICATED";
    case ErrorKind::kMethodNotAllowed:
      return "METHOD_NOT_ALLOWED";
    case ErrorKind::kPayloadTooLarge:
      return "PAYLOAD_TOO_LARGE";
    case ErrorKind::kHeaderTooLarge:
      return "HEADER_TOO_LARGE";
    case ErrorKind::kMalformedHttp:
      return "INVALID_ARG";
    case ErrorKind::kQueueFull:
      return "RESOURCE_EXHAUSTED";
    case ErrorKind::kDeadline:
      return "DEADLINE_EXCEEDED";
    case ErrorKind::kTimeout:
      return "TIMEOUT";
  }
  return "INTERNAL";
}

// `type` and `code` as the OpenAI API fills them: client mistakes are invalid_request_error,
// throttling is "requests"/rate_limit_exceeded, everything on the server's side server_error.
Json OpenAiError(const ApiError& e, int http) {
  std::string type = http >= 500 ? "server_error" : "invalid_request_error";
  std::string code = e.code;
  if (e.kind == ErrorKind::kQueueFull) {
    type = "requests";
    if (code.empty()) code = "rate_limit_exceeded";
  }
  if (code.empty()) {
    switch (e.kind) {
      case ErrorKind::kUnauthenticated:
        code = "invalid_api_key";
        break;
      case ErrorKind::kDeadline:
        code = "timeout";
        break;
      case ErrorKind::kMethodNotAllowed:
        code = "method_not_allowed";
        break;
      case ErrorKind::kPayloadTooLarge:
        code = "payload_too_large";
        break;
      default:
        break;
    }
  }
  Json err = {{"message", e.message()}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
  if (!e.param.empty()) err["param"] = e.param;
  if (!code.empty()) err["code"] = code;
  return Json{{"error", err}};
}

}  // namespace

HttpResponse ErrorResponse(Api api, const ApiError& e) {
  HttpResponse r;
  r.status = HttpStatusOf(e);
  Json body;
  switch (api) {
    case Api::kOpenAi:
      body = OpenAiError(e, r.status);
      break;
    case Api::kOip:
      body = Json{{"error", e.message()}};
      break;
    case Api::kPlain:
      body = Json{{"error", {{"code", PlainCode(e)}, {"message", e.message()}}}};
      break;
  }
  r.body = common::WriteJson(body);
  if (e.kind == ErrorKind::kUnauthenticated) r.headers.emplace_back("WWW-Authenticate", "Bearer");
  if (e.kind == ErrorKind::kMethodNotAllowed) r.headers.emplace_back("Allow", e.allow);
  if (e.kind == ErrorKind::kQueueFull) r.headers.emplace_back("Retry-After", "1");
  return r;
}

HttpResponse TransportErrorResponse(ErrorKind kind, std::string_view target,
                                    const std::string& message) {
  const std::string_view path = target.substr(0, target.find('?'));
  HttpResponse r =
      ErrorResponse(path.empty() ? Api::kPlain : ApiForPath(path), ApiError::Of(kind, message));
  r.close = true;
  return r;
}

}  // namespace tg::server
