#include "harness.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <thread>

#include "abi/stats_export.h"

namespace vroce_test {

void require(bool ok, const std::string& what) {
  if (!ok) {
    int err = errno;
    throw Failure(what + " (errno " + std::to_string(err) + ": " + std::strerror(err) + ")");
  }
}

namespace {

// The RoCEv2 GID of the device's bound address: its first IPv4-mapped RoCEv2 GID (mlx5 layout:
// index 3), or, for a device bound to an IPv6 address, its first global IPv6 RoCEv2 GID.
int find_v2_gid(ibv_context* ctx, const ibv_port_attr& port, ibv_gid* gid) {
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  int ipv6 = -1;
  for (int i = 0; i < port.gid_tbl_len; ++i) {
    ibv_gid_entry entry{};
    if (ibv_query_gid_ex(ctx, 1, static_cast<uint32_t>(i), &entry, 0) != 0 ||
        entry.gid_type != IBV_GID_TYPE_ROCE_V2) {
      continue;
    }
    if (std::memcmp(entry.gid.raw, kMapped, sizeof(kMapped)) == 0) {
      *gid = entry.gid;
      return i;
    }
    bool link_local = entry.gid.raw[0] == 0xfe && (entry.gid.raw[1] & 0xc0) == 0x80;
    if (ipv6 < 0 && !link_local) {
      ipv6 = i;
      *gid = entry.gid;
    }
  }
  return ipv6;
}

}  // namespace

Device::Device(const std::string& device_name) : name(device_name) {
  int num = 0;
  ibv_device** list = ibv_get_device_list(&num);
  require(list != nullptr, "ibv_get_device_list");
  for (int i = 0; i < num; ++i) {
    if (device_name == ibv_get_device_name(list[i])) {
      ctx = ibv_open_device(list[i]);
      break;
    }
  }
  ibv_free_device_list(list);
  require(ctx != nullptr, "ibv_open_device(" + device_name + ")");
  require(ibv_query_port(ctx, 1, &port) == 0, "ibv_query_port");
  gid_index = find_v2_gid(ctx, port, &gid);
  require(gid_index >= 0, "no RoCEv2 IPv4 GID on " + device_name);
  pd = ibv_alloc_pd(ctx);
  require(pd != nullptr, "ibv_alloc_pd");
}

Device::~Device() {
  if (pd != nullptr) {
    ibv_dealloc_pd(pd);
  }
  if (ctx != nullptr) {
    ibv_close_device(ctx);
  }
}

Endpoint::Endpoint(Device& dev, const QpOptions& opts) : device(&dev), options(opts) {
  if (opts.with_channel) {
    channel = ibv_create_comp_channel(dev.ctx);
    require(channel != nullptr, "ibv_create_comp_channel");
  }
  send_cq = ibv_create_cq(dev.ctx, opts.cqe, this, channel, 0);
  require(send_cq != nullptr, "ibv_create_cq(send)");
  recv_cq = ibv_create_cq(dev.ctx, opts.cqe, this, channel, 0);
  require(recv_cq != nullptr, "ibv_create_cq(recv)");
  ibv_qp_init_attr init{};
  init.send_cq = send_cq;
  init.recv_cq = recv_cq;
  init.cap.max_send_wr = opts.max_send_wr;
  init.cap.max_recv_wr = opts.max_recv_wr;
  init.cap.max_send_sge = opts.max_sge;
  init.cap.max_recv_sge = opts.max_sge;
  init.cap.max_inline_data = opts.max_inline;
  init.qp_type = IBV_QPT_RC;
  init.sq_sig_all = opts.sq_sig_all ? 1 : 0;
  qp = ibv_create_qp(dev.pd, &init);
  require(qp != nullptr, "ibv_create_qp");
  std::random_device random;
  psn = random() & 0xFFFFFF;
}

Endpoint::~Endpoint() {
  if (qp != nullptr) {
    ibv_destroy_qp(qp);
  }
  if (send_cq != nullptr) {
    ibv_destroy_cq(send_cq);
  }
  if (recv_cq != nullptr) {
    ibv_destroy_cq(recv_cq);
  }
  if (channel != nullptr) {
    ibv_destroy_comp_channel(channel);
  }
}

PeerInfo Endpoint::info() const {
  PeerInfo info;
  info.qpn = qp->qp_num;
  info.psn = psn;
  info.gid = device->gid;
  return info;
}

void Endpoint::connect(const PeerInfo& remote) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = 1;
  attr.qp_access_flags = options.access;
  require(ibv_modify_qp(qp, &attr,
                        IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0,
          "modify to INIT");
  attr = ibv_qp_attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = options.mtu;
  attr.dest_qp_num = remote.qpn;
  attr.rq_psn = remote.psn;
  attr.max_dest_rd_atomic = options.max_dest_rd_atomic;
  attr.min_rnr_timer = options.min_rnr_timer;
  attr.ah_attr.is_global = 1;
  attr.ah_attr.port_num = 1;
  attr.ah_attr.grh.dgid = remote.gid;
  attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(device->gid_index);
  attr.ah_attr.grh.hop_limit = options.hop_limit;
  attr.ah_attr.grh.traffic_class = options.traffic_class;
  errno = ibv_modify_qp(qp, &attr,
                        IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                            IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  require(errno == 0, "modify to RTR");
  attr = ibv_qp_attr{};
  attr.qp_state = IBV_QPS_RTS;
  attr.timeout = options.timeout;
  attr.retry_cnt = options.retry_cnt;
  attr.rnr_retry = options.rnr_retry;
  attr.sq_psn = psn;
  attr.max_rd_atomic = options.max_rd_atomic;
  errno = ibv_modify_qp(qp, &attr,
                        IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                            IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
  require(errno == 0, "modify to RTS");
}

Buffer::Buffer(ibv_pd* pd, size_t bytes, unsigned access, size_t offset) : size(bytes) {
  constexpr size_t kPage = 4096;
  storage.resize(bytes + offset + 2 * kPage);
  auto base = reinterpret_cast<uintptr_t>(storage.data());
  data = reinterpret_cast<uint8_t*>(((base + kPage - 1) & ~(kPage - 1)) + offset);
  mr = ibv_reg_mr(pd, data, bytes == 0 ? 1 : bytes, access);
  require(mr != nullptr, "ibv_reg_mr");
}

Buffer::~Buffer() {
  if (mr != nullptr) {
    ibv_dereg_mr(mr);
  }
}

ibv_sge Buffer::sge(size_t at, size_t length) const {
  ibv_sge s{};
  s.addr = addr() + at;
  s.length = static_cast<uint32_t>(length);
  s.lkey = mr->lkey;
  return s;
}

uint8_t pattern_byte(uint64_t seed, uint64_t position) {
  uint64_t x = (position + 1) * 0x9E3779B97F4A7C15ULL ^ seed * 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 31;
  return static_cast<uint8_t>(x ^ (x >> 17));
}

void fill_pattern(uint8_t* data, size_t length, uint64_t seed, uint64_t start) {
  for (size_t i = 0; i < length; ++i) {
    data[i] = pattern_byte(seed, start + i);
  }
}

int64_t find_mismatch(const uint8_t* data, size_t length, uint64_t seed, uint64_t start) {
  for (size_t i = 0; i < length; ++i) {
    if (data[i] != pattern_byte(seed, start + i)) {
      return static_cast<int64_t>(i);
    }
  }
  return -1;
}

std::vector<ibv_wc> wait_completions(ibv_cq* cq, size_t count, std::chrono::milliseconds timeout) {
  std::vector<ibv_wc> out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  ibv_wc wc[32];
  unsigned idle = 0;
  while (out.size() < count) {
    // Never take more than asked for: the rest stay queued for the next wait.
    int want = static_cast<int>(std::min<size_t>(32, count - out.size()));
    int n = ibv_poll_cq(cq, want, wc);
    if (n < 0) {
      throw Failure("ibv_poll_cq failed");
    }
    for (int i = 0; i < n; ++i) {
      out.push_back(wc[i]);
    }
    if (n > 0) {
      idle = 0;
      continue;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      break;
    }
    // Leave the CPU to the progress threads on a small machine after a short spin.
    if (++idle > 64) {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    } else {
      std::this_thread::yield();
    }
  }
  return out;
}

bool wait_for_word(const uint64_t* word, uint64_t expected, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (unsigned spins = 1; __atomic_load_n(word, __ATOMIC_ACQUIRE) != expected; ++spins) {
    if (spins % 64 == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        return false;
      }
      std::this_thread::yield();
    }
  }
  return true;
}

bool wait_async_event(ibv_context* ctx, ibv_async_event* event, std::chrono::milliseconds timeout) {
  pollfd pfd{ctx->async_fd, POLLIN, 0};
  if (::poll(&pfd, 1, static_cast<int>(timeout.count())) <= 0) {
    return false;
  }
  return ibv_get_async_event(ctx, event) == 0;
}

std::string stats_json() {
  std::string buf(1 << 16, '\0');
  int n = vroce_stats_json(buf.data(), buf.size());
  buf.resize(static_cast<size_t>(n));
  return buf;
}

uint64_t stat(const std::string& json, const std::string& dotted_path) {
  // A flat scan is enough for vroce's fixed, two-level JSON: find the group, then the key.
  size_t from = 0;
  std::string path = dotted_path;
  size_t dot = path.find('.');
  std::string key = path;
  if (dot != std::string::npos) {
    std::string group = "\"" + path.substr(0, dot) + "\":{";
    from = json.find(group);
    if (from == std::string::npos) {
      throw Failure("no stats group " + path.substr(0, dot));
    }
    key = path.substr(dot + 1);
  }
  std::string needle = "\"" + key + "\":";
  size_t at = json.find(needle, from);
  if (at == std::string::npos) {
    throw Failure("no stats key " + dotted_path);
  }
  return std::stoull(json.substr(at + needle.size()));
}

const char* wc_status_name(ibv_wc_status status) {
  return ibv_wc_status_str(status);
}

}  // namespace vroce_test
