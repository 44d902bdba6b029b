// roce-bench's driver of the ncclNet_v6..v12 table a plugin exports: ours or any other (NCCL's IB
// transport built as nccl-rdma-sharp-plugins' libnccl-net.so, for the side-by-side). The version
// dispatch is the tools' shared one (tools/common/net_table.h, also under the fabric tests); this
// layer checks the name and init at load and the other members after init, passes the profiler
// callback and handles, counts the calls for the callgrind figures, and turns every error into a
// BenchError naming the call, the device or comm and the ncclResult_t.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nccl_net/nccl_net.h"
#include "options.h"

namespace roce::bench {

// The shared table's types (tools/common/net_table.h). properties() fills what v8 lacks with
// what NCCL's v8 shim assumes (maxP2pBytes 1 GiB, maxCollBytes 512 MiB).
using tools::nccl_result_name;
using tools::NetHandle;
using tools::NetProperties;
using tools::ptr_support_text;

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
  // makeVDevice (v9+): the virtual NIC's device index. Throws BenchError, naming the members,
  // when the table has none or the plugin refuses.
  int make_vdevice(const std::vector<int>& members);

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

  std::string path_;
  Api api_;
  std::unique_ptr<tools::NetTable> table_;
  std::string name_;
  bool initialized_ = false;
  CallCounters counters_;
  CallCounters region_start_;
  CallCounters timed_counters_;
};

}  // namespace roce::bench
