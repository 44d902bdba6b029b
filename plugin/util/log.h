// The plugin's logging: spdlog front end, with a sink that forwards every record to NCCL's
// ncclDebugLogger_t (so NCCL_DEBUG and NCCL_DEBUG_SUBSYS apply), or to stderr before init or when
// the plugin runs without NCCL (roce-bench, tests). Messages follow one style: lowercase, facts
// first ("qp 0x1a2b", "dev vroce0 port 1"), then the cause and the fix.
#pragma once

#include <fmt/format.h>

#include <string_view>

#include "nccl_net/types.h"

namespace roce::log {

// Routes all later records to NCCL's logger; nullptr goes back to stderr. Thread-safe. Also
// re-reads NCCL_DEBUG and NCCL_DEBUG_SUBSYS (see util/log_filter.h).
void set_nccl_logger(ncclDebugLogger_t logger) noexcept;

// Re-reads NCCL_DEBUG and NCCL_DEBUG_SUBSYS from the environment (done lazily on first use and
// by set_nccl_logger; tests call it after changing the variables).
void reload_filter_from_env() noexcept;

// True when a record of this level and subsystem would be emitted (cheap; use before
// formatting anything expensive on hot paths).
bool enabled(ncclDebugLogLevel level, unsigned long subsys) noexcept;

// Emits one record. Never throws; a formatting failure is reported as a WARN.
void emit(ncclDebugLogLevel level, unsigned long subsys, const char* file, int line,
          std::string_view message) noexcept;

template <typename... Args>
void write(ncclDebugLogLevel level, unsigned long subsys, const char* file, int line,
           fmt::format_string<Args...> format, Args&&... args) noexcept {
  if (!enabled(level, subsys)) {
    return;
  }
  try {
    emit(level, subsys, file, line, fmt::format(format, std::forward<Args>(args)...));
  } catch (...) {
    emit(NCCL_LOG_WARN, subsys, file, line, "log record could not be formatted");
  }
}

}  // namespace roce::log

// Usage: ROCE_WARN(NCCL_NET, "qp 0x{:x}: {}", qpn, reason);  Subsystems: NCCL_INIT, NCCL_NET,
// NCCL_ENV (see nccl_net/types.h). TRACE compiles to nothing unless ROCE_ENABLE_TRACE is defined.
#define ROCE_WARN(subsys, ...) \
  ::roce::log::write(NCCL_LOG_WARN, (subsys), __FILE__, __LINE__, __VA_ARGS__)
#define ROCE_INFO(subsys, ...) \
  ::roce::log::write(NCCL_LOG_INFO, (subsys), __FILE__, __LINE__, __VA_ARGS__)
#ifdef ROCE_ENABLE_TRACE
#define ROCE_TRACE(subsys, ...) \
  ::roce::log::write(NCCL_LOG_TRACE, (subsys), __FILE__, __LINE__, __VA_ARGS__)
#else
#define ROCE_TRACE(subsys, ...) \
  do {                          \
  } while (0)
#endif
