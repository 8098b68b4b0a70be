#include "log.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "kiln/status.h"

namespace kiln {
namespace {
std::mutex g_mu;
LogSink g_sink;
}  // namespace

void SetLogSink(LogSink sink) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_sink = std::move(sink);
}

void LogMessage(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string msg = StrFormatV(fmt, args);
  va_end(args);
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_sink) {
    g_sink(msg);
  } else if (!std::getenv("KILN_QUIET")) {
    std::fprintf(stderr, "kiln: %s\n", msg.c_str());
  }
}

}  // namespace kiln
