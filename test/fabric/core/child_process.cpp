// ChildProcess: see child_process.h.
#include "child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "hang_bound.h"

extern char** environ;

namespace roce::test {

ChildProcess::ChildProcess(const std::vector<std::string>& argv,
                           const std::map<std::string, std::string>& env) {
  int in_pipe[2];
  int out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) {
      merged[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  for (const auto& [k, v] : env) {
    merged[k] = v;
  }
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : merged) {
    env_strings.push_back(k + "=" + v);
  }
  std::vector<char*> envp;
  for (auto& s : env_strings) {
    envp.push_back(s.data());
  }
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (auto& s : args) {
    argp.push_back(s.data());
  }
  argp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  // stderr too: the plugin's WARN lines are part of what the tests check.
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDERR_FILENO);
  int rc = posix_spawn(&pid_, argp[0], &actions, nullptr, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(in_pipe[0]);
  close(out_pipe[1]);
  stdin_fd_ = in_pipe[1];
  stdout_fd_ = out_pipe[0];
  if (rc != 0) {
    close(stdin_fd_);
    close(stdout_fd_);
    throw std::runtime_error("posix_spawn " + argv[0] + ": " + std::strerror(rc));
  }
}

ChildProcess::~ChildProcess() {
  if (!reaped_) {
    kill_now(SIGKILL);
    wait(kHangBoundMs);  // SIGKILL cannot be caught: this only reaps
  }
  if (stdin_fd_ >= 0)
    close(stdin_fd_);
  if (stdout_fd_ >= 0)
    close(stdout_fd_);
}

std::optional<std::string> ChildProcess::read_line(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      lines_.push_back(line);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      return std::nullopt;
    }
    pollfd pfd{stdout_fd_, POLLIN, 0};
    int rc = poll(&pfd, 1, static_cast<int>(left));
    if (rc < 0 && errno == EINTR) {
      continue;
    }
    if (rc <= 0) {
      return std::nullopt;
    }
    char chunk[4096];
    ssize_t n = read(stdout_fd_, chunk, sizeof chunk);
    if (n <= 0) {
      return std::nullopt;
    }
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

std::optional<std::string> ChildProcess::wait_for(const std::string& prefix, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      return std::nullopt;
    }
    auto line = read_line(static_cast<int>(left));
    if (!line) {
      return std::nullopt;
    }
    if (line->rfind(prefix, 0) == 0) {
      return line;
    }
  }
}

void ChildProcess::write_line(const std::string& line) {
  std::string text = line + "\n";
  if (::write(stdin_fd_, text.data(), text.size()) < 0) {
    // The child may already be gone; the caller checks its exit status.
  }
}

void ChildProcess::kill_now(int signal) {
  if (!reaped_ && pid_ > 0) {
    ::kill(pid_, signal);
  }
}

int ChildProcess::kill_and_wait(int signal, int timeout_ms) {
  kill_now(signal);
  return wait(timeout_ms);
}

int ChildProcess::wait(int timeout_ms) {
  if (reaped_) {
    return status_;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    int status = 0;
    pid_t rc = waitpid(pid_, &status, WNOHANG);
    if (rc == pid_) {
      reaped_ = true;
      status_ = WIFEXITED(status)     ? WEXITSTATUS(status)
                : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                      : -1;
      return status_;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return -1;
    }
    usleep(10000);
  }
}

std::string ChildProcess::output() const {
  std::string all;
  for (const auto& line : lines_) {
    all += line + "\n";
  }
  return all;
}

std::string executable_dir() {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) {
    return ".";
  }
  path[n] = '\0';
  std::string p = path;
  return p.substr(0, p.rfind('/'));
}

std::string fabric_peer_binary() {
  const char* path = std::getenv("ROCE_FABRIC_PEER");
  if (path == nullptr) {
    throw std::runtime_error("ROCE_FABRIC_PEER is not set: run the test through ctest");
  }
  return path;
}

}  // namespace roce::test
