// GPUDirect over vroce on a machine with a CUDA GPU (exit 77 = skipped when there is none):
// the registration probe answers "no context" until the thread has one and "accepted" once it
// does, detect_gdr then offers NCCL_PTR_CUDA, the MR cache registers device memory through the
// VerbsRegistrar, and an RDMA WRITE from host memory on one vroce device lands in that GPU
// buffer on the other, checked by copying it back. A standalone program (not Catch) so ctest
// can report the skip (SKIP_RETURN_CODE 77).
#include <arpa/inet.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "core/device/device_discovery.h"
#include "core/memory/gdr_probe.h"
#include "core/memory/mr_cache.h"
#include "core/memory/verbs_registrar.h"
#include "hang_bound.h"
#include "nccl_net/types.h"
#include "test_addresses.h"
#include "util/config.h"
#include "verbs/completion_queue.h"
#include "verbs/memory_region.h"
#include "verbs/protection_domain.h"
#include "verbs/queue_pair.h"

using roce::test::test_address;
using roce::test::vroce_device_list;

using namespace roce;

namespace {

constexpr int kSkip = 77;
int failures = 0;

void expect(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) {
    ++failures;
  }
}

// The CUDA driver entry points this check needs, from the documented driver API.
struct Cuda {
  int (*init)(unsigned) = nullptr;
  int (*device_get_count)(int*) = nullptr;
  int (*device_get)(int*, int) = nullptr;
  int (*primary_ctx_retain)(void**, int) = nullptr;
  int (*primary_ctx_release)(int) = nullptr;
  int (*ctx_set_current)(void*) = nullptr;
  int (*mem_alloc)(unsigned long long*, size_t) = nullptr;
  int (*mem_free)(unsigned long long) = nullptr;
  int (*memcpy_dtoh)(void*, unsigned long long, size_t) = nullptr;
  int (*memset_d8)(unsigned long long, unsigned char, size_t) = nullptr;
};

template <typename Fn>
bool bind(void* handle, const char* name, Fn& slot) {
  void* symbol = dlsym(handle, name);
  std::memcpy(&slot, &symbol, sizeof(slot));
  return symbol != nullptr;
}

std::optional<std::string> env_lookup(std::string_view name, void*) {
  const char* value = std::getenv(std::string(name).c_str());
  return value != nullptr ? std::optional<std::string>(value) : std::nullopt;
}

bool wait_for(verbs::CompletionQueue& cq, ibv_wc* wc) {
  const auto deadline = std::chrono::steady_clock::now() + roce::test::kHangBound;
  while (std::chrono::steady_clock::now() < deadline) {
    const int n = cq.poll(1, wc);
    if (n < 0) {
      return false;
    }
    if (n == 1) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return false;
}

int run() {
  void* libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  Cuda cu;
  if (libcuda == nullptr || !bind(libcuda, "cuInit", cu.init) ||
      !bind(libcuda, "cuDeviceGetCount", cu.device_get_count) ||
      !bind(libcuda, "cuDeviceGet", cu.device_get) ||
      !bind(libcuda, "cuDevicePrimaryCtxRetain", cu.primary_ctx_retain) ||
      !bind(libcuda, "cuDevicePrimaryCtxRelease_v2", cu.primary_ctx_release) ||
      !bind(libcuda, "cuCtxSetCurrent", cu.ctx_set_current) ||
      !bind(libcuda, "cuMemAlloc_v2", cu.mem_alloc) ||
      !bind(libcuda, "cuMemFree_v2", cu.mem_free) ||
      !bind(libcuda, "cuMemcpyDtoH_v2", cu.memcpy_dtoh) ||
      !bind(libcuda, "cuMemsetD8_v2", cu.memset_d8)) {
    std::printf("skipped: no usable libcuda.so.1 (%s)\n", dlerror());
    return kSkip;
  }
  int count = 0;
  if (cu.init(0) != 0 || cu.device_get_count(&count) != 0 || count == 0) {
    std::printf("skipped: no CUDA device\n");
    return kSkip;
  }

  setenv("VROCE_DEVICES", vroce_device_list({"pv0", "pv1"}).c_str(), 1);
  setenv("NCCL_IBVERBS_LIB", VROCE_LIBRARY_PATH, 0);  // a copy elsewhere may be named instead
  const auto config = parse_config(&env_lookup, nullptr);
  if (!config) {
    std::printf("FAIL: configuration: %s\n", config.error().c_str());
    return 1;
  }
  const auto loaded = ibv::Library::open(config->ibverbs_lib);
  if (!loaded) {
    std::printf("FAIL: %s\n", loaded.error().c_str());
    return 1;
  }
  const std::shared_ptr<const ibv::Library>& lib = *loaded;
  const auto discovered = discover_devices(lib, DiscoveryOptions::from_config(*config));
  if (!discovered) {
    std::printf("FAIL: discovery: %s\n", discovered.error().c_str());
    return 1;
  }
  const DiscoveryResult& found = *discovered;
  if (found.devices.size() != 2) {
    std::printf("FAIL: expected 2 vroce devices, found %zu (%s)\n", found.devices.size(),
                found.skipped_summary().c_str());
    return 1;
  }
  const auto& context = found.devices[1].context;

  expect(probe_cuda_registration(context).status == CudaProbeStatus::NoContext,
         "the probe does nothing while the thread has no CUDA context");

  int device = 0;
  void* cuda_context = nullptr;
  if (cu.device_get(&device, 0) != 0 || cu.primary_ctx_retain(&cuda_context, device) != 0 ||
      cu.ctx_set_current(cuda_context) != 0) {
    std::printf("FAIL: cannot make the primary CUDA context current\n");
    return 1;
  }
  const CudaRegistrationProbe probe = probe_cuda_registration(context);
  std::printf("      probe: %s (%s)\n", cuda_probe_status_name(probe.status), probe.detail.c_str());
  expect(probe.registered(), "vroce's ibv_reg_mr accepts a cuMemAlloc buffer");
  const GdrSupport support = detect_gdr(context, config->sysfs_root, config->dmabuf_enable);
  std::printf("      gdr mode %s; %s\n", support.mode.c_str(), support.checked.c_str());
  expect((support.ptr_support() & NCCL_PTR_CUDA) != 0, "ptrSupport includes NCCL_PTR_CUDA");

  // Host memory on pv0 written into GPU memory on pv1.
  constexpr size_t kBytes = 256 * 1024;
  unsigned long long gpu = 0;
  if (cu.mem_alloc(&gpu, kBytes) != 0 || cu.memset_d8(gpu, 0, kBytes) != 0) {
    std::printf("FAIL: cuMemAlloc/cuMemsetD8 of %zu bytes\n", kBytes);
    return 1;
  }
  {
    auto pd_a = verbs::ProtectionDomain::create(found.devices[0].context);
    auto pd_b = verbs::ProtectionDomain::create(context);
    MrCache cache(std::make_unique<VerbsRegistrar>(pd_b, false), 4096);
    const CachedRegion* target = cache.acquire(gpu, kBytes, MemoryKind::Cuda);
    expect(target != nullptr && target->length >= kBytes, "the MR cache registers GPU memory");

    std::vector<uint8_t> source(kBytes);
    for (size_t i = 0; i < kBytes; ++i) {
      source[i] = static_cast<uint8_t>((i * 13) ^ (i >> 8));
    }
    auto source_mr =
        verbs::MemoryRegion::register_memory(pd_a, source.data(), kBytes, IBV_ACCESS_LOCAL_WRITE);
    auto cq_a = verbs::CompletionQueue::create(found.devices[0].context, 16);
    auto cq_b = verbs::CompletionQueue::create(context, 16);
    auto qp_a = verbs::QueuePair::create_rc(pd_a, cq_a, cq_a, {});
    auto qp_b = verbs::QueuePair::create_rc(pd_b, cq_b, cq_b, {});
    const unsigned access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    qp_a->to_init({0, 1, access});
    qp_b->to_init({0, 1, access});
    auto rtr = [&](const PluginDevice& self, const PluginDevice& peer, uint32_t peer_qpn) {
      verbs::RtrAttributes a;
      std::memcpy(a.dgid.raw, peer.gid.entry.gid.data(), 16);
      a.sgid_index = static_cast<uint8_t>(self.gid.index);
      a.traffic_class = 106;
      a.path_mtu = IBV_MTU_4096;
      a.dest_qpn = peer_qpn;
      return a;
    };
    qp_a->to_rtr(rtr(found.devices[0], found.devices[1], qp_b->qp_num()));
    qp_b->to_rtr(rtr(found.devices[1], found.devices[0], qp_a->qp_num()));
    qp_a->to_rts({});
    qp_b->to_rts({});

    ibv_sge sge{reinterpret_cast<uintptr_t>(source.data()), static_cast<uint32_t>(kBytes),
                source_mr->lkey()};
    ibv_send_wr wr{};
    wr.wr_id = 1;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = gpu;
    wr.wr.rdma.rkey = target->rkey;
    ibv_send_wr* bad = nullptr;
    ibv_wc wc{};
    const bool posted = qp_a->post_send(&wr, &bad) == 0;
    expect(posted && wait_for(*cq_a, &wc) && wc.status == IBV_WC_SUCCESS,
           "an RDMA WRITE into GPU memory completes");
    std::vector<uint8_t> back(kBytes);
    expect(cu.memcpy_dtoh(back.data(), gpu, kBytes) == 0 && back == source,
           "the GPU buffer holds exactly the bytes written");
    cache.release(target);
  }
  cu.mem_free(gpu);
  cu.ctx_set_current(nullptr);
  cu.primary_ctx_release(device);
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const std::exception& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
