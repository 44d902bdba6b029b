#include "pair_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace vroce_test {
namespace {

struct Child {
  pid_t pid = -1;
  int out = -1;  // read end of its stdout
  std::string output;
  int status = 0;
  bool done = false;
};

Child spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env_extra,
            int keep_fd) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe2 failed");
  }
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    env.emplace_back(*e);
  }
  for (const auto& kv : env_extra) {
    std::string name = kv.substr(0, kv.find('='));
    std::erase_if(env, [&](const std::string& x) { return x.rfind(name + "=", 0) == 0; });
    env.push_back(kv);
  }
  std::vector<char*> cargv;
  for (const auto& a : argv) {
    cargv.push_back(const_cast<char*>(a.c_str()));
  }
  cargv.push_back(nullptr);
  std::vector<char*> cenv;
  for (const auto& e : env) {
    cenv.push_back(const_cast<char*>(e.c_str()));
  }
  cenv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    throw std::runtime_error("fork failed");
  }
  if (pid == 0) {
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    // The socket must survive exec; everything else of ours is O_CLOEXEC.
    int flags = ::fcntl(keep_fd, F_GETFD);
    ::fcntl(keep_fd, F_SETFD, flags & ~FD_CLOEXEC);
    ::execvpe(cargv[0], cargv.data(), cenv.data());
    std::fprintf(stderr, "exec %s: %s\n", cargv[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  return Child{pid, pipe_fds[0], {}, 0, false};
}

PeerResult finish(Child& c) {
  PeerResult r;
  r.output = c.output;
  if (c.done && WIFEXITED(c.status)) {
    r.exit_code = WEXITSTATUS(c.status);
  }
  std::istringstream lines(c.output);
  std::string line;
  while (std::getline(lines, line)) {
    auto eq = line.find('=');
    if (eq != std::string::npos) {
      r.values[line.substr(0, eq)] = line.substr(eq + 1);
    }
  }
  return r;
}

}  // namespace

const std::string& PeerResult::at(const std::string& key) const {
  auto it = values.find(key);
  if (it == values.end()) {
    throw std::runtime_error("peer printed no " + key + "; output was:\n" + output);
  }
  return it->second;
}

PairResult run_pair(const std::string& peer_binary, const PairSpec& spec) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    throw std::runtime_error("socketpair failed");
  }
  auto command = [&](const std::vector<std::string>& wrap, const std::string& role,
                     const std::string& device, int fd) {
    std::vector<std::string> argv = wrap;
    argv.insert(argv.end(), {peer_binary, "--role", role, "--device", device, "--scenario",
                             spec.scenario, "--sock", std::to_string(fd)});
    argv.insert(argv.end(), spec.args.begin(), spec.args.end());
    return argv;
  };
  Child children[2] = {
      spawn(command(spec.responder_wrap, "responder", spec.responder_device, sv[1]),
            spec.responder_env, sv[1]),
      spawn(command(spec.requester_wrap, "requester", spec.requester_device, sv[0]),
            spec.requester_env, sv[0]),
  };
  ::close(sv[0]);
  ::close(sv[1]);
  auto deadline = std::chrono::steady_clock::now() + spec.deadline;
  while (!(children[0].done && children[1].done)) {
    pollfd fds[2];
    for (int i = 0; i < 2; ++i) {
      fds[i] = pollfd{children[i].out, POLLIN, 0};
    }
    ::poll(fds, 2, 100);
    for (int i = 0; i < 2; ++i) {
      Child& c = children[i];
      if (c.out >= 0 && (fds[i].revents & (POLLIN | POLLHUP)) != 0) {
        char buf[4096];
        ssize_t n = ::read(c.out, buf, sizeof(buf));
        if (n > 0) {
          c.output.append(buf, static_cast<size_t>(n));
        } else {
          ::close(c.out);
          c.out = -1;
        }
      }
      if (!c.done && c.out < 0 && ::waitpid(c.pid, &c.status, WNOHANG) == c.pid) {
        c.done = true;
      }
    }
    if (std::chrono::steady_clock::now() > deadline) {
      for (Child& c : children) {
        if (!c.done) {
          ::kill(c.pid, SIGKILL);
          ::waitpid(c.pid, &c.status, 0);
          c.status = 0;  // reported as killed
          if (c.out >= 0) {
            ::close(c.out);
            c.out = -1;
          }
        }
      }
      break;
    }
  }
  PairResult result;
  result.responder = finish(children[0]);
  result.requester = finish(children[1]);
  if (!children[0].done) {
    result.responder.exit_code = -1;
  }
  if (!children[1].done) {
    result.requester.exit_code = -1;
  }
  return result;
}

}  // namespace vroce_test
