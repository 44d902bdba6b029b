// The job's rank and size from the launcher's environment.
#include "job_env.h"

#include <array>
#include <charconv>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, not in a header

namespace roce::bench {
namespace {

struct Launcher {
  const char* name;
  const char* rank_var;
  const char* size_var;
};

// Innermost first: see job_env.h.
constexpr std::array<Launcher, 3> kLaunchers = {{
    {"torchrun", "RANK", "WORLD_SIZE"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS"},
}};

const std::string* find(const EnvMap& env, const char* name) {
  const auto it = env.find(name);
  return it == env.end() ? nullptr : &it->second;
}

std::optional<int> to_int(const std::string& text) {
  int value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || ptr != end) {
    return std::nullopt;
  }
  return value;
}

// MASTER_ADDR and MASTER_PORT as host:port. Under torchrun its agent's store already listens on
// MASTER_PORT on the master node, so rank 0 listens on the port after it.
Result<std::string> rendezvous_of(const EnvMap& env, bool torchrun) {
  const std::string* addr = find(env, "MASTER_ADDR");
  const std::string* port = find(env, "MASTER_PORT");
  if (addr == nullptr && port == nullptr) {
    return std::string();
  }
  if (addr == nullptr || addr->empty()) {
    return failure(
        "MASTER_PORT is set but MASTER_ADDR is not: set MASTER_ADDR to rank 0's host "
        "(or unset MASTER_PORT and pass --rendezvous HOST:PORT)");
  }
  if (port == nullptr) {
    return failure(
        "MASTER_ADDR is set but MASTER_PORT is not: set MASTER_PORT (or pass "
        "--rendezvous HOST:PORT)");
  }
  const auto number = to_int(*port);
  const int limit = torchrun ? 65534 : 65535;
  if (!number || *number < 1 || *number > limit) {
    return failure("MASTER_PORT='" + *port + "' is not a port number in 1.." +
                   std::to_string(limit));
  }
  const int listen_port = torchrun ? *number + 1 : *number;
  const bool v6 = addr->find(':') != std::string::npos && addr->front() != '[';
  return (v6 ? "[" + *addr + "]" : *addr) + ":" + std::to_string(listen_port);
}

}  // namespace

Result<std::optional<JobEnv>> job_from_environment(const EnvMap& env, int max_ranks) {
  for (const Launcher& l : kLaunchers) {
    const std::string* rank_text = find(env, l.rank_var);
    const std::string* size_text = find(env, l.size_var);
    if (rank_text == nullptr && size_text == nullptr) {
      continue;
    }
    const std::string vars = std::string(l.rank_var) + "/" + l.size_var;
    if (rank_text == nullptr || size_text == nullptr) {
      const char* missing = rank_text == nullptr ? l.rank_var : l.size_var;
      const char* present = rank_text == nullptr ? l.size_var : l.rank_var;
      return failure(std::string(present) + " is set but " + missing + " is not (" + l.name +
                     "'s " + vars + " come together): set " + missing + ", unset " + present +
                     ", or pass --rank R --nranks N --rendezvous HOST:PORT");
    }
    const auto rank = to_int(*rank_text);
    const auto size = to_int(*size_text);
    if (!size || *size < 1 || *size > max_ranks) {
      return failure(std::string(l.size_var) + "='" + *size_text + "': expected a job size in 1.." +
                     std::to_string(max_ranks));
    }
    if (!rank || *rank < 0 || *rank >= *size) {
      return failure(std::string(l.rank_var) + "='" + *rank_text + "': expected a rank below " +
                     l.size_var + "=" + *size_text);
    }
    if (*size == 1) {
      return std::optional<JobEnv>();
    }
    const bool torchrun = l.rank_var == kLaunchers[0].rank_var;
    auto rendezvous = rendezvous_of(env, torchrun);
    if (!rendezvous) {
      return failure(rendezvous.error());
    }
    return std::optional<JobEnv>(
        JobEnv{*rank, *size, *rendezvous, std::string(l.name) + " (" + vars + ")"});
  }
  return std::optional<JobEnv>();
}

EnvMap process_environment() {
  EnvMap env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    const auto eq = entry.find('=');
    if (eq != std::string::npos) {
      env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
    }
  }
  return env;
}

}  // namespace roce::bench
