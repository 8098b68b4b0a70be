// Kiln's one tracing macro. Messages go to stderr unless KILN_QUIET is set
// in the environment (or setLogSink installs another sink).
#pragma once

#include <functional>
#include <string>

namespace kiln {

using LogSink = std::function<void(const std::string&)>;
void SetLogSink(LogSink sink);  // nullptr restores the default
void LogMessage(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace kiln

#define KILN_LOG(...) ::kiln::LogMessage(__VA_ARGS__)
