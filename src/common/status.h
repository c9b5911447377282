// Status and Result<T>, the error currency of truegreen, and the one mapping of a Status to an
// HTTP status code and to a process exit code.
//
// A Status is OK or one of Triton's codes plus a message naming what was found and what was
// required. Result<T> holds a value or a non-OK Status. Both are plain value types (copyable,
// movable, no shared state): distinct objects may be used from any threads, one object from one
// thread at a time. Failures travel as these values, never as exceptions.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace tg::common {

enum class StatusCode {
  kOk = 0,
  kInvalidArg,          // bad user input: flag, config file, request body
  kNotFound,            // a named file, model, library or field does not exist
  kUnavailable,         // the thing exists but cannot be used now (no GPU path, not ready)
  kUnsupported,         // valid request that this build or node cannot serve
  kFailedPrecondition,  // version drift against the pinned matrix, and nothing else
  kInternal,            // a bug (including API misuse by a caller), nothing else: a library or
                        // runtime failure is UNAVAILABLE or UNSUPPORTED
};
// The last enumerator (tests walk every code up to it).
inline constexpr StatusCode kLastStatusCode = StatusCode::kInternal;

// "OK", "INVALID_ARG", ... as the JSON error objects spell them; "UNKNOWN" for a value outside
// the enum. Pure; thread-safe.
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArg(std::string m) { return {StatusCode::kInvalidArg, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status Unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
  static Status FailedPrecondition(std::string m) {
    return {StatusCode::kFailedPrecondition, std::move(m)};
  }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARG: message" (or "OK").
  std::string ToString() const;
  // Returns a copy whose message is "<prefix>: <message>"; OK stays OK.
  Status WithPrefix(std::string_view prefix) const;

  // Explicitly discards a status where ignoring it is the intended behaviour.
  void IgnoreError() const {}

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  // From a value, or from a non-OK Status (an OK Status is a bug: it asserts in debug builds and
  // becomes INTERNAL otherwise).
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok() && "Result constructed from an OK status");
    if (std::get<Status>(v_).ok()) v_ = Status::Internal("Result built from OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  // OK when a value is held, else the error.
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  // The held value; only when ok() (std::bad_variant_access otherwise).
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

// The one mapping from Status to an HTTP status code: OK 200, INVALID_ARG 400, NOT_FOUND 404,
// UNAVAILABLE 503, UNSUPPORTED 501, FAILED_PRECONDITION 503 (the replica, not the request, is at
// fault), INTERNAL 500. Pure; thread-safe.
int HttpStatusFromStatus(const Status& status);

// Process exit codes shared by every command (documented in the README).
enum ExitCode : int {
  kExitOk = 0,
  kExitInternal = 1,     // a bug (INTERNAL)
  kExitUsage = 2,        // bad flags, unreadable or malformed configuration
  kExitIntegrity = 3,    // no usable GPU path (fallback, missing driver/provider/device)
  kExitDrift = 4,        // versions differ from the pinned matrix
  kExitPerformance = 5,  // a performance gate failed
  kExitAudit = 6,        // an image/Dockerfile/Kubernetes audit failed a rule or budget
};

// The one mapping from Status to a process exit code (every command's error path uses it):
// INVALID_ARG and NOT_FOUND are usage errors (2), UNAVAILABLE and UNSUPPORTED integrity (3),
// FAILED_PRECONDITION drift (4), INTERNAL 1 (OK is 0). Pure; thread-safe.
int ExitCodeFromStatus(const Status& status);

}  // namespace tg::common

// Propagates a non-OK Status from an expression returning Status.
#define TG_RETURN_IF_ERROR(expr)              \
  do {                                        \
    ::tg::common::Status tg_status_ = (expr); \
    if (!tg_status_.ok()) return tg_status_;  \
  } while (0)

#define TG_CONCAT_INNER_(a, b) a##b
#define TG_CONCAT_(a, b) TG_CONCAT_INNER_(a, b)
// Assigns the value of a Result<T> expression to `lhs` or returns its Status.
#define TG_ASSIGN_OR_RETURN(lhs, expr) \
  TG_ASSIGN_OR_RETURN_IMPL_(TG_CONCAT_(tg_r_, __LINE__), lhs, expr)
#define TG_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
