// vroce's own diagnostics: one line per event on stderr, filtered by VROCE_LOG
// (error, warn, info, debug; default warn). vroce is a test fixture, not the product, so it does
// not route through NCCL's logger.
#pragma once

#include <cstdarg>

namespace vroce {

enum class LogLevel { Error = 0, Warn = 1, Info = 2, Debug = 3 };

// True when messages of this level are printed (reads VROCE_LOG once).
bool log_enabled(LogLevel level);

// printf-style; prefixes "vroce <level>: " and appends a newline.
void log_message(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace vroce

#define VROCE_LOG(level, ...)                                      \
  do {                                                             \
    if (::vroce::log_enabled(::vroce::LogLevel::level)) {          \
      ::vroce::log_message(::vroce::LogLevel::level, __VA_ARGS__); \
    }                                                              \
  } while (0)
