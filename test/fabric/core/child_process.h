// A child process for the multi-process fabric tests: spawned with extra environment variables,
// its stdin piped and its stdout and stderr merged into one pipe, lines read with a timeout, and
// killed and reaped when the object goes away (so a failing test never leaves a peer running).
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace roce::test {

class ChildProcess {
 public:
  // Runs argv[0] with argv, the parent's environment plus `env` (overriding). Throws on failure.
  ChildProcess(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // The next line of stdout (without the newline), or nullopt on EOF or timeout.
  std::optional<std::string> read_line(int timeout_ms);
  // Reads lines until one starts with `prefix`; returns it, or nullopt. Lines read are kept.
  std::optional<std::string> wait_for(const std::string& prefix, int timeout_ms);
  void write_line(const std::string& line);
  void kill_now(int signal);
  // Exit status (0..255), 128+signal when killed, or -1 on timeout.
  int wait(int timeout_ms);
  // kill_now(signal), then wait(timeout_ms): what a test that kills its peer checks.
  int kill_and_wait(int signal, int timeout_ms);
  const std::vector<std::string>& lines() const { return lines_; }
  // Every line read so far, each ending in a newline: for a failing test's message.
  std::string output() const;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  bool reaped_ = false;
  int status_ = -1;
  std::string buffer_;
  std::vector<std::string> lines_;
};

// Directory of the running test executable (helpers are built next to it).
std::string executable_dir();

// The fabric_peer executable the multi-process tests run (ROCE_FABRIC_PEER, which each test
// executable's test_environment.cpp sets). Throws when it is not set.
std::string fabric_peer_binary();

}  // namespace roce::test
