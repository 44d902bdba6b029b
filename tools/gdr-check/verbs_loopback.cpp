// Queue-pair setup and the RDMA data path of gdr-check.
#include "verbs_loopback.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

namespace gdr {

void MrDeleter::operator()(ibv_mr* mr) const noexcept {
  if (mr != nullptr)
    ibv_dereg_mr(mr);
}

struct Side {
  std::string name;
  int port = 1;
  int gid_index = -1;
  ibv_gid gid{};
  ibv_port_attr port_attr{};
  ibv_context* context = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  int max_rd_atomic = 1;

  ~Side() {
    if (qp != nullptr)
      ibv_destroy_qp(qp);
    if (cq != nullptr)
      ibv_destroy_cq(cq);
    if (pd != nullptr)
      ibv_dealloc_pd(pd);
    if (context != nullptr)
      ibv_close_device(context);
  }
};

namespace {

constexpr int kWindow = 16;
constexpr auto kCompletionDeadline = std::chrono::seconds(30);

std::string errno_text(const char* call, int err) {
  return std::string(call) + ": " + std::strerror(err) + " (errno " + std::to_string(err) + ")";
}

bool is_v4_mapped(const ibv_gid& g) {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(g.raw, kPrefix, sizeof kPrefix) == 0;
}

std::string gid_text(const ibv_gid& g) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, g.raw, buf, sizeof buf);
  return buf;
}

// The first valid RoCE v2 IPv4 GID, the plugin's own automatic choice.
bool choose_gid(Side* s, std::string* error) {
  if (s->gid_index >= 0) {
    if (ibv_query_gid(s->context, static_cast<uint8_t>(s->port), s->gid_index, &s->gid) != 0) {
      *error = s->name + ": cannot read GID index " + std::to_string(s->gid_index);
      return false;
    }
    return true;
  }
  for (int i = 0; i < s->port_attr.gid_tbl_len; ++i) {
    ibv_gid_entry entry{};
    if (ibv_query_gid_ex(s->context, static_cast<uint32_t>(s->port), static_cast<uint32_t>(i),
                         &entry, 0) != 0) {
      continue;  // unused entry
    }
    ibv_gid g{};
    std::memcpy(g.raw, entry.gid.raw, sizeof g.raw);
    if (entry.gid_type == IBV_GID_TYPE_ROCE_V2 && is_v4_mapped(g)) {
      s->gid_index = i;
      s->gid = g;
      return true;
    }
  }
  *error = s->name + " port " + std::to_string(s->port) +
           ": no RoCE v2 IPv4 GID (assign an IPv4 address to its netdev, or pass --gid-index)";
  return false;
}

bool open_side(ibv_device* dev, const Options& o, Side* s, std::string* error) {
  s->name = ibv_get_device_name(dev);
  s->port = o.port;
  s->gid_index = o.gid_index;
  s->context = ibv_open_device(dev);
  if (s->context == nullptr) {
    *error = s->name + ": " + errno_text("ibv_open_device", errno);
    return false;
  }
  if (ibv_query_port(s->context, static_cast<uint8_t>(s->port), &s->port_attr) != 0) {
    *error = s->name + ": port " + std::to_string(s->port) + " does not exist";
    return false;
  }
  if (s->port_attr.state != IBV_PORT_ACTIVE) {
    *error = s->name + " port " + std::to_string(s->port) + " is " +
             ibv_port_state_str(s->port_attr.state) + ", not ACTIVE";
    return false;
  }
  if (!choose_gid(s, error))
    return false;
  ibv_device_attr attr{};
  if (ibv_query_device(s->context, &attr) == 0)
    s->max_rd_atomic = std::clamp(attr.max_qp_rd_atom, 1, 16);
  s->pd = ibv_alloc_pd(s->context);
  if (s->pd == nullptr) {
    *error = s->name + ": " + errno_text("ibv_alloc_pd", errno);
    return false;
  }
  s->cq = ibv_create_cq(s->context, 2 * kWindow, nullptr, nullptr, 0);
  if (s->cq == nullptr) {
    *error = s->name + ": " + errno_text("ibv_create_cq", errno);
    return false;
  }
  ibv_qp_init_attr init{};
  init.send_cq = s->cq;
  init.recv_cq = s->cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = 2 * kWindow;
  init.cap.max_recv_wr = 1;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  s->qp = ibv_create_qp(s->pd, &init);
  if (s->qp == nullptr) {
    *error = s->name + ": " + errno_text("ibv_create_qp", errno);
    return false;
  }
  return true;
}

bool connect(Side* s, const Side& peer, int traffic_class, std::string* error) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = static_cast<uint8_t>(s->port);
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if (int e = ibv_modify_qp(s->qp, &a,
                            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
      e != 0) {
    *error = s->name + ": " + errno_text("ibv_modify_qp to INIT", e);
    return false;
  }
  a = {};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = std::min(s->port_attr.active_mtu, peer.port_attr.active_mtu);
  a.dest_qp_num = peer.qp->qp_num;
  a.rq_psn = 0;
  a.max_dest_rd_atomic = static_cast<uint8_t>(s->max_rd_atomic);
  a.min_rnr_timer = 12;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = peer.gid;
  a.ah_attr.grh.sgid_index = static_cast<uint8_t>(s->gid_index);
  a.ah_attr.grh.hop_limit = 64;
  a.ah_attr.grh.traffic_class = static_cast<uint8_t>(traffic_class);
  a.ah_attr.port_num = static_cast<uint8_t>(s->port);
  if (int e = ibv_modify_qp(s->qp, &a,
                            IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
      e != 0) {
    *error = s->name + ": " + errno_text("ibv_modify_qp to RTR", e);
    return false;
  }
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = 0;
  a.max_rd_atomic = static_cast<uint8_t>(peer.max_rd_atomic);
  if (int e = ibv_modify_qp(s->qp, &a,
                            IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
      e != 0) {
    *error = s->name + ": " + errno_text("ibv_modify_qp to RTS", e);
    return false;
  }
  return true;
}

}  // namespace

Loopback::Loopback() = default;
Loopback::~Loopback() = default;

std::unique_ptr<Loopback> Loopback::open(const Options& o, std::string* error, Error* kind) {
  *kind = Error::NoDevice;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr || n == 0) {
    if (list != nullptr)
      ibv_free_device_list(list);
    *error = "no RDMA device: this node has no RDMA NIC or its driver is not loaded";
    return nullptr;
  }
  auto find = [&](const std::string& name) -> ibv_device* {
    if (name.empty())
      return list[0];
    for (int i = 0; i < n; ++i) {
      if (name == ibv_get_device_name(list[i]))
        return list[i];
    }
    return nullptr;
  };
  ibv_device* d1 = find(o.device);
  ibv_device* d2 = find(o.device2.empty() ? o.device : o.device2);
  std::unique_ptr<Loopback> lb(new Loopback());
  bool ok = true;
  if (d1 == nullptr || d2 == nullptr) {
    std::string names;
    for (int i = 0; i < n; ++i)
      names += std::string(names.empty() ? "" : ", ") + ibv_get_device_name(list[i]);
    *error = "no RDMA device named '" + (d1 == nullptr ? o.device : o.device2) +
             "' (present: " + names + ")";
    ok = false;
  }
  for (int i = 0; ok && i < 2; ++i) {
    lb->sides_[i] = std::make_unique<Side>();
    ok = open_side(i == 0 ? d1 : d2, o, lb->sides_[i].get(), error);
  }
  ibv_free_device_list(list);
  if (!ok)
    return nullptr;
  *kind = Error::Setup;
  if (!connect(lb->sides_[0].get(), *lb->sides_[1], o.traffic_class, error) ||
      !connect(lb->sides_[1].get(), *lb->sides_[0], o.traffic_class, error)) {
    return nullptr;
  }
  *kind = Error::None;
  return lb;
}

std::string Loopback::describe() const {
  auto one = [](const Side& s) {
    return s.name + " port " + std::to_string(s.port) + " GID " + std::to_string(s.gid_index) +
           " (" + gid_text(s.gid) + ")";
  };
  return one(*sides_[0]) + " -> " + one(*sides_[1]);
}

MrPtr Loopback::register_pointer(int side, void* addr, size_t length, std::string* error) {
  constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  ibv_mr* mr = ibv_reg_mr(sides_[side]->pd, addr, length, kAccess);
  if (mr == nullptr) {
    int e = errno;
    *error =
        errno_text("ibv_reg_mr on GPU memory", e) +
        (e == EFAULT || e == EINVAL ? ": nvidia-peermem is not loaded (modprobe nvidia_peermem)"
                                    : "");
  }
  return MrPtr(mr);
}

MrPtr Loopback::register_dmabuf(int side, int fd, uint64_t iova, size_t length,
                                std::string* error) {
  constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  ibv_mr* mr = ibv_reg_dmabuf_mr(sides_[side]->pd, 0, length, iova, fd, kAccess);
  if (mr == nullptr) {
    int e = errno;
    *error = errno_text("ibv_reg_dmabuf_mr", e) +
             (e == EOPNOTSUPP || e == EPROTONOSUPPORT
                  ? ": the NIC driver or kernel cannot import dma-bufs"
                  : "");
  }
  return MrPtr(mr);
}

bool Loopback::transfer(ibv_wr_opcode opcode, const ibv_mr& local, uint64_t local_iova,
                        const ibv_mr& remote, uint64_t remote_iova, size_t length, int count,
                        std::string* error) {
  Side& s = *sides_[0];
  int posted = 0;
  int completed = 0;
  auto deadline = std::chrono::steady_clock::now() + kCompletionDeadline;
  std::vector<ibv_wc> wcs(kWindow);
  while (completed < count) {
    while (posted < count && posted - completed < kWindow) {
      ibv_sge sge{};
      sge.addr = local_iova;
      sge.length = static_cast<uint32_t>(length);
      sge.lkey = local.lkey;
      ibv_send_wr wr{};
      wr.wr_id = static_cast<uint64_t>(posted);
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.opcode = opcode;
      wr.send_flags = IBV_SEND_SIGNALED;
      wr.wr.rdma.remote_addr = remote_iova;
      wr.wr.rdma.rkey = remote.rkey;
      ibv_send_wr* bad = nullptr;
      if (int e = ibv_post_send(s.qp, &wr, &bad); e != 0) {
        *error = errno_text("ibv_post_send", e);
        return false;
      }
      ++posted;
    }
    int got = ibv_poll_cq(s.cq, kWindow, wcs.data());
    if (got < 0) {
      *error = "ibv_poll_cq failed";
      return false;
    }
    for (int i = 0; i < got; ++i) {
      const ibv_wc& wc = wcs[static_cast<size_t>(i)];
      if (wc.status != IBV_WC_SUCCESS) {
        *error = std::string(opcode == IBV_WR_RDMA_READ ? "RDMA READ" : "RDMA WRITE") +
                 " completed with " + ibv_wc_status_str(wc.status) + " (wc status " +
                 std::to_string(wc.status) + ", vendor error " + std::to_string(wc.vendor_err) +
                 ")";
        return false;
      }
    }
    completed += got;
    if (got == 0 && std::chrono::steady_clock::now() > deadline) {
      *error = "no completion within 30 s (" + std::to_string(completed) + " of " +
               std::to_string(count) + ")";
      return false;
    }
  }
  return true;
}

}  // namespace gdr
