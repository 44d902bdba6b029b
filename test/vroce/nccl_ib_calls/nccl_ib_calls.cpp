// nccl_ib_calls: NCCL 2.28.9's built-in IB transport (src/transport/net_ib.cc with
// src/misc/ibvwrap.cc, ibvsymbols.cc, mlx5dvsymbols.cc) reduced to its verbs calls, made in
// NCCL's order and the way NCCL makes them, against vroce. NCCL is not linked or needed.
//
// Usage: nccl_ib_calls DEVICE_A DEVICE_B   (two vroce devices of VROCE_DEVICES; vroce's
// libibverbs.so and libibverbs.so.1 first on LD_LIBRARY_PATH). Exit 0 when every call did what
// it does on rdma-core, 1 with a FAIL line per difference.
//
// How NCCL makes the calls, and so how this program does:
//  - dlopen("libibverbs.so"), then "libibverbs.so.1"; dlvsym of every entry point at
//    IBVERBS_1.1, the optional ones at 1.8 (ibv_reg_mr_iova2), 1.10 (ECE), 1.12 (dma-buf).
//  - dlopen("libmlx5.so"), then "libmlx5.so.1"; dlvsym mlx5dv_is_supported at MLX5_1.8 and call
//    it on every device (it must say "not mlx5" for a vroce device, reading only what rdma-core
//    puts behind an ibv_device). Skipped, saying so, where libmlx5 is not installed.
//  - the extended query_port through verbs_get_ctx_op with NCCL's own 56-byte ibv_port_attr
//    (rdma-core 44's 52 bytes and active_speed_ex), and the compat entry point as fallback.
//  - NCCL's RoCE GID auto-selection: ibv_query_gid over the table and gid_attrs/types from sysfs
//    (vroce's fake tree, VROCE_SYSFS_ROOT); it must pick the IPv4-mapped RoCE v2 entry, index 3,
//    and GID 0 must be the link-local RoCE v1 entry a ConnectX has there.
//  - the async event thread (ibv_get_async_event, ibv_event_type_str, ibv_ack_async_event), one
//    per device, detached and never stopped, as NCCL's.
//  - the DMA-BUF probe (ibv_reg_dmabuf_mr with fd -1 must fail cleanly), a CQ of 512 entries,
//    RC QPs with NCCL's caps, INIT/RTR/RTS with NCCL's attributes, ECE query/set, ibv_query_qp,
//    MRs through ibv_reg_mr_iova2 with relaxed ordering, an RDMA WRITE and an RDMA WRITE WITH
//    IMM posted as one chain through qp->context->ops.post_send, the receive through
//    ops.post_recv, completions through cq->context->ops.poll_cq (4 at a time); the data must
//    arrive. Then the GPU flush: a QP connected to itself doing a 1-byte RDMA READ.
//
// What NCCL itself does beyond these calls (its GIN plugin selection, topology, proxy threads)
// is not reproduced; see docs/vroce.md, "NCCL's built-in IB transport".
#include <arpa/inet.h>
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "hang_bound.h"

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
    ++failures;
  }
}

[[noreturn]] void fatal(const std::string& what) {
  std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  std::exit(1);
}

// NCCL's ibv_port_attr (src/include/ibvcore.h): rdma-core 44's and active_speed_ex.
struct NcclPortAttr {
  ibv_port_attr attr;
  uint32_t active_speed_ex;
};
static_assert(sizeof(NcclPortAttr) == 56);

struct Verbs {
  ibv_device** (*get_device_list)(int*);
  void (*free_device_list)(ibv_device**);
  const char* (*get_device_name)(ibv_device*);
  ibv_context* (*open_device)(ibv_device*);
  int (*close_device)(ibv_context*);
  int (*get_async_event)(ibv_context*, ibv_async_event*);
  void (*ack_async_event)(ibv_async_event*);
  int (*query_device)(ibv_context*, ibv_device_attr*);
  int (*query_port)(ibv_context*, uint8_t, ibv_port_attr*);
  int (*query_gid)(ibv_context*, uint8_t, int, ibv_gid*);
  int (*query_qp)(ibv_qp*, ibv_qp_attr*, int, ibv_qp_init_attr*);
  ibv_pd* (*alloc_pd)(ibv_context*);
  int (*dealloc_pd)(ibv_pd*);
  ibv_mr* (*reg_mr)(ibv_pd*, void*, size_t, int);
  ibv_mr* (*reg_mr_iova2)(ibv_pd*, void*, size_t, uint64_t, unsigned int);
  ibv_mr* (*reg_dmabuf_mr)(ibv_pd*, uint64_t, size_t, uint64_t, int, int);
  int (*dereg_mr)(ibv_mr*);
  ibv_cq* (*create_cq)(ibv_context*, int, void*, ibv_comp_channel*, int);
  int (*destroy_cq)(ibv_cq*);
  ibv_qp* (*create_qp)(ibv_pd*, ibv_qp_init_attr*);
  int (*modify_qp)(ibv_qp*, ibv_qp_attr*, int);
  int (*destroy_qp)(ibv_qp*);
  int (*fork_init)();
  const char* (*event_type_str)(ibv_event_type);
  int (*query_ece)(ibv_qp*, ibv_ece*);
  int (*set_ece)(ibv_qp*, ibv_ece*);
};

template <typename F>
void required(void* handle, const char* name, F* target) {
  void* symbol = dlvsym(handle, name, "IBVERBS_1.1");
  if (symbol == nullptr) {
    fatal(std::string("dlvsym ") + name + "@IBVERBS_1.1: " + dlerror());
  }
  *target = reinterpret_cast<F>(symbol);
}

template <typename F>
void optional(void* handle, const char* name, const char* version, F* target) {
  *target = reinterpret_cast<F>(dlvsym(handle, name, version));
  check(*target != nullptr, std::string("vroce exports ") + name + "@" + version);
}

Verbs load_verbs() {
  void* handle = dlopen("libibverbs.so", RTLD_NOW);
  if (handle == nullptr) {
    handle = dlopen("libibverbs.so.1", RTLD_NOW);
  }
  if (handle == nullptr) {
    fatal(std::string("dlopen libibverbs.so[.1]: ") + dlerror());
  }
  if (dlvsym(handle, "vroce_inject_port_event", "VROCE_PRIVATE_1.0") == nullptr) {
    fatal("the libibverbs loaded is not vroce's: put build/ci/vroce/lib first on LD_LIBRARY_PATH");
  }
  Verbs v{};
  required(handle, "ibv_get_device_list", &v.get_device_list);
  required(handle, "ibv_free_device_list", &v.free_device_list);
  required(handle, "ibv_get_device_name", &v.get_device_name);
  required(handle, "ibv_open_device", &v.open_device);
  required(handle, "ibv_close_device", &v.close_device);
  required(handle, "ibv_get_async_event", &v.get_async_event);
  required(handle, "ibv_ack_async_event", &v.ack_async_event);
  required(handle, "ibv_query_device", &v.query_device);
  required(handle, "ibv_query_port", &v.query_port);
  required(handle, "ibv_query_gid", &v.query_gid);
  required(handle, "ibv_query_qp", &v.query_qp);
  required(handle, "ibv_alloc_pd", &v.alloc_pd);
  required(handle, "ibv_dealloc_pd", &v.dealloc_pd);
  required(handle, "ibv_reg_mr", &v.reg_mr);
  optional(handle, "ibv_reg_mr_iova2", "IBVERBS_1.8", &v.reg_mr_iova2);
  optional(handle, "ibv_reg_dmabuf_mr", "IBVERBS_1.12", &v.reg_dmabuf_mr);
  required(handle, "ibv_dereg_mr", &v.dereg_mr);
  required(handle, "ibv_create_cq", &v.create_cq);
  required(handle, "ibv_destroy_cq", &v.destroy_cq);
  required(handle, "ibv_create_qp", &v.create_qp);
  required(handle, "ibv_modify_qp", &v.modify_qp);
  required(handle, "ibv_destroy_qp", &v.destroy_qp);
  required(handle, "ibv_fork_init", &v.fork_init);
  required(handle, "ibv_event_type_str", &v.event_type_str);
  optional(handle, "ibv_query_ece", "IBVERBS_1.10", &v.query_ece);
  optional(handle, "ibv_set_ece", "IBVERBS_1.10", &v.set_ece);
  return v;
}

// libmlx5's mlx5dv_is_supported, or nullptr (and a note) where libmlx5 is not installed.
using IsSupported = bool (*)(ibv_device*);
IsSupported load_mlx5dv() {
  void* handle = dlopen("libmlx5.so", RTLD_NOW);
  if (handle == nullptr) {
    handle = dlopen("libmlx5.so.1", RTLD_NOW);
  }
  if (handle == nullptr) {
    std::printf("note: no libmlx5.so[.1] (%s): mlx5dv_is_supported not called\n", dlerror());
    return nullptr;
  }
  void* symbol = dlvsym(handle, "mlx5dv_is_supported", "MLX5_1.8");
  check(symbol != nullptr, "libmlx5 has mlx5dv_is_supported@MLX5_1.8");
  return reinterpret_cast<IsSupported>(symbol);
}

Verbs verbs;

// NCCL's ncclIbAsyncThreadMain: blocks in ibv_get_async_event for the life of the process.
void* async_thread(void* arg) {
  auto* context = static_cast<ibv_context*>(arg);
  for (;;) {
    ibv_async_event event{};
    if (verbs.get_async_event(context, &event) != 0) {
      break;
    }
    const char* text = verbs.event_type_str(event.event_type);
    std::printf("async event on %s: %s\n", verbs.get_device_name(context->device), text);
    verbs.ack_async_event(&event);
  }
  return nullptr;
}

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

bool ipv4_mapped(const ibv_gid& gid) {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(gid.raw, kPrefix, sizeof(kPrefix)) == 0;
}
bool link_local(const ibv_gid& gid) {
  static constexpr uint8_t kPrefix[8] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0};
  return std::memcmp(gid.raw, kPrefix, sizeof(kPrefix)) == 0;
}

// NCCL's ncclIbGetGidIndex for RoCE with its defaults (AF_INET, any range, RoCE v2): walk the
// table from index 1, moving to a candidate of the wanted family that is configured, not
// link-local and of the wanted version where the current pick is not.
int nccl_gid_index(ibv_context* ctx, const std::string& port_dir, int table_length) {
  auto version = [&](int index) {
    std::string type = read_line(port_dir + "/gid_attrs/types/" + std::to_string(index));
    if (type.rfind("IB/RoCE v1", 0) == 0 || type.rfind("RoCE v1", 0) == 0) {
      return 1;
    }
    return type.rfind("RoCE v2", 0) == 0 ? 2 : -1;
  };
  auto valid = [](const ibv_gid& gid) {
    static constexpr uint8_t kZero[16] = {};
    return std::memcmp(gid.raw, kZero, 16) != 0 && !link_local(gid);
  };
  int index = 0;
  for (int candidate = 1; candidate < table_length; ++candidate) {
    ibv_gid gid{};
    ibv_gid next{};
    check(verbs.query_gid(ctx, 1, index, &gid) == 0, "ibv_query_gid");
    check(verbs.query_gid(ctx, 1, candidate, &next) == 0, "ibv_query_gid");
    if (ipv4_mapped(next) != ipv4_mapped(gid) && ipv4_mapped(next)) {
      index = candidate;
      continue;
    }
    if (!ipv4_mapped(next) || !valid(next)) {
      continue;
    }
    if ((version(index) != version(candidate) || !valid(gid)) && version(candidate) == 2) {
      index = candidate;
    }
  }
  return index;
}

struct Side {
  const char* name = nullptr;
  ibv_context* ctx = nullptr;
  NcclPortAttr port{};
  int gid_index = -1;
  ibv_gid gid{};
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  std::vector<char> buffer = std::vector<char>(1 << 20);
  ibv_mr* mr = nullptr;
};

constexpr int kMaxRequests = 256;  // NCCL_NET_MAX_REQUESTS * NCCL_NET_IB_MAX_RECVS
constexpr uint32_t kImm = 0x4e43434cU;

void open_side(Side& side, ibv_device* device, IsSupported is_mlx5, const std::string& sysfs) {
  side.ctx = verbs.open_device(device);
  if (side.ctx == nullptr) {
    fatal(std::string("ibv_open_device ") + side.name);
  }
  if (is_mlx5 != nullptr) {
    check(!is_mlx5(device), std::string("mlx5dv_is_supported(") + side.name + ") is false");
  }
  ibv_device_attr device_attr{};
  check(verbs.query_device(side.ctx, &device_attr) == 0, "ibv_query_device");
  check(device_attr.phys_port_cnt == 1, "one port");
  // ibv_query_port_ex of NCCL's ibvcore.h, then the compat call with a zeroed struct.
  std::memset(&side.port, 0xee, sizeof(side.port));
  verbs_context* vctx = verbs_get_ctx_op(side.ctx, query_port);
  check(vctx != nullptr, "verbs_get_ctx_op(ctx, query_port): the context is extended");
  if (vctx != nullptr) {
    check(vctx->query_port(side.ctx, 1, &side.port.attr, sizeof(side.port)) == 0,
          "extended query_port with NCCL's 56-byte struct");
    check(side.port.active_speed_ex == 0, "the tail vroce does not know is zeroed");
  }
  NcclPortAttr compat{};
  check(verbs.query_port(side.ctx, 1, &compat.attr) == 0, "ibv_query_port@IBVERBS_1.1");
  check(compat.attr.state == IBV_PORT_ACTIVE && side.port.attr.state == IBV_PORT_ACTIVE,
        "port active");
  check(side.port.attr.link_layer == IBV_LINK_LAYER_ETHERNET, "RoCE port");
  pthread_t thread{};
  check(pthread_create(&thread, nullptr, async_thread, side.ctx) == 0, "async thread");
  pthread_detach(thread);

  std::string port_dir = sysfs + "/class/infiniband/" + side.name + "/ports/1";
  side.gid_index = nccl_gid_index(side.ctx, port_dir, side.port.attr.gid_tbl_len);
  check(side.gid_index == 3, std::string("NCCL's GID selection picks index 3 on ") + side.name +
                                 ", not " + std::to_string(side.gid_index));
  check(verbs.query_gid(side.ctx, 1, side.gid_index, &side.gid) == 0 && ipv4_mapped(side.gid),
        "the picked GID is IPv4-mapped");
  ibv_gid gid0{};
  check(verbs.query_gid(side.ctx, 1, 0, &gid0) == 0 && link_local(gid0), "GID 0 is fe80::<EUI-64>");
  check(read_line(port_dir + "/gid_attrs/types/0") == "IB/RoCE v1", "GID 0 is RoCE v1");
}

void create_qp(Side& side, ibv_qp** qp, int access) {
  ibv_qp_init_attr init{};
  init.send_cq = side.cq;
  init.recv_cq = side.cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = 2 * kMaxRequests;
  init.cap.max_recv_wr = kMaxRequests;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.cap.max_inline_data = 0;
  *qp = verbs.create_qp(side.pd, &init);
  if (*qp == nullptr) {
    fatal(std::string("ibv_create_qp: ") + std::strerror(errno));
  }
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = 1;
  attr.qp_access_flags = static_cast<unsigned int>(access);
  check(verbs.modify_qp(*qp, &attr,
                        IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0,
        "INIT");
}

// ncclIbRtrQp and ncclIbRtsQp with NCCL's defaults (IB_TIMEOUT 20, IB_RETRY_CNT 7, TC 0, SL 0).
void connect_qp(ibv_qp* qp, const Side& local, uint32_t remote_qpn, const ibv_gid& remote_gid,
                ibv_mtu mtu) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = mtu;
  attr.dest_qp_num = remote_qpn;
  attr.rq_psn = 0;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;
  attr.ah_attr.is_global = 1;
  attr.ah_attr.grh.dgid = remote_gid;
  attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(local.gid_index);
  attr.ah_attr.grh.hop_limit = 255;
  attr.ah_attr.port_num = 1;
  int rc = verbs.modify_qp(qp, &attr,
                           IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                               IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  check(rc == 0, std::string("RTR: ") + std::strerror(rc));
  ibv_qp_attr queried{};
  ibv_qp_init_attr init{};
  check(verbs.query_qp(qp, &queried, IBV_QP_PORT | IBV_QP_AV, &init) == 0, "ibv_query_qp");
  check(queried.ah_attr.grh.sgid_index == local.gid_index, "ibv_query_qp gives the sgid index");
  attr = ibv_qp_attr{};
  attr.qp_state = IBV_QPS_RTS;
  attr.timeout = 20;
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.sq_psn = 0;
  attr.max_rd_atomic = 1;
  rc = verbs.modify_qp(qp, &attr,
                       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                           IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
  check(rc == 0, std::string("RTS: ") + std::strerror(rc));
}

// Polls cq through its ops table, 4 at a time as NCCL does, until one completion arrives.
ibv_wc poll_one(ibv_cq* cq, const char* what) {
  auto deadline = std::chrono::steady_clock::now() + roce::test::kHangBound;
  ibv_wc wcs[4]{};
  for (;;) {
    int done = cq->context->ops.poll_cq(cq, 4, wcs);
    if (done < 0) {
      fatal(std::string("poll_cq for ") + what + " returned " + std::to_string(done));
    }
    if (done > 0) {
      check(done == 1, std::string("one completion for ") + what);
      return wcs[0];
    }
    if (std::chrono::steady_clock::now() > deadline) {
      fatal(std::string("no completion for ") + what + " (hang bound)");
    }
    std::this_thread::yield();
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: nccl_ib_calls DEVICE_A DEVICE_B\n");
    return 2;
  }
  // vroce writes its fake sysfs tree here at the first enumeration; NCCL reads the same files
  // under /sys/class (an overlay mount, docs/vroce.md), this program under the root itself.
  char root_template[] = "/tmp/vroce-nccl-ib-XXXXXX";
  const char* root = mkdtemp(root_template);
  if (root == nullptr) {
    fatal("mkdtemp");
  }
  setenv("VROCE_SYSFS_ROOT", root, 1);

  verbs = load_verbs();
  IsSupported is_mlx5 = load_mlx5dv();
  check(verbs.fork_init() == 0, "ibv_fork_init");
  int count = 0;
  ibv_device** list = verbs.get_device_list(&count);
  if (list == nullptr) {
    fatal("ibv_get_device_list");
  }
  Side sides[2];
  sides[0].name = argv[1];
  sides[1].name = argv[2];
  for (Side& side : sides) {
    ibv_device* device = nullptr;
    for (int i = 0; i < count; ++i) {
      if (std::strcmp(verbs.get_device_name(list[i]), side.name) == 0) {
        device = list[i];
      }
    }
    if (device == nullptr) {
      fatal(std::string("no device ") + side.name + " (VROCE_DEVICES)");
    }
    open_side(side, device, is_mlx5, root);
  }
  verbs.free_device_list(list);

  // ncclIbDmaBufSupport: a dummy registration with fd -1 must fail, not crash.
  ibv_pd* probe = verbs.alloc_pd(sides[0].ctx);
  check(probe != nullptr, "ibv_alloc_pd");
  if (verbs.reg_dmabuf_mr != nullptr && probe != nullptr) {
    errno = 0;
    check(verbs.reg_dmabuf_mr(probe, 0, 0, 0, -1, 0) == nullptr && errno != 0,
          "ibv_reg_dmabuf_mr(fd -1) fails with errno set");
  }
  check(probe == nullptr || verbs.dealloc_pd(probe) == 0, "ibv_dealloc_pd");

  constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  for (Side& side : sides) {
    side.pd = verbs.alloc_pd(side.ctx);
    side.cq = verbs.create_cq(side.ctx, 2 * kMaxRequests, nullptr, nullptr, 0);
    if (side.pd == nullptr || side.cq == nullptr) {
      fatal("ibv_alloc_pd / ibv_create_cq");
    }
    create_qp(side, &side.qp, IBV_ACCESS_REMOTE_WRITE);
    auto addr = reinterpret_cast<uintptr_t>(side.buffer.data());
    side.mr = verbs.reg_mr_iova2 != nullptr
                  ? verbs.reg_mr_iova2(side.pd, side.buffer.data(), side.buffer.size(), addr,
                                       kAccess | IBV_ACCESS_RELAXED_ORDERING)
                  : verbs.reg_mr(side.pd, side.buffer.data(), side.buffer.size(), kAccess);
    if (side.mr == nullptr) {
      fatal(std::string("memory registration: ") + std::strerror(errno));
    }
  }
  Side& sender = sides[0];
  Side& receiver = sides[1];
  if (verbs.query_ece != nullptr && verbs.set_ece != nullptr) {
    ibv_ece ece{};
    int rc = verbs.query_ece(sender.qp, &ece);
    check(rc == 0 || rc == EOPNOTSUPP, "ibv_query_ece");
    if (rc == 0) {
      rc = verbs.set_ece(receiver.qp, &ece);
      check(rc == 0 || rc == EOPNOTSUPP, "ibv_set_ece");
    }
  }
  auto mtu = static_cast<ibv_mtu>(sender.port.attr.active_mtu);
  connect_qp(receiver.qp, receiver, sender.qp->qp_num, sender.gid, mtu);
  connect_qp(sender.qp, sender, receiver.qp->qp_num, receiver.gid, mtu);

  // The receive for the WRITE WITH IMM: no scatter list, as NCCL posts it.
  ibv_recv_wr recv{};
  recv.wr_id = 7;
  ibv_recv_wr* bad_recv = nullptr;
  check(receiver.qp->context->ops.post_recv(receiver.qp, &recv, &bad_recv) == 0, "ops.post_recv");

  for (size_t i = 0; i < sender.buffer.size(); ++i) {
    sender.buffer[i] = static_cast<char>(i * 7 + 3);
  }
  size_t half = sender.buffer.size() / 2;
  ibv_sge sge[2]{};
  ibv_send_wr wr[2]{};
  for (size_t i = 0; i < 2; ++i) {
    sge[i].addr = reinterpret_cast<uintptr_t>(sender.buffer.data()) + i * half;
    sge[i].length = static_cast<uint32_t>(half);
    sge[i].lkey = sender.mr->lkey;
    wr[i].wr_id = 100 + i;
    wr[i].sg_list = &sge[i];
    wr[i].num_sge = 1;
    wr[i].wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(receiver.buffer.data()) + i * half;
    wr[i].wr.rdma.rkey = receiver.mr->rkey;
  }
  wr[0].opcode = IBV_WR_RDMA_WRITE;
  wr[0].next = &wr[1];
  wr[1].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr[1].imm_data = htonl(kImm);
  wr[1].send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad_send = nullptr;
  check(sender.qp->context->ops.post_send(sender.qp, wr, &bad_send) == 0, "ops.post_send");

  ibv_wc sent = poll_one(sender.cq, "the WRITE WITH IMM");
  check(sent.status == IBV_WC_SUCCESS && sent.wr_id == 101 && sent.opcode == IBV_WC_RDMA_WRITE,
        std::string("send completion: ") + std::to_string(sent.status));
  ibv_wc got = poll_one(receiver.cq, "the receive");
  check(got.status == IBV_WC_SUCCESS && got.wr_id == 7 && got.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
            (got.wc_flags & IBV_WC_WITH_IMM) != 0 && ntohl(got.imm_data) == kImm &&
            got.byte_len == half,
        "receive completion: RECV_RDMA_WITH_IMM with the immediate and the second half's length");
  check(std::memcmp(sender.buffer.data(), receiver.buffer.data(), sender.buffer.size()) == 0,
        "the data arrived");

  // The GPU flush of ncclIbIflush: a QP of the receiver connected to itself reads 1 byte.
  ibv_qp* flush = nullptr;
  create_qp(receiver, &flush, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
  connect_qp(flush, receiver, flush->qp_num, receiver.gid, mtu);
  int flush_host = 0;
  ibv_mr* flush_mr =
      verbs.reg_mr(receiver.pd, &flush_host, sizeof(flush_host), IBV_ACCESS_LOCAL_WRITE);
  check(flush_mr != nullptr, "flush MR");
  if (flush_mr != nullptr) {
    ibv_sge flush_sge{reinterpret_cast<uintptr_t>(&flush_host), 1, flush_mr->lkey};
    ibv_send_wr read{};
    read.wr_id = 9;
    read.sg_list = &flush_sge;
    read.num_sge = 1;
    read.opcode = IBV_WR_RDMA_READ;
    read.send_flags = IBV_SEND_SIGNALED;
    read.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(receiver.buffer.data());
    read.wr.rdma.rkey = receiver.mr->rkey;
    check(flush->context->ops.post_send(flush, &read, &bad_send) == 0, "flush post_send");
    ibv_wc flushed = poll_one(receiver.cq, "the flush READ");
    check(flushed.status == IBV_WC_SUCCESS && flushed.opcode == IBV_WC_RDMA_READ,
          "flush completion");
    check(verbs.destroy_qp(flush) == 0 && verbs.dereg_mr(flush_mr) == 0, "flush teardown");
  }

  for (Side& side : sides) {
    check(verbs.destroy_qp(side.qp) == 0, "ibv_destroy_qp");
    check(verbs.dereg_mr(side.mr) == 0, "ibv_dereg_mr");
    check(verbs.destroy_cq(side.cq) == 0, "ibv_destroy_cq");
    check(verbs.dealloc_pd(side.pd) == 0, "ibv_dealloc_pd");
  }
  // NCCL never closes its contexts (the async threads block in them until exit); neither does
  // this program.
  std::error_code error;
  std::filesystem::remove_all(root, error);
  if (failures != 0) {
    std::fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  std::printf("PASS: NCCL 2.28.9 net_ib's verbs calls over %s and %s\n", argv[1], argv[2]);
  return 0;
}
