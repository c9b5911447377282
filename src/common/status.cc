#include "common/status.h"

namespace tg::common {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArg:
      return "INVALID_ARG";
    case StatusCode::kNotFound:
      return "NOT_FOUND";
    case StatusCode::kUnavailable:
      return "UNAVAILABLE";
    case StatusCode::kUnsupported:
      return "UNSUPPORTED";
    case StatusCode::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case StatusCode::kInternal:
      return "INTERNAL";
  }
  return "UNKNOWN";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(StatusCodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

Status Status::WithPrefix(std::string_view prefix) const {
  if (ok()) return *this;
  std::string m(prefix);
  m += ": ";
  m += message_;
  return Status(code_, std::move(m));
}

int HttpStatusFromStatus(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArg:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kUnsupported:
      return 501;
    case StatusCode::kFailedPrecondition:
      // Triton maps this to 400; for a replica whose stack drifted the request itself is fine,
      // the server is not, so 503 lets load balancers route around it.
      return 503;
    case StatusCode::kInternal:
      return 500;
  }
  return 500;
}

int ExitCodeFromStatus(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return kExitOk;
    case StatusCode::kInvalidArg:
    case StatusCode::kNotFound:
      return kExitUsage;
    case StatusCode::kUnavailable:
    case StatusCode::kUnsupported:
      return kExitIntegrity;
    case StatusCode::kFailedPrecondition:
      return kExitDrift;
    case StatusCode::kInternal:
      return kExitInternal;
  }
  return kExitInternal;
}

}  // namespace tg::common
