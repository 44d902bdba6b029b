// The ncclDebugLogger_t that roce-bench hands to the plugin's init, printing lines the way NCCL
// does ("host:pid:tid [rank] NCCL INFO ...") and filtering by NCCL_DEBUG and NCCL_DEBUG_SUBSYS
// with NCCL's meaning. Two deliberate differences: lines go to stderr (stdout carries the tables
// or JSON), and with NCCL_DEBUG unset the level is WARN, because a benchmark must never hide a
// plugin's error. Every record is also kept in memory for --init-check's banner section.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nccl_net/types.h"
#include "roce/result.h"

namespace roce::bench {

struct LogFilter {
  int level = NCCL_LOG_WARN;  // records above this level are not printed
  std::uint64_t subsys_mask = NCCL_INIT | NCCL_BOOTSTRAP | NCCL_ENV;
};

// Parses NCCL_DEBUG / NCCL_DEBUG_SUBSYS values (nullopt = unset). Unknown words are errors.
Result<LogFilter> parse_log_filter(const char* nccl_debug, const char* nccl_debug_subsys);

struct LogRecord {
  ncclDebugLogLevel level;
  unsigned long flags;
  std::string text;
};

// Installs the filter (from the environment) and the rank shown in the prefix.
void configure_logger(const LogFilter& filter, int rank);

// The callback passed to init (v8/v9: init(logger); v10/v11 also take a profiler callback).
extern "C" void roce_bench_nccl_logger(ncclDebugLogLevel level, unsigned long flags,
                                       const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

// Every record received so far (printed or not), in order.
std::vector<LogRecord> logged_records();
std::size_t logged_warnings();

}  // namespace roce::bench
