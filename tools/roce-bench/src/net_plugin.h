// A version-neutral adapter over the ncclNet_v8..v11 tables a plugin exports: ours or any other
// (NCCL's IB transport built as nccl-rdma-sharp-plugins' libnccl-net.so, for the side-by-side).
// It loads the plugin by path (dlopen RTLD_NOW|RTLD_LOCAL, then dlsym "ncclNetPlugin_vN", as
// NCCL does), checks the name and init at load and the other members after init, and offers one set
// of calls whatever the version: v10's traffic-class connect config and v11's per-communicator
// context are handled here. Every call that returns an error throws BenchError naming the call, the
// device or comm and the ncclResult_t.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "nccl_net/nccl_net.h"
#include "options.h"

namespace roce::bench {

// ncclNetProperties_vN in one shape. Fields a version lacks hold what NCCL's shim assumes for
// that version (v8: forceFlush 0, maxP2pBytes 1 GiB, maxCollBytes 512 MiB).
struct NetProperties {
  std::string name;
  std::optional<std::string> pci_path;  // nullopt when the plugin gives NULL
  std::uint64_t guid = 0;
  int ptr_support = 0;
  int reg_is_global = 0;
  int force_flush = 0;
  int speed_mbps = 0;
  int port = 0;
  float latency_us = 0;
  int max_comms = 0;
  int max_recvs = 0;
  int net_device_type = 0;
  int net_device_version = 0;
  int vdev_count = 0;
  std::size_t max_p2p_bytes = 0;
  std::size_t max_coll_bytes = 0;
  std::optional<int> max_multi_request_size;  // v11 only
};

// "HOST|CUDA|DMABUF".
std::string ptr_support_text(int ptr_support);
const char* nccl_result_name(ncclResult_t result);

using NetHandle = std::array<char, NCCL_NET_HANDLE_MAXSIZE>;

// Calls made and how often the plugin asked to be called again: the figures the callgrind
// script divides by.
struct CallCounters {
  std::uint64_t isend = 0;
  std::uint64_t isend_retry = 0;  // *request came back NULL
  std::uint64_t irecv = 0;
  std::uint64_t irecv_retry = 0;
  std::uint64_t test = 0;
  std::uint64_t test_pending = 0;  // done == 0
  std::uint64_t iflush = 0;
  std::uint64_t ll_hints = 0;  // irecv calls made with (void*)0x1 pre-set in *request
};

class NetPlugin {
 public:
  // Throws BenchError when the library cannot be loaded, lacks the table or the table is unusable.
  NetPlugin(const std::string& path, Api api);
  ~NetPlugin();
  NetPlugin(const NetPlugin&) = delete;
  NetPlugin& operator=(const NetPlugin&) = delete;

  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }
  Api api() const { return api_; }
  std::string symbol() const;

  // init once; v10 keeps the traffic class for connect, v11 passes it in the init config. Then
  // checks the members NCCL calls unconditionally and reads the name again.
  void init(ncclDebugLogger_t logger, int traffic_class, std::uint64_t comm_id);
  // v11 finalize(ctx); nothing for older versions. Called by the destructor if not before.
  void finalize();

  int devices();
  NetProperties properties(int dev);

  void* listen(int dev, NetHandle& handle);
  // One non-blocking step each, as NCCL's proxy calls them: nullptr means "call again". The same
  // handle buffer must be passed on every retry.
  void* connect(int dev, NetHandle& handle);
  void* accept(void* listen_comm);

  void* reg_mr(void* comm, void* data, std::size_t size, int type);
  bool has_reg_mr_dmabuf() const;
  void* reg_mr_dmabuf(void* comm, void* data, std::size_t size, int type, std::uint64_t offset,
                      int fd);
  void dereg_mr(void* comm, void* mhandle);

  // nullptr: the plugin cannot post now (no clear-to-send yet); call again later.
  void* isend(void* send_comm, void* data, std::size_t size, int tag, void* mhandle);
  // One receive (n = 1). With ll_hint on v9+, *request is pre-set to (void*)0x1 as NCCL does for
  // LL/LL128; a plugin that leaves it there fails the run.
  void* irecv(void* recv_comm, void* data, std::size_t size, int tag, void* mhandle, bool ll_hint);
  // nullptr: nothing to wait for.
  void* iflush(void* recv_comm, void* data, int size, void* mhandle);
  bool has_iflush() const;
  // True when done; *size (may be null) receives the byte count the plugin reports.
  bool test(void* request, int* size);

  void close_send(void* comm);
  void close_recv(void* comm);
  void close_listen(void* comm);

  const CallCounters& counters() const { return counters_; }
  // Calls made inside timed regions only (between timed_region(true) and timed_region(false)).
  const CallCounters& timed_counters() const { return timed_counters_; }
  void timed_region(bool begin);

 private:
  void check(ncclResult_t result, const char* call, const std::string& context) const;
  std::string current_name() const;

  std::string path_;
  Api api_;
  void* library_ = nullptr;
  std::string name_;
  const ncclNet_v8_t* v8_ = nullptr;
  const ncclNet_v9_t* v9_ = nullptr;
  const ncclNet_v10_t* v10_ = nullptr;
  const ncclNet_v11_t* v11_ = nullptr;
  bool initialized_ = false;
  void* ctx_ = nullptr;  // v11
  ncclNetCommConfig_v10_t comm_config_{NCCL_NET_TRAFFIC_CLASS_UNDEF};
  CallCounters counters_;
  CallCounters region_start_;
  CallCounters timed_counters_;
};

}  // namespace roce::bench
