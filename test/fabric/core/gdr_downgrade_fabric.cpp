// NCCL's silent GPUDirect downgrade, driven as NCCL drives the plugin when ncclTopoCheckGdr
// turns GPUDirect off for a GPU and NIC too far apart (net.cc recvProxyConnect with useGdr = 0):
// the receive comm gets its LL, LL128 and SIMPLE staging buffers registered as NCCL_PTR_HOST
// while the proxy thread has a CUDA context, then one slice is received. A stand-in libcuda.so.1
// (test/vroce/rc/fake_cuda), loaded before the plugin, gives this thread its context. With
// NCCL_ROCE_REQUIRE_GDR=1 the irecv fails naming GPU, NIC, PCI path, NCCL_NET_GDR_LEVEL and the
// fix; without it, one WARN per device and the traffic flows.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "hang_bound.h"
#include "plugin_driver.h"
#include "test_addresses.h"
#include "test_backend.h"
#include "traffic.h"

using namespace roce::test;

namespace {

// Loads the stand-in driver globally (so the plugin's dlopen("libcuda.so.1", RTLD_NOLOAD) finds
// it) and makes its primary context current on this thread.
void make_cuda_context_current() {
  void* cuda = dlopen(ROCE_FAKE_CUDA_LIBRARY, RTLD_NOW | RTLD_GLOBAL);
  REQUIRE(cuda != nullptr);
  using Retain = int (*)(void**, int);
  using SetCurrent = int (*)(void*);
  auto retain = reinterpret_cast<Retain>(dlsym(cuda, "cuDevicePrimaryCtxRetain"));
  auto set_current = reinterpret_cast<SetCurrent>(dlsym(cuda, "cuCtxSetCurrent"));
  REQUIRE(retain != nullptr);
  REQUIRE(set_current != nullptr);
  void* context = nullptr;
  REQUIRE(retain(&context, 0) == 0);
  REQUIRE(set_current(context) == 0);
}

struct Pair {
  void* send_comm = nullptr;
  void* recv_comm = nullptr;
};

Pair connect_pair(PluginDriver& plugin, int send_dev, int recv_dev) {
  Handle handle;
  void* listen_comm = nullptr;
  REQUIRE(plugin.listen(recv_dev, &handle, &listen_comm) == ncclSuccess);
  Pair pair;
  ncclResult_t accepted = ncclInternalError;
  std::thread acceptor(
      [&] { accepted = accept_until_ready(plugin, listen_comm, &pair.recv_comm, kHangBoundMs); });
  const ncclResult_t connected =
      connect_until_ready(plugin, send_dev, &handle, &pair.send_comm, kHangBoundMs);
  acceptor.join();
  REQUIRE(connected == ncclSuccess);
  REQUIRE(accepted == ncclSuccess);
  REQUIRE(plugin.close_listen(listen_comm) == ncclSuccess);
  return pair;
}

// NCCL's downgraded receive connection: three host staging buffers, then a receive of one
// slice of SIMPLE (never the whole buffer). Returns the irecv's result.
ncclResult_t receive_host_staged(PluginDriver& plugin, void* recv_comm,
                                 std::vector<std::vector<char>>& buffers,
                                 std::vector<void*>& handles, void** request) {
  buffers = {std::vector<char>(64 << 10), std::vector<char>(64 << 10),
             std::vector<char>(512 << 10)};  // LL, LL128, SIMPLE (scaled down)
  handles.assign(3, nullptr);
  for (size_t p = 0; p < buffers.size(); ++p) {
    REQUIRE(plugin.reg_mr(recv_comm, buffers[p].data(), buffers[p].size(), NCCL_PTR_HOST,
                          &handles[p]) == ncclSuccess);
  }
  void* data = buffers[2].data();
  size_t size = buffers[2].size() / 8;  // one step of NCCL_STEPS
  int tag = 0;
  return plugin.irecv(recv_comm, 1, &data, &size, &tag, &handles[2], request);
}

bool any_warn_with(const std::vector<std::string>& needles) {
  return any_line_contains(warn_lines(), needles);
}

int warns_with(const std::string& needle) {
  int count = 0;
  for (const auto& line : warn_lines()) {
    count += line.find(needle) != std::string::npos ? 1 : 0;
  }
  return count;
}

}  // namespace

TEST_CASE(
    "NCCL_ROCE_REQUIRE_GDR=1: a host-staged receive comm fails its first irecv naming GPU, "
    "NIC, distance, NCCL_NET_GDR_LEVEL and the fix",
    "[gdr_downgrade]") {
  use_test_devices({"pca", "pcb"});
  setenv("NCCL_ROCE_REQUIRE_GDR", "1", 1);
  unsetenv("NCCL_NET_GDR_LEVEL");
  make_cuda_context_current();
  PluginDriver plugin(plugin_path_from_env(), parse_api("v10"));
  REQUIRE(plugin.init() == ncclSuccess);  // vroce answers the dma-buf probe: GPUDirect offered
  Properties props;
  const int a = plugin.find_device("pca");
  const int b = plugin.find_device("pcb");
  REQUIRE(plugin.properties(b, &props) == ncclSuccess);
  REQUIRE((props.ptr_support & (NCCL_PTR_CUDA | NCCL_PTR_DMABUF)) != 0);
  const Pair pair = connect_pair(plugin, a, b);
  std::vector<std::vector<char>> buffers;
  std::vector<void*> handles;
  void* request = nullptr;
  CHECK(receive_host_staged(plugin, pair.recv_comm, buffers, handles, &request) == ncclSystemError);
  for (const auto& line : warn_lines()) {
    UNSCOPED_INFO(line);
  }
  CHECK(any_warn_with({"GPUDirect RDMA downgrade", props.name, "no PCI path",
                       "NCCL_NET_GDR_LEVEL unset", "ACS", "NCCL_NET_GDR_LEVEL=SYS",
                       "NCCL_ROCE_REQUIRE_GDR=1 makes this an error"}));
  CHECK(any_warn_with({"GPUDirect RDMA downgrade", "GPU"}));
  for (void* h : handles) {
    CHECK(plugin.dereg_mr(pair.recv_comm, h) == ncclSuccess);
  }
  CHECK(plugin.close_send(pair.send_comm) == ncclSuccess);
  CHECK(plugin.close_recv(pair.recv_comm) == ncclSuccess);
}

TEST_CASE(
    "without NCCL_ROCE_REQUIRE_GDR a host-staged receive comm WARNs once per device and "
    "runs",
    "[gdr_downgrade]") {
  use_test_devices({"pca", "pcb"});
  unsetenv("NCCL_ROCE_REQUIRE_GDR");
  setenv("NCCL_NET_GDR_LEVEL", "PXB", 1);
  make_cuda_context_current();
  PluginDriver plugin(plugin_path_from_env(), parse_api("v10"));
  REQUIRE(plugin.init() == ncclSuccess);
  const int a = plugin.find_device("pca");
  const int b = plugin.find_device("pcb");
  Properties props;
  REQUIRE(plugin.properties(b, &props) == ncclSuccess);
  for (int round = 0; round < 2; ++round) {  // two connections, one WARN
    const Pair pair = connect_pair(plugin, a, b);
    std::vector<std::vector<char>> buffers;
    std::vector<void*> handles;
    void* request = nullptr;
    REQUIRE(receive_host_staged(plugin, pair.recv_comm, buffers, handles, &request) == ncclSuccess);
    CHECK(request != nullptr);
    // The receive goes on: a matching send completes it.
    std::vector<char> source(buffers[2].size() / 8, 'x');
    void* send_handle = nullptr;
    REQUIRE(plugin.reg_mr(pair.send_comm, source.data(), source.size(), NCCL_PTR_HOST,
                          &send_handle) == ncclSuccess);
    void* send_request = nullptr;
    while (send_request == nullptr) {
      REQUIRE(plugin.isend(pair.send_comm, source.data(), source.size(), 0, send_handle,
                           &send_request) == ncclSuccess);
    }
    int send_done = 0;
    int recv_done = 0;
    while (send_done == 0 || recv_done == 0) {
      if (send_done == 0) {
        REQUIRE(plugin.test(send_request, &send_done, nullptr) == ncclSuccess);
      }
      if (recv_done == 0) {
        int size = 0;
        REQUIRE(plugin.test(request, &recv_done, &size) == ncclSuccess);
      }
    }
    CHECK(plugin.dereg_mr(pair.send_comm, send_handle) == ncclSuccess);
    for (void* h : handles) {
      CHECK(plugin.dereg_mr(pair.recv_comm, h) == ncclSuccess);
    }
    CHECK(plugin.close_send(pair.send_comm) == ncclSuccess);
    CHECK(plugin.close_recv(pair.recv_comm) == ncclSuccess);
  }
  for (const auto& line : warn_lines()) {
    UNSCOPED_INFO(line);
  }
  CHECK(warns_with("GPUDirect RDMA downgrade") == 1);
  CHECK(any_warn_with({"GPUDirect RDMA downgrade", props.name, "NCCL_NET_GDR_LEVEL PXB (5)",
                       "set NCCL_ROCE_REQUIRE_GDR=1 to make this an error"}));
}

TEST_CASE("host buffers without a CUDA context are an application's: no WARN, no error",
          "[gdr_downgrade]") {
  use_test_devices({"pca", "pcb"});
  setenv("NCCL_ROCE_REQUIRE_GDR", "1", 1);
  PluginDriver plugin(plugin_path_from_env(), parse_api("v10"));
  REQUIRE(plugin.init() == ncclSuccess);
  const Pair pair = connect_pair(plugin, plugin.find_device("pca"), plugin.find_device("pcb"));
  std::vector<std::vector<char>> buffers;
  std::vector<void*> handles;
  void* request = nullptr;
  CHECK(receive_host_staged(plugin, pair.recv_comm, buffers, handles, &request) == ncclSuccess);
  CHECK(warns_with("GPUDirect RDMA downgrade") == 0);
  for (void* h : handles) {
    CHECK(plugin.dereg_mr(pair.recv_comm, h) == ncclSuccess);
  }
  CHECK(plugin.close_send(pair.send_comm) == ncclSuccess);
  CHECK(plugin.close_recv(pair.recv_comm) == ncclSuccess);
}
