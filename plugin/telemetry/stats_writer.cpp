// The stats file writer thread.
#include "telemetry/stats_writer.h"

#include <fcntl.h>
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
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      wake_.wait_for(lock, std::chrono::milliseconds(interval_ms_), [this] { return stopping_; });
      lock.unlock();
      write_once();
      lock.lock();
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
      // The textfile collector must never read a half-written file: write aside, then rename.
      const std::string prom = path_ + ".prom";
      const std::string tmp = prom + ".tmp";
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

}  // namespace

void start_stats_writer(const WriterSettings& settings) {
  if (settings.file_pattern.empty()) {
    return;
  }
  const std::lock_guard lock(writer_mutex);
  if (writer == nullptr) {
    writer = new Writer(settings);
  }
}

void stop_stats_writer() noexcept {
  const std::lock_guard lock(writer_mutex);
  if (writer != nullptr) {
    writer->stop();  // its loop writes once more on the way out
    delete writer;
    writer = nullptr;
  }
}

}  // namespace roce::telemetry
