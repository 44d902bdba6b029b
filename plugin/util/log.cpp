// The logging back end: one spdlog logger whose only sink forwards each record to NCCL's logger,
// or writes it to stderr when no NCCL logger is installed. Filtering happens before formatting,
// in enabled(), from NCCL_DEBUG and NCCL_DEBUG_SUBSYS parsed the way NCCL parses them.
#include "util/log.h"

#include <spdlog/logger.h>
#include <spdlog/sinks/base_sink.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

#include "util/cancellation.h"
#include "util/log_filter.h"

namespace roce::log {
namespace {

constexpr std::string_view kPrefix = "NET/RoCE ";

std::atomic<ncclDebugLogger_t> g_nccl_logger{nullptr};
std::atomic<int> g_level{NCCL_LOG_WARN};
std::atomic<unsigned long> g_mask{kDefaultSubsysMask};
// The env filter is read lazily, once, so records emitted before init still honour NCCL_DEBUG.
std::atomic<bool> g_filter_loaded{false};

// spdlog records carry no NCCL level or subsystem, and the sink runs synchronously on the
// emitting thread, so the emitter hands them over through thread-local state.
struct RecordContext {
  ncclDebugLogLevel level = NCCL_LOG_INFO;
  unsigned long subsys = 0;
};
thread_local RecordContext t_record;

spdlog::level::level_enum to_spdlog(ncclDebugLogLevel level) {
  switch (level) {
    case NCCL_LOG_WARN:
      return spdlog::level::warn;
    case NCCL_LOG_ABORT:
      return spdlog::level::critical;
    case NCCL_LOG_TRACE:
      return spdlog::level::trace;
    default:
      return spdlog::level::info;
  }
}

const char* level_name(ncclDebugLogLevel level) {
  switch (level) {
    case NCCL_LOG_VERSION:
      return "VERSION";
    case NCCL_LOG_WARN:
      return "WARN";
    case NCCL_LOG_ABORT:
      return "ABORT";
    case NCCL_LOG_TRACE:
      return "TRACE";
    default:
      return "INFO";
  }
}

class NcclSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string_view payload(msg.payload.data(), msg.payload.size());
    const char* file = msg.source.filename != nullptr ? msg.source.filename : "";
    if (ncclDebugLogger_t nccl = g_nccl_logger.load(std::memory_order_acquire)) {
      std::string text;
      text.reserve(kPrefix.size() + payload.size());
      text.append(kPrefix).append(payload);
      // NCCL WARNs use the mask NCCL_ALL so that NCCL_DEBUG_SUBSYS never hides them; a plugin
      // WARN tagged with one subsystem would vanish under NCCL's default mask (INIT,BOOTSTRAP,ENV).
      const unsigned long flags =
          t_record.level == NCCL_LOG_WARN ? static_cast<unsigned long>(NCCL_ALL) : t_record.subsys;
      // The logger is printf-like: a '%' inside the message must never be read as a conversion.
      nccl(t_record.level, flags, file, msg.source.line, "%s", text.c_str());
      return;
    }
    write_stderr(payload, file, msg.source.line);
  }

  void flush_() override { std::fflush(stderr); }

 private:
  static void write_stderr(std::string_view payload, const char* file, int line) {
    static const std::string host = [] {
      char name[256] = {};
      if (gethostname(name, sizeof(name) - 1) != 0) {
        return std::string("?");
      }
      return std::string(name);
    }();
    thread_local const long tid = syscall(SYS_gettid);
    std::string text =
        fmt::format("{}:{}:{} {}{} ", host, getpid(), tid, kPrefix, level_name(t_record.level));
    if (t_record.level == NCCL_LOG_WARN || t_record.level == NCCL_LOG_TRACE) {
      text += fmt::format("{}:{} ", file, line);
    }
    text.append(payload);
    text.push_back('\n');
    // One fwrite per record, under the sink's mutex, keeps lines whole across threads.
    std::fwrite(text.data(), 1, text.size(), stderr);
  }
};

spdlog::logger& logger() {
  // Deliberately leaked: records emitted from static destructors (or after NCCL unloads the
  // plugin's other state) must still find a live logger.
  static spdlog::logger* const instance = [] {
    auto* created = new spdlog::logger("nccl-net-roce", std::make_shared<NcclSink>());
    created->set_level(spdlog::level::trace);
    created->flush_on(spdlog::level::warn);
    created->set_error_handler([](const std::string& what) {
      std::fprintf(stderr, "NET/RoCE WARN log sink failed: %s\n", what.c_str());
    });
    return created;
  }();
  return *instance;
}

void ensure_filter_loaded() noexcept {
  if (!g_filter_loaded.load(std::memory_order_acquire)) {
    reload_filter_from_env();
  }
}

}  // namespace

void reload_filter_from_env() noexcept {
  const Filter filter = parse_filter(std::getenv("NCCL_DEBUG"), std::getenv("NCCL_DEBUG_SUBSYS"),
                                     g_nccl_logger.load(std::memory_order_acquire) != nullptr);
  g_level.store(filter.level, std::memory_order_relaxed);
  g_mask.store(filter.mask, std::memory_order_relaxed);
  g_filter_loaded.store(true, std::memory_order_release);
}

void set_nccl_logger(ncclDebugLogger_t logger) noexcept {
  g_nccl_logger.store(logger, std::memory_order_release);
  // NCCL loads its config files (nccl.conf) into the environment before plugin init, so the
  // filter is re-read here to match what NCCL itself will apply.
  reload_filter_from_env();
}

bool enabled(ncclDebugLogLevel level, unsigned long subsys) noexcept {
  ensure_filter_loaded();
  return passes(
      Filter{g_level.load(std::memory_order_relaxed), g_mask.load(std::memory_order_relaxed)},
      level, subsys);
}

void emit(ncclDebugLogLevel level, unsigned long subsys, const char* file, int line,
          std::string_view message) noexcept {
  if (!enabled(level, subsys)) {
    return;
  }
  // NCCL's logger writes to a file or stderr, both cancellation points: a thread cancelled while
  // it logs must not unwind through this noexcept function and the catch below (the process
  // would abort); it is cancelled at its next cancellation point instead (util/cancellation.h).
  const CancellationHeldOff held_off;
  try {
    const RecordContext saved = t_record;
    t_record = RecordContext{level, subsys};
    logger().log(spdlog::source_loc{file, line, ""}, to_spdlog(level),
                 spdlog::string_view_t(message.data(), message.size()));
    t_record = saved;
  } catch (...) {
    // Logging must never take the plugin down; the record is lost, nothing else.
    static_cast<void>(std::fputs("NET/RoCE WARN a log record could not be written\n", stderr));
  }
}

}  // namespace roce::log
