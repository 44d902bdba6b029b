// NCCL-style logging for the plugin's records.
#include "nccl_logger.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <sstream>

#include "nccl_net/debug_names.h"

namespace roce::bench {
namespace {

constexpr std::size_t kMaxKeptRecords = 4096;

struct LoggerState {
  std::mutex mutex;
  LogFilter filter;
  int rank = 0;
  std::string hostname;
  std::vector<LogRecord> records;
  std::size_t warnings = 0;
};

LoggerState& state() {
  static LoggerState s;
  return s;
}

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') {
      c = static_cast<char>(c - 'a' + 'A');
    }
  }
  return out;
}

std::optional<std::uint64_t> subsys_flag(const std::string& name) {
  for (const auto& [word, flag] : nccl_debug_names::kSubsystems) {
    if (name == word) {
      return flag;
    }
  }
  return std::nullopt;
}

const char* level_name(ncclDebugLogLevel level) {
  switch (level) {
    case NCCL_LOG_WARN:
      return "WARN";
    case NCCL_LOG_INFO:
      return "INFO";
    case NCCL_LOG_TRACE:
      return "TRACE";
    case NCCL_LOG_ABORT:
      return "ABORT";
    case NCCL_LOG_VERSION:
      return "VERSION";
    case NCCL_LOG_NONE:
      break;
  }
  return "LOG";
}

}  // namespace

Result<LogFilter> parse_log_filter(const char* nccl_debug, const char* nccl_debug_subsys) {
  LogFilter filter;
  if (nccl_debug != nullptr && *nccl_debug != '\0') {
    const std::string level = upper(nccl_debug);
    filter.level = -1;
    if (level == "NONE") {
      filter.level = NCCL_LOG_NONE;
    }
    for (const auto& [word, value] : nccl_debug_names::kLevels) {
      if (level == word) {
        filter.level = static_cast<int>(value);
      }
    }
    if (filter.level < 0) {
      return failure("NCCL_DEBUG=" + std::string(nccl_debug) +
                     ": expected NONE, VERSION, WARN, INFO, ABORT or TRACE");
    }
  }
  if (nccl_debug_subsys != nullptr && *nccl_debug_subsys != '\0') {
    std::string text = upper(nccl_debug_subsys);
    bool invert = false;
    if (text[0] == '^') {
      invert = true;
      text.erase(0, 1);
    }
    std::uint64_t mask = 0;
    std::stringstream stream(text);
    std::string word;
    while (std::getline(stream, word, ',')) {
      const auto flag = subsys_flag(word);
      if (!flag) {
        return failure("NCCL_DEBUG_SUBSYS=" + std::string(nccl_debug_subsys) +
                       ": unknown subsystem '" + word + "' (INIT, NET, ENV, BOOTSTRAP, ALL, ...)");
      }
      mask |= *flag;
    }
    filter.subsys_mask = invert ? ~mask : mask;
  }
  return filter;
}

void configure_logger(const LogFilter& filter, int rank) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  s.filter = filter;
  s.rank = rank;
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) {
    s.hostname = host;
    const auto dot = s.hostname.find('.');
    if (dot != std::string::npos) {
      s.hostname.resize(dot);
    }
  }
}

extern "C" void roce_bench_nccl_logger(ncclDebugLogLevel level, unsigned long flags,
                                       const char* file, int line, const char* fmt, ...) {
  char message[2048];
  message[0] = '\0';
  if (fmt != nullptr) {
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(message, sizeof(message), fmt, args);
    va_end(args);
  }
  auto& s = state();
  std::lock_guard lock(s.mutex);
  // Bounded: a plugin tracing every message must not grow the benchmark's memory.
  if (s.records.size() < kMaxKeptRecords) {
    s.records.push_back({level, flags, message});
  }
  if (level == NCCL_LOG_WARN) {
    ++s.warnings;
  }
  if (static_cast<int>(level) > s.filter.level || level == NCCL_LOG_NONE) {
    return;
  }
  // As in NCCL, warnings are printed whatever the subsystem mask says.
  if (level != NCCL_LOG_WARN && (flags & s.filter.subsys_mask) == 0) {
    return;
  }
  const long tid = syscall(SYS_gettid);
  if (level == NCCL_LOG_WARN) {
    std::fprintf(stderr, "%s:%d:%ld [%d] %s:%d NCCL WARN %s\n", s.hostname.c_str(), getpid(), tid,
                 s.rank, file != nullptr ? file : "?", line, message);
  } else {
    std::fprintf(stderr, "%s:%d:%ld [%d] NCCL %s %s\n", s.hostname.c_str(), getpid(), tid, s.rank,
                 level_name(level), message);
  }
}

std::vector<LogRecord> logged_records() {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  return s.records;
}

std::size_t logged_warnings() {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  return s.warnings;
}

}  // namespace roce::bench
