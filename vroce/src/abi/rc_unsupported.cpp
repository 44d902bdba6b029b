// Entry points of object families vroce does not implement: shared receive queues, address
// handles and multicast (UD features), imported PDs and MRs (a kernel context shared between
// processes). Each fails as rdma-core does for a provider without them, with EOPNOTSUPP, and
// logs why once. Debian's ibv_srq_pingpong, ibv_ud_pingpong and ibv_xsrq_pingpong import some of
// them, so they must exist for those programs to load at all.
#include <infiniband/verbs.h>

#include <atomic>
#include <cerrno>

#include "abi/export.h"
#include "util/log.h"

namespace {

void explain(std::atomic<bool>& once, const char* what) {
  if (!once.exchange(true, std::memory_order_relaxed)) {
    VROCE_LOG(Warn, "%s", what);
  }
}

std::atomic<bool> g_srq{false};
std::atomic<bool> g_ah{false};
std::atomic<bool> g_mcast{false};
std::atomic<bool> g_import{false};

constexpr const char* kSrq =
    "shared receive queues are not supported by vroce (RC QPs with their own receive queues are)";
constexpr const char* kAh =
    "address handles are for UD QPs, which vroce does not implement (RC only)";
constexpr const char* kMcast = "multicast needs UD QPs, which vroce does not implement (RC only)";
constexpr const char* kImport =
    "importing PDs/MRs shares a kernel context between processes; vroce has none";

}  // namespace

VROCE_EXPORT ibv_srq* ibv_create_srq(ibv_pd* /*pd*/, ibv_srq_init_attr* /*attr*/) {
  explain(g_srq, kSrq);
  errno = EOPNOTSUPP;
  return nullptr;
}

VROCE_EXPORT int ibv_modify_srq(ibv_srq* /*srq*/, ibv_srq_attr* /*attr*/, int /*mask*/) {
  explain(g_srq, kSrq);
  return EOPNOTSUPP;
}

VROCE_EXPORT int ibv_query_srq(ibv_srq* /*srq*/, ibv_srq_attr* /*attr*/) {
  explain(g_srq, kSrq);
  return EOPNOTSUPP;
}

VROCE_EXPORT int ibv_destroy_srq(ibv_srq* /*srq*/) {
  explain(g_srq, kSrq);
  return EOPNOTSUPP;
}

VROCE_EXPORT ibv_ah* ibv_create_ah(ibv_pd* /*pd*/, ibv_ah_attr* /*attr*/) {
  explain(g_ah, kAh);
  errno = EOPNOTSUPP;
  return nullptr;
}

VROCE_EXPORT int ibv_destroy_ah(ibv_ah* /*ah*/) {
  explain(g_ah, kAh);
  return EOPNOTSUPP;
}

VROCE_EXPORT int ibv_init_ah_from_wc(ibv_context* /*context*/, uint8_t /*port_num*/, ibv_wc* /*wc*/,
                                     ibv_grh* /*grh*/, ibv_ah_attr* /*ah_attr*/) {
  explain(g_ah, kAh);
  errno = EOPNOTSUPP;
  return -1;
}

VROCE_EXPORT ibv_ah* ibv_create_ah_from_wc(ibv_pd* /*pd*/, ibv_wc* /*wc*/, ibv_grh* /*grh*/,
                                           uint8_t /*port_num*/) {
  explain(g_ah, kAh);
  errno = EOPNOTSUPP;
  return nullptr;
}

VROCE_EXPORT int ibv_attach_mcast(ibv_qp* /*qp*/, const ibv_gid* /*gid*/, uint16_t /*lid*/) {
  explain(g_mcast, kMcast);
  return EOPNOTSUPP;
}

VROCE_EXPORT int ibv_detach_mcast(ibv_qp* /*qp*/, const ibv_gid* /*gid*/, uint16_t /*lid*/) {
  explain(g_mcast, kMcast);
  return EOPNOTSUPP;
}

VROCE_EXPORT ibv_pd* ibv_import_pd(ibv_context* /*context*/, uint32_t /*pd_handle*/) {
  explain(g_import, kImport);
  errno = EOPNOTSUPP;
  return nullptr;
}

// Nothing can have been imported, so there is nothing to release.
VROCE_EXPORT void ibv_unimport_pd(ibv_pd* /*pd*/) {
  errno = EOPNOTSUPP;
}

VROCE_EXPORT ibv_mr* ibv_import_mr(ibv_pd* /*pd*/, uint32_t /*mr_handle*/) {
  explain(g_import, kImport);
  errno = EOPNOTSUPP;
  return nullptr;
}

VROCE_EXPORT void ibv_unimport_mr(ibv_mr* /*mr*/) {
  errno = EOPNOTSUPP;
}
