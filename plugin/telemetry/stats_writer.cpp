// The stats file writer thread.
#include "telemetry/stats_writer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "telemetry/stats_output.h"
#include "telemetry/stats_registry.h"
#include "util/log.h"

namespace roce::telemetry {
namespace {

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

class Writer {
 public:
  explicit Writer(const WriterSettings& settings) : interval_ms_(settings.interval_ms) {
    const ProcessInfo p = current_process();
    path_ = expand_path(settings.file_pattern, p.host, p.pid);
    thread_ = std::thread([this] { loop(); });
  }

  void stop() noexcept {
    {
      const std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) {
      thread_.join();
    }
  }

 private:
  void loop() noexcept {
    // The last write happens even when stop() came before this thread first looked (a plugin
    // finalized right after init): what closed meanwhile is reported once.
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait_for(lock, std::chrono::milliseconds(interval_ms_), [this] { return stopping_; });
      const bool last = stopping_;
      lock.unlock();
      write_once();
      lock.lock();
      if (last) {
        return;
      }
    }
  }

  void write_once() noexcept {
    try {
      const ProcessInfo process = current_process();
      const auto all = StatsRegistry::instance().snapshot_all();
      const auto fabric = FabricCounterWatch::read_all();
      std::string lines;
      for (const auto& s : all) {
        lines += json_line(s, process, fabric_of(s, fabric));
      }
      const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (fd < 0 || !write_all(fd, lines)) {
        complain(path_);
      }
      if (fd >= 0) {
        ::close(fd);
      }
      // The textfile collector must never read a half-written file: write aside, then rename
      // (in the same folder; the collector reads *.prom only). The pid keeps two processes
      // given one file name from writing into each other's temporary file.
      const std::string prom = path_ + ".prom";
      const std::string tmp = fmt::format("{}.{}.tmp", prom, process.pid);
      const int pfd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      const bool ok = pfd >= 0 && write_all(pfd, prometheus_text(all, process, fabric));
      if (pfd >= 0) {
        ::close(pfd);
      }
      if (!ok || std::rename(tmp.c_str(), prom.c_str()) != 0) {
        complain(prom);
      }
    } catch (const std::exception& e) {
      ROCE_WARN(NCCL_NET, "writing statistics failed: {}", e.what());
    }
  }

  void complain(const std::string& path) noexcept {
    if (!complained_) {
      complained_ = true;
      ROCE_WARN(NCCL_NET,
                "cannot write statistics to {}: {} (NCCL_ROCE_STATS_FILE); the job "
                "carries on without the file: point it at a writable directory",
                path, std::strerror(errno));
    }
  }

  int interval_ms_;
  std::string path_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool complained_ = false;
  std::thread thread_;
};

std::mutex writer_mutex;
Writer* writer = nullptr;
bool announced = false;

void announce(const WriterSettings& settings, const std::string& path) {
  const std::string text = stats_destination(settings, path);
  if (log::enabled(NCCL_LOG_INFO, NCCL_NET)) {
    ROCE_INFO(NCCL_NET, "{}", text);
  } else if (settings.summary) {
    const ProcessInfo p = current_process();
    const std::string line = fmt::format("{}:{} NET/RoCE {}\n", p.host, p.pid, text);
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
}

}  // namespace

std::string stats_destination(const WriterSettings& settings, const std::string& path) {
  std::string text;
  if (path.empty()) {
    text =
        "no statistics files (NCCL_ROCE_STATS_FILE is unset; set it, e.g. to "
        "/shared/dir/roce.%h.%p.jsonl, for JSON lines that scripts/roce_stats reads and a .prom "
        "file for node_exporter's textfile collector)";
  } else {
    text = fmt::format(
        "statistics every {} ms to {} (JSON lines; scripts/roce_stats reads them) and {}.prom "
        "(Prometheus text; point node_exporter's --collector.textfile.directory at that folder)",
        settings.interval_ms, path, path);
  }
  if (settings.summary) {
    text +=
        "; NCCL_ROCE_STATS=1: one summary per comm at its close, as an INFO line "
        "(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET shows them)";
  }
  return text;
}

void start_stats_writer(const WriterSettings& settings) {
  const std::lock_guard lock(writer_mutex);
  if (writer == nullptr && !settings.file_pattern.empty()) {
    // Closed comms are kept for the writer only (a comm closed between two writes still
    // appears in the next one); with no writer the registry keeps none.
    StatsRegistry::instance().keep_closed(StatsRegistry::kClosedKept);
    writer = new Writer(settings);
  }
  if (!announced && (settings.summary || writer != nullptr)) {
    announced = true;
    std::string path;
    if (!settings.file_pattern.empty()) {
      const ProcessInfo p = current_process();
      path = expand_path(settings.file_pattern, p.host, p.pid);
    }
    announce(settings, path);
  }
}

void stop_stats_writer() noexcept {
  const std::lock_guard lock(writer_mutex);
  if (writer != nullptr) {
    writer->stop();  // its loop writes once more on the way out
    delete writer;
    writer = nullptr;
    try {
      StatsRegistry::instance().keep_closed(0);  // nobody reads them any more
    } catch (...) {
      // std::mutex::lock can only throw on a broken mutex; stopping must not fail.
    }
  }
}

}  // namespace roce::telemetry
