// The ranks' out-of-band meeting point: rank 0 listens on a TCP address, every other rank
// connects, and all exchange opaque blobs (the plugin's listen handles, raw QP descriptions,
// timings) through allgather. Rank 0 checks that every rank runs with the same options and size.
// Blocking with deadlines: this runs outside the measured loops. A rank that dies closes its
// socket, which the others notice at their next exchange or check_alive().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace roce::bench {

struct HostPort {
  std::string host;
  std::string port;
};

// Splits "host:port" or "[v6]:port". Throws BenchError on malformed text.
HostPort split_host_port(const std::string& text);

// A listening TCP socket bound to host:port (port 0: an ephemeral one). Returns the fd and
// writes the bound "host:port" into *bound.
int listen_tcp(const std::string& address, std::string* bound);

class Rendezvous {
 public:
  // Rank 0 serves on listen_fd when it is >= 0 (inherited from the launcher), else binds
  // `address`. Other ranks connect to `address`, retrying until timeout_s (rank 0 may start
  // later). Returns once all nranks have joined.
  Rendezvous(int rank, int nranks, const std::string& address, int listen_fd,
             std::uint64_t fingerprint, double timeout_s);
  ~Rendezvous();
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

  // Every rank's blob, indexed by rank.
  std::vector<std::string> allgather(std::string_view blob);
  void barrier();
  // Throws BenchError when a peer's connection has closed (the peer exited). Cheap: one poll().
  void check_alive();

 private:
  void serve(int listen_fd, std::uint64_t fingerprint);
  void join(const std::string& address, std::uint64_t fingerprint);

  int rank_;
  int nranks_;
  double timeout_s_;
  std::vector<int> peers_;  // rank 0: fd per rank (index 0 unused); others: [0] = rank 0
};

}  // namespace roce::bench
