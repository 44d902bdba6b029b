#include "util/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace vroce {
namespace {

LogLevel threshold_from_env() {
  const char* value = std::getenv("VROCE_LOG");
  if (value == nullptr) {
    return LogLevel::Warn;
  }
  if (std::strcmp(value, "error") == 0) {
    return LogLevel::Error;
  }
  if (std::strcmp(value, "info") == 0) {
    return LogLevel::Info;
  }
  if (std::strcmp(value, "debug") == 0) {
    return LogLevel::Debug;
  }
  return LogLevel::Warn;
}

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::Error:
      return "error";
    case LogLevel::Warn:
      return "warn";
    case LogLevel::Info:
      return "info";
    case LogLevel::Debug:
      return "debug";
  }
  return "?";
}

}  // namespace

bool log_enabled(LogLevel level) {
  static const LogLevel threshold = threshold_from_env();
  return static_cast<int>(level) <= static_cast<int>(threshold);
}

void log_message(LogLevel level, const char* fmt, ...) {
  // One buffer and one fputs, so concurrent lines from the progress thread and the
  // application do not interleave.
  char line[1024];
  int prefix = std::snprintf(line, sizeof(line), "vroce %s: ", level_name(level));
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(line + prefix, sizeof(line) - static_cast<size_t>(prefix) - 1, fmt, args);
  va_end(args);
  size_t length = std::strlen(line);
  line[length] = '\n';
  line[length + 1] = '\0';
  std::fputs(line, stderr);
}

}  // namespace vroce
