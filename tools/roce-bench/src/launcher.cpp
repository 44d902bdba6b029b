// Starting and supervising the local ranks.
#include "launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include "errors.h"
#include "interrupt.h"
#include "json_writer.h"
#include "locations.h"
#include "rendezvous.h"
#include "vroce_env.h"
#include "vroce_sysfs.h"

namespace roce::bench {
namespace {

struct Child {
  pid_t pid = -1;
  int rank = -1;
  bool running = false;
  int exit_code = 0;
};

std::vector<VroceDevice> device_list() {
  const char* env = std::getenv("VROCE_DEVICES");
  if (env == nullptr || *env == '\0') {
    return default_vroce_devices();
  }
  auto devices = parse_vroce_devices(env);
  if (!devices) {
    throw UsageError(devices.error());
  }
  return *devices;
}

}  // namespace

std::string vroce_library(const Options& options) {
  if (!options.ibverbs_path.empty()) {
    return options.ibverbs_path;
  }
  if (const char* env = std::getenv("NCCL_IBVERBS_LIB"); env != nullptr && *env != '\0') {
    return env;
  }
  std::string path = default_vroce_path();
  if (path.empty()) {
    throw BenchError("vroce's libibverbs.so.1 was not found next to " + executable_path() +
                     "; build it (cmake --build build/<preset> --target vroce) or pass "
                     "--ibverbs PATH (--rank/--nranks run on real NICs without vroce)");
  }
  return path;
}

namespace {

[[noreturn]] void exec_rank(const std::vector<std::string>& args, int rank, int nranks,
                            const std::string& address, int listen_fd, const RankEnvironment& env,
                            const std::string& sysfs_root, pid_t parent) {
  // Die with the launcher, even if it is SIGKILLed (ctest timeouts), so no rank lingers.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) {
    _exit(kExitFailure);
  }
  if (!sysfs_root.empty()) {
    const std::string error = enter_vroce_sysfs(sysfs_root);
    if (!error.empty()) {
      std::fprintf(stderr, "roce-bench: rank %d: --vroce-sysfs: %s\n", rank, error.c_str());
      _exit(kExitFailure);
    }
  }
  setenv("VROCE_DEVICES", env.vroce_devices.c_str(), 1);
  setenv("NCCL_IB_HCA", env.nccl_ib_hca.c_str(), 1);
  setenv("NCCL_IBVERBS_LIB", env.ibverbs_lib.c_str(), 1);
  if (!env.pci_functions.empty()) {
    setenv("VROCE_PCI_FUNCTIONS", env.pci_functions.c_str(), 1);
  }
  if (!env.sysfs_root.empty()) {
    setenv("VROCE_SYSFS_ROOT", env.sysfs_root.c_str(), 1);
    setenv("NCCL_ROCE_SYSFS_ROOT", env.sysfs_root.c_str(), 1);
  }
  setenv(kLaunchedEnv, "1", 1);
  if (rank == 0) {
    const int flags = fcntl(listen_fd, F_GETFD);
    fcntl(listen_fd, F_SETFD, flags & ~FD_CLOEXEC);
    setenv(kRendezvousFdEnv, std::to_string(listen_fd).c_str(), 1);
  } else {
    unsetenv(kRendezvousFdEnv);
  }
  std::vector<std::string> argv_strings;
  argv_strings.push_back("roce-bench");
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  for (const std::string& extra :
       {std::string("--rank"), std::to_string(rank), std::string("--nranks"),
        std::to_string(nranks), std::string("--rendezvous"), address}) {
    argv_strings.push_back(extra);
  }
  std::vector<char*> argv;
  argv.reserve(argv_strings.size() + 1);
  for (auto& s : argv_strings) {
    argv.push_back(s.data());
  }
  argv.push_back(nullptr);
  const std::string self = executable_path();
  execv(self.c_str(), argv.data());
  std::fprintf(stderr, "roce-bench: cannot start rank %d (%s): %s\n", rank, self.c_str(),
               std::strerror(errno));
  _exit(kExitFailure);
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) {
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "stopped";
}

// The document --json gets when the ranks failed before rank 0 reported.
void write_failure_json(const Options& options, const std::string& why) {
  tools::JsonWriter j;
  j.begin_object();
  j.key("tool").value("roce-bench");
  j.key("mode").value(mode_name(options.mode));
  j.key("nranks").value(options.nranks);
  j.key("series").begin_array().end_array();
  j.key("wrong_total").value(std::uint64_t{0});
  j.key("status").value("fail");
  j.key("error").value(why);
  j.end_object();
  const std::string text = j.str() + "\n";
  if (options.json_stdout) {
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
  }
  if (!options.json_file.empty()) {
    if (std::FILE* f = std::fopen(options.json_file.c_str(), "w"); f != nullptr) {
      std::fputs(text.c_str(), f);
      std::fclose(f);
    }
  }
}

}  // namespace

int launch_ranks(const Options& options, const std::vector<std::string>& args) {
  const std::vector<VroceDevice> devices = device_list();
  const std::string library = vroce_library(options);
  // --vdevice: each rank fuses its own devices, so it gets as many as the largest index needs.
  const int per_rank = options.vdevice.empty()
                           ? 1
                           : *std::max_element(options.vdevice.begin(), options.vdevice.end()) + 1;
  std::vector<RankEnvironment> envs;
  envs.reserve(static_cast<size_t>(options.nranks));
  for (int r = 0; r < options.nranks; ++r) {
    envs.push_back(rank_environment(devices, r, options.nranks, library, per_rank));
  }
  // --vroce-sysfs: one tree per rank (each rank's vroce lists only its own device).
  // The folder goes when this returns, after the ranks (and their namespaces) are gone; the host
  // never saw the mounts.
  std::optional<VroceSysfsFolder> sysfs_folder;
  std::vector<std::string> sysfs_roots(static_cast<std::size_t>(options.nranks));
  if (options.vroce_sysfs) {
    sysfs_folder.emplace();
    for (int r = 0; r < options.nranks; ++r) {
      auto& root = sysfs_roots[static_cast<std::size_t>(r)];
      root = sysfs_folder->path() + "/rank" + std::to_string(r);
      write_vroce_sysfs(root, envs[static_cast<std::size_t>(r)].vroce_devices, library);
    }
  }
  // --vdevice: vroce keeps each device's port counters in a fake sysfs tree, where the ranks
  // read what each member carried, and where the plugin sees the rank's devices as one dual-port
  // card. A tree per rank (each rank's vroce numbers the PCI buses of its own devices), unless
  // the caller has one.
  std::optional<VroceSysfsFolder> counters_folder;
  if (!options.vdevice.empty() && !options.vroce_sysfs &&
      std::getenv("VROCE_SYSFS_ROOT") == nullptr) {
    counters_folder.emplace();
    for (int r = 0; r < options.nranks; ++r) {
      envs[static_cast<std::size_t>(r)].sysfs_root =
          counters_folder->path() + "/rank" + std::to_string(r);
    }
  }
  std::string address;
  const int listen_fd =
      listen_tcp(options.rendezvous.empty() ? "127.0.0.1:0" : options.rendezvous, &address);

  std::string json_mark;
  if (options.json_stdout || !options.json_file.empty()) {
    char mark[] = "/tmp/roce-bench-json.XXXXXX";
    const int fd = mkstemp(mark);
    if (fd >= 0) {
      close(fd);
      unlink(mark);
      json_mark = mark;
      setenv(kJsonMarkEnv, mark, 1);
    }
  }

  std::fflush(stdout);
  std::fflush(stderr);
  // Ctrl-C: forwarded to the ranks, which stop at the next size and write what they have; a
  // second one kills them.
  install_launcher_interrupt_handler();
  const pid_t self = getpid();
  std::vector<Child> children;
  for (int r = 0; r < options.nranks; ++r) {
    const pid_t pid = fork();
    if (pid < 0) {
      std::fprintf(stderr, "roce-bench: fork for rank %d failed: %s\n", r, std::strerror(errno));
      for (auto& c : children) {
        kill(c.pid, SIGKILL);
      }
      close(listen_fd);
      return kExitFailure;
    }
    if (pid == 0) {
      exec_rank(args, r, options.nranks, address, listen_fd, envs[static_cast<std::size_t>(r)],
                sysfs_roots[static_cast<std::size_t>(r)], self);
    }
    children.push_back({pid, r, true, 0});
  }
  close(listen_fd);

  int result = kExitOk;
  std::string first_failure;
  int running = options.nranks;
  bool stopping = false;
  int interrupts_seen = 0;
  auto stop_deadline = std::chrono::steady_clock::time_point::max();
  while (running > 0) {
    if (const int n = interrupt_count(); n != interrupts_seen) {
      interrupts_seen = n;
      for (auto& c : children) {
        if (c.running) {
          kill(c.pid, n >= 2 ? SIGKILL : SIGINT);
        }
      }
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, stopping ? WNOHANG : 0);
    if (pid < 0) {
      if (errno == EINTR) {
        continue;
      }
      break;
    }
    if (pid == 0) {
      // Stopping: give the others a moment to exit on SIGTERM, then force them.
      if (std::chrono::steady_clock::now() > stop_deadline) {
        for (auto& c : children) {
          if (c.running) {
            kill(c.pid, SIGKILL);
          }
        }
        stop_deadline = std::chrono::steady_clock::time_point::max();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    for (auto& c : children) {
      if (c.pid != pid || !c.running) {
        continue;
      }
      c.running = false;
      --running;
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (ok) {
        break;
      }
      // A rank that stopped on Ctrl-C (the ranks agree on it, so the others stop at the same
      // size): not a failure. After a second Ctrl-C the launcher killed them itself.
      if (!stopping && WIFEXITED(status) && WEXITSTATUS(status) == kExitInterrupted) {
        result = kExitInterrupted;
        break;
      }
      if (interrupts_seen >= 2) {
        break;
      }
      if (!stopping) {
        std::fprintf(stderr, "roce-bench: rank %d %s; stopping the other ranks\n", c.rank,
                     describe_status(status).c_str());
        result = WIFEXITED(status) && WEXITSTATUS(status) == kExitUsage ? kExitUsage : kExitFailure;
        first_failure = "rank " + std::to_string(c.rank) + " " + describe_status(status);
        stopping = true;
        stop_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
        for (auto& other : children) {
          if (other.running) {
            kill(other.pid, SIGTERM);
          }
        }
      }
      break;
    }
  }
  if (interrupts_seen >= 2) {
    std::fprintf(stderr, "roce-bench: interrupted twice; the ranks were killed\n");
    result = kExitInterrupted;
    first_failure = "interrupted twice (SIGINT); the ranks were killed";
  }
  if (!json_mark.empty()) {
    if (access(json_mark.c_str(), F_OK) == 0) {
      unlink(json_mark.c_str());
    } else if (result != kExitOk) {
      write_failure_json(options, first_failure + " before the results were written (its " +
                                      "error is on stderr)");
    }
  }
  return result;
}

}  // namespace roce::bench
