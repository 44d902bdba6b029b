// Logging: records reach NCCL's logger with the right level, flags and prefix, '%' survives the
// printf-style hand-off, and NCCL_DEBUG/NCCL_DEBUG_SUBSYS filter as NCCL filters.
#include "util/log.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "util/log_filter.h"

namespace {

struct Captured {
  ncclDebugLogLevel level;
  unsigned long flags;
  std::string file;
  int line;
  std::string format;
  std::string text;
};

std::mutex g_captured_mutex;
std::vector<Captured> g_captured;

__attribute__((format(printf, 5, 6))) void fake_nccl_logger(ncclDebugLogLevel level,
                                                            unsigned long flags, const char* file,
                                                            int line, const char* fmt, ...) {
  char buffer[4096];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buffer, sizeof(buffer), fmt, args);
  va_end(args);
  const std::lock_guard lock(g_captured_mutex);
  g_captured.push_back(Captured{level, flags, file, line, fmt, buffer});
}

// Installs the fake logger with the given NCCL_DEBUG settings; restores stderr mode on exit.
class FakeNccl {
 public:
  FakeNccl(const char* debug, const char* subsys) {
    set_or_unset("NCCL_DEBUG", debug);
    set_or_unset("NCCL_DEBUG_SUBSYS", subsys);
    g_captured.clear();
    roce::log::set_nccl_logger(&fake_nccl_logger);
  }
  ~FakeNccl() {
    roce::log::set_nccl_logger(nullptr);
    unsetenv("NCCL_DEBUG");
    unsetenv("NCCL_DEBUG_SUBSYS");
    roce::log::reload_filter_from_env();
  }
  FakeNccl(const FakeNccl&) = delete;
  FakeNccl& operator=(const FakeNccl&) = delete;

 private:
  static void set_or_unset(const char* name, const char* value) {
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
};

// Redirects fd 2 into a temporary file for the lifetime of the object.
class StderrCapture {
 public:
  StderrCapture() : file_(std::tmpfile()), saved_(dup(STDERR_FILENO)) {
    std::fflush(stderr);
    dup2(fileno(file_), STDERR_FILENO);
  }
  ~StderrCapture() {
    restore();
    std::fclose(file_);
  }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  std::string text() {
    restore();
    std::rewind(file_);
    std::string out;
    char buffer[512];
    size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof(buffer), file_)) > 0) {
      out.append(buffer, n);
    }
    return out;
  }

 private:
  void restore() {
    if (saved_ >= 0) {
      std::fflush(stderr);
      dup2(saved_, STDERR_FILENO);
      close(saved_);
      saved_ = -1;
    }
  }
  std::FILE* file_;
  int saved_;
};

}  // namespace

TEST_CASE("an INFO record reaches NCCL's logger with its subsystem, the NET/RoCE prefix and %s",
          "[log]") {
  FakeNccl nccl("INFO", "NET");
  ROCE_INFO(NCCL_NET, "qp 0x{:x} ready", 0x1a2b);
  REQUIRE(g_captured.size() == 1);
  CHECK(g_captured[0].level == NCCL_LOG_INFO);
  CHECK(g_captured[0].flags == NCCL_NET);
  CHECK(g_captured[0].format == "%s");
  CHECK(g_captured[0].text == "NET/RoCE qp 0x1a2b ready");
  CHECK(g_captured[0].file.find("log_test.cpp") != std::string::npos);
  CHECK(g_captured[0].line > 0);
}

TEST_CASE("a WARN is forwarded with NCCL_ALL so NCCL_DEBUG_SUBSYS cannot hide it", "[log]") {
  FakeNccl nccl(nullptr, "INIT");
  ROCE_WARN(NCCL_NET, "wc status {} on qp 0x{:x}", "RETRY_EXC", 7);
  REQUIRE(g_captured.size() == 1);
  CHECK(g_captured[0].level == NCCL_LOG_WARN);
  CHECK(g_captured[0].flags == static_cast<unsigned long>(NCCL_ALL));
  CHECK(g_captured[0].text == "NET/RoCE wc status RETRY_EXC on qp 0x7");
}

TEST_CASE("a percent sign in a message is printed literally, never read as a conversion", "[log]") {
  FakeNccl nccl("INFO", "ALL");
  ROCE_INFO(NCCL_INIT, "{}", "100% done %s %n %d");
  REQUIRE(g_captured.size() == 1);
  CHECK(g_captured[0].text == "NET/RoCE 100% done %s %n %d");
}

TEST_CASE("INFO records are dropped before formatting when NCCL would drop them", "[log]") {
  SECTION("NCCL_DEBUG unset") {
    FakeNccl nccl(nullptr, nullptr);
    CHECK_FALSE(roce::log::enabled(NCCL_LOG_INFO, NCCL_INIT));
    CHECK(roce::log::enabled(NCCL_LOG_WARN, NCCL_NET));
    ROCE_INFO(NCCL_INIT, "dropped");
    CHECK(g_captured.empty());
  }
  SECTION("subsystem outside the mask") {
    FakeNccl nccl("INFO", "INIT,ENV");
    CHECK(roce::log::enabled(NCCL_LOG_INFO, NCCL_INIT));
    CHECK_FALSE(roce::log::enabled(NCCL_LOG_INFO, NCCL_NET));
    CHECK(roce::log::enabled(NCCL_LOG_INFO, NCCL_NET | NCCL_ENV));
  }
  SECTION("inverted mask") {
    FakeNccl nccl("TRACE", "^NET");
    CHECK_FALSE(roce::log::enabled(NCCL_LOG_INFO, NCCL_NET));
    CHECK(roce::log::enabled(NCCL_LOG_TRACE, NCCL_INIT));
  }
}

TEST_CASE("NCCL_DEBUG and NCCL_DEBUG_SUBSYS parse with NCCL's rules", "[log]") {
  using roce::log::parse_filter;
  using roce::log::passes;
  CHECK(parse_filter("info", nullptr, false).level == NCCL_LOG_INFO);
  CHECK(parse_filter("TRACE", nullptr, false).level == NCCL_LOG_TRACE);
  CHECK(parse_filter(nullptr, nullptr, false).level == NCCL_LOG_WARN);
  CHECK(parse_filter(nullptr, nullptr, true).level == NCCL_LOG_WARN);
  CHECK(parse_filter("VERSION", nullptr, true).level == NCCL_LOG_WARN);
  CHECK(parse_filter("VERSION", nullptr, false).level == NCCL_LOG_VERSION);
  CHECK(parse_filter("bogus", nullptr, false).level == NCCL_LOG_WARN);
  CHECK(parse_filter(nullptr, nullptr, false).mask == roce::log::kDefaultSubsysMask);
  CHECK(parse_filter(nullptr, "net,Init", false).mask == (NCCL_NET | NCCL_INIT));
  CHECK(parse_filter(nullptr, "^ENV", false).mask == ~static_cast<unsigned long>(NCCL_ENV));
  CHECK(parse_filter(nullptr, "ALL", false).mask == ~0UL);
  CHECK(parse_filter(nullptr, "NOPE,NET", false).mask == NCCL_NET);

  const roce::log::Filter version_only = parse_filter("VERSION", nullptr, false);
  CHECK_FALSE(passes(version_only, NCCL_LOG_WARN, NCCL_NET));
  const roce::log::Filter info_init = parse_filter("INFO", "INIT", false);
  CHECK(passes(info_init, NCCL_LOG_WARN, NCCL_NET));
  CHECK(passes(info_init, NCCL_LOG_INFO, NCCL_INIT));
  CHECK_FALSE(passes(info_init, NCCL_LOG_INFO, NCCL_NET));
  CHECK_FALSE(passes(info_init, NCCL_LOG_TRACE, NCCL_INIT));
  CHECK_FALSE(passes(info_init, NCCL_LOG_NONE, NCCL_INIT));
}

TEST_CASE("without an NCCL logger, records go to stderr filtered by NCCL_DEBUG (WARN default)",
          "[log]") {
  unsetenv("NCCL_DEBUG");
  unsetenv("NCCL_DEBUG_SUBSYS");
  roce::log::set_nccl_logger(nullptr);
  std::string text;
  {
    StderrCapture capture;
    ROCE_WARN(NCCL_NET, "peer 127.0.7.1 closed");
    ROCE_INFO(NCCL_INIT, "this INFO is filtered");
    text = capture.text();
  }
  CHECK(text.find("NET/RoCE WARN") != std::string::npos);
  CHECK(text.find("peer 127.0.7.1 closed\n") != std::string::npos);
  CHECK(text.find("log_test.cpp:") != std::string::npos);
  CHECK(text.find("filtered") == std::string::npos);

  setenv("NCCL_DEBUG", "INFO", 1);
  roce::log::reload_filter_from_env();
  {
    StderrCapture capture;
    ROCE_INFO(NCCL_INIT, "now INFO shows");
    text = capture.text();
  }
  unsetenv("NCCL_DEBUG");
  roce::log::reload_filter_from_env();
  CHECK(text.find("NET/RoCE INFO now INFO shows\n") != std::string::npos);
}

TEST_CASE("records from many threads arrive whole and counted", "[log]") {
  FakeNccl nccl("INFO", "NET");
  constexpr int kThreads = 4;
  constexpr int kRecords = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < kRecords; ++i) {
        ROCE_INFO(NCCL_NET, "thread {} record {}", t, i);
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  REQUIRE(g_captured.size() == static_cast<size_t>(kThreads * kRecords));
  for (const Captured& record : g_captured) {
    CHECK(record.text.rfind("NET/RoCE thread ", 0) == 0);
  }
}

TEST_CASE("emit never throws, even for an empty or huge message", "[log]") {
  FakeNccl nccl("INFO", "ALL");
  CHECK_NOTHROW(roce::log::emit(NCCL_LOG_INFO, NCCL_INIT, nullptr, 0, ""));
  const std::string huge(1 << 20, 'x');
  CHECK_NOTHROW(roce::log::emit(NCCL_LOG_INFO, NCCL_INIT, "f.cpp", 1, huge));
  REQUIRE(g_captured.size() == 2);
  CHECK(g_captured[0].text == "NET/RoCE ");
}
