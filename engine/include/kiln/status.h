// Status and StatusOr<T>: how every fallible Kiln call reports failure.
//
// A Status is either OK or carries a code and a message that names the
// problem and where it is ("model.kiln: op 12 'conv3': input 97 out of range
// (41 tensors)"). Context is prepended as an error propagates up, outermost
// first. Library code never aborts on bad input; it returns a Status.
//
// Thread-safety: value types, no shared state.
#pragma once

#include <cstdarg>
#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace kiln {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // bad input from the caller or a malformed model
  kNotFound,          // a file, tensor or name that does not exist
  kUnsupported,       // valid but not implemented here (op, dtype, backend)
  kOutOfMemory,       // host or device allocation failed
  kIoError,           // open / map / read / write failed
  kInternal,          // a bug in Kiln
  kUnavailable,       // a backend or driver that is not present
  kAborted,           // stopped on request (a callback returned false)
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid argument: model.kiln: op 3: ..." or "ok".
  std::string ToString() const;

  // Returns a copy with `context + ": "` prepended to the message.
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// printf-style constructors, for messages with indices and names in them.
std::string StrFormat(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string StrFormatV(const char* fmt, va_list args);

Status InvalidArgument(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
Status NotFound(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
Status Unsupported(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
Status IoError(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
Status OutOfMemory(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
Status Internal(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
Status Unavailable(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  StatusOr(Status status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).ok() && "StatusOr built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

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

}  // namespace kiln

#define KILN_CONCAT_INNER(a, b) a##b
#define KILN_CONCAT(a, b) KILN_CONCAT_INNER(a, b)

// KILN_RETURN_IF_ERROR(expr) or KILN_RETURN_IF_ERROR(expr, "op %d", i):
// returns the failed status, with the formatted context prepended when one is
// given. Prefixed so as not to collide with absl's or TFLite's macros.
#define KILN_RETURN_IF_ERROR(expr, ...)                                 \
  do {                                                                  \
    ::kiln::Status kiln_status_ = (expr);                               \
    if (!kiln_status_.ok())                                             \
      return ::kiln::internal::AddContext(kiln_status_, ##__VA_ARGS__); \
  } while (0)

// KILN_ASSIGN_OR_RETURN(auto x, StatusOrExpr) or with a context format.
#define KILN_ASSIGN_OR_RETURN(lhs, expr, ...)                                     \
  auto KILN_CONCAT(kiln_so_, __LINE__) = (expr);                                  \
  if (!KILN_CONCAT(kiln_so_, __LINE__).ok())                                      \
    return ::kiln::internal::AddContext(KILN_CONCAT(kiln_so_, __LINE__).status(), \
                                        ##__VA_ARGS__);                           \
  lhs = std::move(KILN_CONCAT(kiln_so_, __LINE__)).value()

namespace kiln::internal {
inline Status AddContext(const Status& s) { return s; }
Status AddContext(const Status& s, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
}  // namespace kiln::internal
