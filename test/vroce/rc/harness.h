// Test harness for vroce's RC tests, the two-process peer program and the benchmark: open a
// device, make an RC endpoint (PD, CQs, QP), connect it to a peer described by a plain struct,
// registered buffers with data patterns, and completion waits with a deadline. Only public verbs
// calls, so it drives vroce exactly as an application does. Setup failures throw.
#pragma once

#include <infiniband/verbs.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace vroce_test {

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws Failure with the text and errno's meaning when `ok` is false.
void require(bool ok, const std::string& what);

// An opened device with a PD and the index of the RoCEv2 GID of its bound address.
struct Device {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  std::string name;
  int gid_index = -1;
  ibv_gid gid{};
  ibv_port_attr port{};

  Device() = default;
  explicit Device(const std::string& device_name);
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  ~Device();
};

struct QpOptions {
  uint32_t max_send_wr = 256;
  uint32_t max_recv_wr = 256;
  uint32_t max_sge = 4;
  uint32_t max_inline = 256;
  int cqe = 1024;
  bool sq_sig_all = false;
  bool with_channel = false;  // CQs bound to one completion channel
  ibv_mtu mtu = IBV_MTU_4096;
  uint8_t timeout = 14;
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  uint8_t min_rnr_timer = 1;  // 0.01 ms
  uint8_t traffic_class = 0;
  uint8_t hop_limit = 64;
  uint8_t max_rd_atomic = 16;
  uint8_t max_dest_rd_atomic = 16;
  unsigned access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
};

// What one side tells the other to connect (a plain struct, sent as bytes between processes).
struct PeerInfo {
  uint32_t qpn = 0;
  uint32_t psn = 0;
  ibv_gid gid{};
  uint64_t addr = 0;  // a buffer the peer may access remotely
  uint32_t rkey = 0;
  uint64_t length = 0;
};

// A QP with its own send and receive CQs.
struct Endpoint {
  Device* device = nullptr;
  ibv_comp_channel* channel = nullptr;
  ibv_cq* send_cq = nullptr;
  ibv_cq* recv_cq = nullptr;
  ibv_qp* qp = nullptr;
  uint32_t psn = 0;
  QpOptions options;

  Endpoint(Device& dev, const QpOptions& opts);
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;
  ~Endpoint();

  PeerInfo info() const;
  // RESET -> INIT -> RTR -> RTS towards `remote`.
  void connect(const PeerInfo& remote);
};

// A registered, page-aligned buffer (plus `offset` bytes, so tests can use unaligned starts).
struct Buffer {
  std::vector<uint8_t> storage;
  uint8_t* data = nullptr;
  size_t size = 0;
  ibv_mr* mr = nullptr;

  Buffer(ibv_pd* pd, size_t bytes, unsigned access, size_t offset = 0);
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  uint64_t addr() const { return reinterpret_cast<uint64_t>(data); }
  ibv_sge sge(size_t at, size_t length) const;
};

// Deterministic bytes for (seed, position), so both sides can check without sharing data.
uint8_t pattern_byte(uint64_t seed, uint64_t position);
void fill_pattern(uint8_t* data, size_t length, uint64_t seed, uint64_t start = 0);
// Index of the first wrong byte, or -1 when all match.
int64_t find_mismatch(const uint8_t* data, size_t length, uint64_t seed, uint64_t start = 0);

// Polls `cq` until `count` completions arrived or the deadline passed; returns what arrived.
std::vector<ibv_wc> wait_completions(ibv_cq* cq, size_t count, std::chrono::milliseconds timeout);

// Spins on `word` with acquire loads until it holds `expected`, as a program polls the last word
// of a buffer an RDMA WRITE fills (vroce stores that word last, with release: ordered_copy.h).
// Mostly a tight loop; every 64th spin checks the deadline and yields, so that vroce's threads
// get a core on a small machine. False when the deadline passed first.
bool wait_for_word(const uint64_t* word, uint64_t expected, std::chrono::milliseconds timeout);

// Waits for one async event of the context; false on timeout.
bool wait_async_event(ibv_context* ctx, ibv_async_event* event, std::chrono::milliseconds timeout);

// Counters of this process as JSON, and one number from them ("drops.bad_icrc").
std::string stats_json();
uint64_t stat(const std::string& json, const std::string& dotted_path);

const char* wc_status_name(ibv_wc_status status);

}  // namespace vroce_test
