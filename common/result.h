// Errors as values: Status (a canonical code and a message naming what failed and where) and
// Result<T> (a value or a Status). Modelled on absl::Status / absl::StatusOr, with the codes
// that HTTP statuses map onto (404 NotFound, 409 AlreadyExists/Aborted, 410 ResourceExpired,
// 429 ResourceExhausted, ...). Standard types only, so CUDA translation units may include it.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace perfgate {

enum class Code {
  kOk = 0,
  kCancelled,
  kUnknown,
  kInvalidArgument,
  kDeadlineExceeded,
  kNotFound,
  kAlreadyExists,
  kPermissionDenied,
  kResourceExhausted,
  kFailedPrecondition,
  kAborted,  // e.g. a 409 Conflict on update: re-read and retry
  kOutOfRange,
  kUnimplemented,
  kInternal,
  kUnavailable,
  kDataLoss,
  kUnauthenticated,
  kGone,  // HTTP 410: the resourceVersion is too old; relist
};

std::string_view CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "NOT_FOUND: message"
  std::string ToString() const;

  // Returns a copy whose message is prefixed with `context: `.
  Status WithContext(std::string_view context) const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
inline Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }
inline Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
inline Status FailedPrecondition(std::string m) {
  return {Code::kFailedPrecondition, std::move(m)};
}
inline Status Unimplemented(std::string m) { return {Code::kUnimplemented, std::move(m)}; }
inline Status DeadlineExceeded(std::string m) { return {Code::kDeadlineExceeded, std::move(m)}; }
inline Status Cancelled(std::string m) { return {Code::kCancelled, std::move(m)}; }
inline Status DataLoss(std::string m) { return {Code::kDataLoss, std::move(m)}; }

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok() && "Result from an OK status has no value");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
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

}  // namespace perfgate

#define PERFGATE_CONCAT_INNER(a, b) a##b
#define PERFGATE_CONCAT(a, b) PERFGATE_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function if `expr` is not OK.
#define RETURN_IF_ERROR(expr)                            \
  do {                                                   \
    ::perfgate::Status perfgate_status_ = (expr);        \
    if (!perfgate_status_.ok()) return perfgate_status_; \
  } while (false)

// ASSIGN_OR_RETURN(auto x, ResultExpr()): binds the value or returns the error. `lhs` and
// `tmp` are declarations, so they cannot be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(PERFGATE_CONCAT(perfgate_result_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)
