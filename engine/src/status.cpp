#include "kiln/status.h"

#include <cstdio>

namespace kiln {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kOutOfMemory: return "out of memory";
    case StatusCode::kIoError: return "i/o error";
    case StatusCode::kInternal: return "internal error";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kAborted: return "aborted";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status Status::WithContext(const std::string& context) const {
  if (ok() || context.empty()) return *this;
  return Status(code_, context + ": " + message_);
}

std::string StrFormatV(const char* fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (n <= 0) return std::string();
  std::string out(static_cast<size_t>(n), '\0');
  std::vsnprintf(out.data(), out.size() + 1, fmt, args);
  return out;
}

std::string StrFormat(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string s = StrFormatV(fmt, args);
  va_end(args);
  return s;
}

#define KILN_DEFINE_STATUS_CTOR(Name, Code)  \
  Status Name(const char* fmt, ...) {        \
    va_list args;                            \
    va_start(args, fmt);                     \
    std::string msg = StrFormatV(fmt, args); \
    va_end(args);                            \
    return Status(StatusCode::Code, msg);    \
  }
KILN_DEFINE_STATUS_CTOR(InvalidArgument, kInvalidArgument)
KILN_DEFINE_STATUS_CTOR(NotFound, kNotFound)
KILN_DEFINE_STATUS_CTOR(Unsupported, kUnsupported)
KILN_DEFINE_STATUS_CTOR(IoError, kIoError)
KILN_DEFINE_STATUS_CTOR(OutOfMemory, kOutOfMemory)
KILN_DEFINE_STATUS_CTOR(Internal, kInternal)
KILN_DEFINE_STATUS_CTOR(Unavailable, kUnavailable)
#undef KILN_DEFINE_STATUS_CTOR

namespace internal {
Status AddContext(const Status& s, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string ctx = StrFormatV(fmt, args);
  va_end(args);
  return s.WithContext(ctx);
}
}  // namespace internal

}  // namespace kiln
