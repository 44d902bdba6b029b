// RC queue pair with RDMA WRITE WITH IMMEDIATE: the raw-verbs floor.
#include "raw_endpoint.h"

#include <arpa/inet.h>
#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "errors.h"
#include "ibv/port_query.h"
#include "rendezvous.h"

namespace roce::bench {

namespace {

// The library a rank should load: --ibverbs, else NCCL_IBVERBS_LIB, else libibverbs.so.1.
std::string verbs_library_path(const std::string& option) {
  if (!option.empty()) {
    return option;
  }
  const char* env = std::getenv("NCCL_IBVERBS_LIB");
  if (env != nullptr && *env != '\0') {
    return env;
  }
  return "libibverbs.so.1";
}

// A full ibv_port_attr (the extended op where the library has it, as the plugin reads it).
int query_port(const ibv::Library& lib, ibv_context* context, uint8_t port, ibv_port_attr* attr) {
  ibv::PortAttributes full{};
  const int rc = ibv::query_port(lib, context, port, &full);
  *attr = full.attr;
  return rc;
}

const char* status_text(const ibv::Library& lib, ibv_wc_status status) {
  return lib.fn().wc_status_str != nullptr ? lib.fn().wc_status_str(status) : "?";
}

}  // namespace

namespace {

// What each rank tells its peer at setup.
struct QpInfo {
  std::uint32_t qpn;
  std::uint32_t psn;
  std::uint8_t gid[16];
  std::uint32_t mtu;  // ibv_mtu
  std::uint64_t recv_addr;
  std::uint32_t recv_rkey;
  std::uint64_t capacity;
  std::uint64_t cts_ring_addr;  // --raw-cts: where this rank's sends read their clear-to-send
  std::uint32_t cts_ring_rkey;
  std::uint32_t cts;  // 1 with --raw-cts (both ranks must agree)
};

std::string gid_text(const ibv_gid& gid) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, gid.raw, text, sizeof(text));
  return text;
}

bool is_ipv4_mapped(const ibv_gid& gid) {
  static const std::uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(gid.raw, kPrefix, sizeof(kPrefix)) == 0;
}

int mtu_bytes(ibv_mtu mtu) {
  return 128 << static_cast<int>(mtu);
}

std::string errno_text() {
  return std::strerror(errno);
}

// The kernel's sysfs GID type, for libraries without _ibv_query_gid_ex.
bool sysfs_gid_is_roce_v2(const std::string& device, int port, int index) {
  std::ifstream in("/sys/class/infiniband/" + device + "/ports/" + std::to_string(port) +
                   "/gid_attrs/types/" + std::to_string(index));
  std::string line;
  return std::getline(in, line) && line.find("RoCE v2") != std::string::npos;
}

}  // namespace

RawDeviceChoice choose_raw_device(const std::string& hca_option, const char* nccl_ib_hca) {
  std::string text = hca_option;
  const bool from_option = !text.empty();
  if (!from_option && nccl_ib_hca != nullptr) {
    text = nccl_ib_hca;
  }
  RawDeviceChoice choice;
  if (text.empty()) {
    choice.name.clear();
    return choice;
  }
  if (text.find(',') != std::string::npos || text[0] == '^') {
    throw UsageError(std::string(from_option ? "--hca " : "NCCL_IB_HCA=") + text +
                     ": the raw path needs one device; pass --hca NAME[:PORT]");
  }
  choice.exact = from_option;
  if (text[0] == '=') {
    choice.exact = true;
    text.erase(0, 1);
  }
  const auto colon = text.find(':');
  if (colon != std::string::npos) {
    const std::string port = text.substr(colon + 1);
    char* end = nullptr;
    const long value = std::strtol(port.c_str(), &end, 10);
    if (port.empty() || *end != '\0' || value < 1 || value > 255) {
      throw UsageError("device '" + text + "': the port after ':' must be 1..255");
    }
    choice.port = static_cast<int>(value);
    text.resize(colon);
  }
  choice.name = text;
  return choice;
}

RawEndpoint::RawEndpoint(Rendezvous& rendezvous, const Options& options, std::size_t capacity)
    : capacity_(capacity), cts_(options.raw_cts) {
  auto loaded = ibv::Library::open(verbs_library_path(options.ibverbs_path));
  if (!loaded) {
    throw BenchError(std::string("--raw: ") + loaded.error() +
                     " (vroce: --ibverbs build/<preset>/vroce/lib/libibverbs.so.1)");
  }
  verbs_ = std::move(*loaded);
  send_buffer_ = options.cuda ? Buffer::cuda(capacity) : Buffer::host(capacity);
  recv_buffer_ = options.cuda ? Buffer::cuda(capacity) : Buffer::host(capacity);
  try {
    open(options);
    connect(rendezvous, options);
  } catch (...) {
    release();
    throw;
  }
}

RawEndpoint::~RawEndpoint() {
  release();
}

void RawEndpoint::release() noexcept {
  if (qp_ != nullptr) {
    verbs_->fn().destroy_qp(qp_);
    qp_ = nullptr;
  }
  for (ibv_mr** mr : {&ring_mr_, &staging_mr_}) {
    if (*mr != nullptr) {
      verbs_->fn().dereg_mr(*mr);
      *mr = nullptr;
    }
  }
  if (send_mr_ != nullptr) {
    verbs_->fn().dereg_mr(send_mr_);
    send_mr_ = nullptr;
  }
  if (recv_mr_ != nullptr) {
    verbs_->fn().dereg_mr(recv_mr_);
    recv_mr_ = nullptr;
  }
  if (cq_ != nullptr) {
    verbs_->fn().destroy_cq(cq_);
    cq_ = nullptr;
  }
  if (pd_ != nullptr) {
    verbs_->fn().dealloc_pd(pd_);
    pd_ = nullptr;
  }
  if (context_ != nullptr) {
    verbs_->fn().close_device(context_);
    context_ = nullptr;
  }
}

void RawEndpoint::open(const Options& options) {
  const RawDeviceChoice choice = choose_raw_device(options.hca, std::getenv("NCCL_IB_HCA"));
  port_ = choice.port;
  int count = 0;
  ibv_device** list = verbs_->fn().get_device_list(&count);
  if (list == nullptr || count == 0) {
    if (list != nullptr) {
      verbs_->fn().free_device_list(list);
    }
    throw BenchError("--raw: " + verbs_->requested_path() + " lists no RDMA device (vroce: check " +
                     "VROCE_DEVICES; hardware: check the driver and /dev/infiniband)");
  }
  std::string seen;
  for (int i = 0; i < count && context_ == nullptr; ++i) {
    const std::string name = verbs_->fn().get_device_name(list[i]);
    seen += (seen.empty() ? "" : ", ") + name;
    const bool match = choice.name.empty() ||
                       (choice.exact ? name == choice.name : name.rfind(choice.name, 0) == 0);
    if (!match) {
      continue;
    }
    ibv_context* ctx = verbs_->fn().open_device(list[i]);
    if (ctx == nullptr) {
      continue;
    }
    ibv_port_attr attr{};
    if (query_port(*verbs_, ctx, static_cast<uint8_t>(port_), &attr) != 0 ||
        attr.state != IBV_PORT_ACTIVE) {
      verbs_->fn().close_device(ctx);
      if (!choice.name.empty()) {
        verbs_->fn().free_device_list(list);
        throw BenchError("--raw: device " + name + " port " + std::to_string(port_) +
                         " is not active");
      }
      continue;
    }
    context_ = ctx;
    device_name_ = name;
    active_mtu_ = attr.active_mtu;
  }
  verbs_->fn().free_device_list(list);
  if (context_ == nullptr) {
    throw BenchError("--raw: no usable device" +
                     (choice.name.empty() ? std::string() : " matching '" + choice.name + "'") +
                     " among " + seen + "; pass --hca NAME");
  }

  // GID: --gid-index, else NCCL_IB_GID_INDEX, else the first RoCE v2 IPv4-mapped entry.
  gid_index_ = options.gid_index;
  if (gid_index_ < 0) {
    if (const char* env = std::getenv("NCCL_IB_GID_INDEX"); env != nullptr && *env != '\0') {
      const auto index = parse_integer<int>(env);
      if (!index || *index < 0) {
        throw BenchError(std::string("NCCL_IB_GID_INDEX='") + env +
                         "' is not a GID index (a number 0 or more); fix it or pass --gid-index");
      }
      gid_index_ = *index;
    }
  }
  ibv_port_attr attr{};
  query_port(*verbs_, context_, static_cast<uint8_t>(port_), &attr);
  if (gid_index_ < 0) {
    for (int i = 0; i < attr.gid_tbl_len && gid_index_ < 0; ++i) {
      bool v2 = false;
      ibv_gid gid{};
      if (verbs_->fn().query_gid_ex != nullptr) {
        ibv_gid_entry entry{};
        if (verbs_->fn().query_gid_ex(context_, static_cast<uint32_t>(port_),
                                      static_cast<uint32_t>(i), &entry, 0, sizeof(entry)) != 0) {
          continue;
        }
        v2 = entry.gid_type == IBV_GID_TYPE_ROCE_V2;
        gid = entry.gid;
      } else {
        if (verbs_->fn().query_gid(context_, static_cast<uint8_t>(port_), i, &gid) != 0) {
          continue;
        }
        v2 = sysfs_gid_is_roce_v2(device_name_, port_, i);
      }
      if (v2 && is_ipv4_mapped(gid)) {
        gid_index_ = i;
      }
    }
    if (gid_index_ < 0) {
      throw BenchError("--raw: " + device_name_ + " port " + std::to_string(port_) +
                       " has no RoCE v2 IPv4 GID; pass --gid-index N");
    }
  }
  if (verbs_->fn().query_gid(context_, static_cast<uint8_t>(port_), gid_index_, &gid_) != 0) {
    throw BenchError("--raw: ibv_query_gid(" + device_name_ + ", index " +
                     std::to_string(gid_index_) + ") failed: " + errno_text());
  }

  pd_ = verbs_->fn().alloc_pd(context_);
  if (pd_ == nullptr) {
    throw BenchError("--raw: ibv_alloc_pd on " + device_name_ + " failed: " + errno_text());
  }
  // Sends in flight are at most the window; receives go kReceiveDepth deep (receive_depth). A
  // clear-to-send stays in the send queue until a later signaled write's completion is polled:
  // room for a window of them beyond the signaling period (post_recv waits for room).
  const int send_depth = 2 * options.window + 4 + (cts_ ? options.window + 2 * kCtsSignalEvery : 0);
  send_depth_ = send_depth;
  const int recv_depth = kReceiveDepth + 4;
  cq_ = verbs_->fn().create_cq(context_, send_depth + recv_depth, nullptr, nullptr, 0);
  if (cq_ == nullptr) {
    throw BenchError("--raw: ibv_create_cq on " + device_name_ + " failed: " + errno_text());
  }
  ibv_qp_init_attr init{};
  init.send_cq = cq_;
  init.recv_cq = cq_;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = static_cast<uint32_t>(send_depth);
  init.cap.max_recv_wr = static_cast<uint32_t>(recv_depth);
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.cap.max_inline_data = 64;
  qp_ = verbs_->fn().create_qp(pd_, &init);
  if (qp_ == nullptr) {
    // Some devices have no inline support: retry without before giving up.
    init.cap.max_inline_data = 0;
    qp_ = verbs_->fn().create_qp(pd_, &init);
  }
  if (qp_ == nullptr) {
    throw BenchError("--raw: ibv_create_qp(RC) on " + device_name_ + " failed: " + errno_text() +
                     (errno == EADDRINUSE ? " (another process uses this vroce device: give "
                                            "each process its own)"
                                          : ""));
  }
  max_inline_ = init.cap.max_inline_data;
  const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  send_mr_ = verbs_->fn().reg_mr(pd_, send_buffer_.data(), send_buffer_.allocated(),
                                 IBV_ACCESS_LOCAL_WRITE);
  recv_mr_ = verbs_->fn().reg_mr(pd_, recv_buffer_.data(), recv_buffer_.allocated(), access);
  if (send_mr_ == nullptr || recv_mr_ == nullptr) {
    throw BenchError("--raw: ibv_reg_mr of " + std::to_string(recv_buffer_.allocated()) +
                     " bytes on " + device_name_ + " failed: " + errno_text());
  }
  if (cts_) {
    // Value-initialized: zero sequences, so no slot looks ready before its receive writes it.
    ring_ = std::make_unique<CtsEntry[]>(kCtsRingSlots);
    staging_entries_ = static_cast<std::size_t>(send_depth);
    staging_ = std::make_unique<CtsEntry[]>(staging_entries_);
    ring_mr_ = verbs_->fn().reg_mr(pd_, ring_.get(), kCtsRingSlots * sizeof(CtsEntry), access);
    staging_mr_ = verbs_->fn().reg_mr(pd_, staging_.get(), staging_entries_ * sizeof(CtsEntry),
                                      IBV_ACCESS_LOCAL_WRITE);
    if (ring_mr_ == nullptr || staging_mr_ == nullptr) {
      throw BenchError("--raw-cts: ibv_reg_mr of the clear-to-send ring on " + device_name_ +
                       " failed: " + errno_text());
    }
  }
  std::uint32_t random = 0;
  if (getrandom(&random, sizeof(random), 0) != static_cast<ssize_t>(sizeof(random))) {
    random = 0x5eed;
  }
  psn_ = random & 0xffffff;
}

void RawEndpoint::connect(Rendezvous& rendezvous, const Options& options) {
  QpInfo mine{};
  mine.qpn = qp_->qp_num;
  mine.psn = psn_;
  std::memcpy(mine.gid, gid_.raw, sizeof(mine.gid));
  mine.mtu = static_cast<std::uint32_t>(active_mtu_);
  mine.recv_addr = reinterpret_cast<std::uintptr_t>(recv_buffer_.data());
  mine.recv_rkey = recv_mr_->rkey;
  mine.capacity = capacity_;
  mine.cts = cts_ ? 1 : 0;
  if (cts_) {
    mine.cts_ring_addr = reinterpret_cast<std::uintptr_t>(ring_.get());
    mine.cts_ring_rkey = ring_mr_->rkey;
  }
  const auto all =
      rendezvous.allgather(std::string_view(reinterpret_cast<const char*>(&mine), sizeof(mine)));
  const int peer = 1 - rendezvous.rank();
  QpInfo theirs{};
  if (all[static_cast<std::size_t>(peer)].size() != sizeof(theirs)) {
    throw BenchError("--raw: malformed queue-pair description from rank " + std::to_string(peer));
  }
  std::memcpy(&theirs, all[static_cast<std::size_t>(peer)].data(), sizeof(theirs));
  if (theirs.capacity != capacity_) {
    throw BenchError("--raw: rank " + std::to_string(peer) + " has " +
                     std::to_string(theirs.capacity) + "-byte buffers, this rank " +
                     std::to_string(capacity_) + "; start both with the same options");
  }
  if (theirs.cts != mine.cts) {
    throw BenchError("--raw: rank " + std::to_string(peer) +
                     (theirs.cts != 0 ? " runs" : " does not run") +
                     " with --raw-cts and this rank" + (cts_ ? " does" : " does not") +
                     "; start both with the same options");
  }
  remote_addr_ = theirs.recv_addr;
  remote_rkey_ = theirs.recv_rkey;
  remote_ring_addr_ = theirs.cts_ring_addr;
  remote_ring_rkey_ = theirs.cts_ring_rkey;

  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = static_cast<uint8_t>(port_);
  attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  if (verbs_->fn().modify_qp(
          qp_, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0) {
    throw BenchError("--raw: qp " + std::to_string(qp_->qp_num) +
                     " RESET->INIT failed: " + errno_text());
  }
  attr = {};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = std::min(active_mtu_, static_cast<ibv_mtu>(theirs.mtu));
  attr.dest_qp_num = theirs.qpn;
  attr.rq_psn = theirs.psn;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;
  attr.ah_attr.is_global = 1;
  std::memcpy(attr.ah_attr.grh.dgid.raw, theirs.gid, sizeof(theirs.gid));
  attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(gid_index_);
  attr.ah_attr.grh.hop_limit = 255;
  attr.ah_attr.grh.traffic_class =
      static_cast<uint8_t>(options.traffic_class >= 0 ? options.traffic_class : 0);
  attr.ah_attr.port_num = static_cast<uint8_t>(port_);
  if (verbs_->fn().modify_qp(qp_, &attr,
                             IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                 IBV_QP_MIN_RNR_TIMER) != 0) {
    ibv_gid remote{};
    std::memcpy(remote.raw, theirs.gid, sizeof(theirs.gid));
    throw BenchError("--raw: qp " + std::to_string(qp_->qp_num) + " INIT->RTR to gid " +
                     gid_text(remote) + " qpn " + std::to_string(theirs.qpn) +
                     " failed: " + errno_text());
  }
  const ibv_mtu path_mtu = attr.path_mtu;
  attr = {};
  attr.qp_state = IBV_QPS_RTS;
  attr.timeout = 14;
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.sq_psn = psn_;
  attr.max_rd_atomic = 1;
  if (verbs_->fn().modify_qp(qp_, &attr,
                             IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
    throw BenchError("--raw: qp " + std::to_string(qp_->qp_num) +
                     " RTR->RTS failed: " + errno_text());
  }
  description_ = device_name_ + " port " + std::to_string(port_) + " gid " +
                 std::to_string(gid_index_) + " " + gid_text(gid_) + " mtu " +
                 std::to_string(mtu_bytes(path_mtu)) + " qpn " + std::to_string(qp_->qp_num) +
                 " inline " + std::to_string(max_inline_) +
                 (cts_ ? ", a clear-to-send per message" : "");
  // Both QPs must be RTR before either side sends.
  rendezvous.barrier();
}

bool RawEndpoint::post_send(int slot, std::size_t bytes, Ticket& ticket) {
  const std::size_t offset = slot_offset(slot, bytes);
  std::uint64_t remote_addr = remote_addr_ + offset;
  std::uint32_t remote_rkey = remote_rkey_;
  if (cts_) {
    // As the plugin's isend: not before the receiver's clear-to-send for this message is here,
    // and then to the buffer it names.
    const std::uint64_t seq = send_seq_ + 1;
    const CtsEntry& entry = ring_[cts_slot_of(seq)];
    int count = 0;
    switch (check_cts_slot(&entry, seq, &count)) {
      case CtsSlotState::NotReady:
        return false;
      case CtsSlotState::Corrupt:
        throw BenchError("--raw-cts: clear-to-send " + std::to_string(seq) +
                         " announces a count of " + std::to_string(entry.count));
      case CtsSlotState::Ready:
        break;
    }
    if (count != 1 || entry.size < bytes) {
      throw BenchError("--raw-cts: clear-to-send " + std::to_string(seq) + " announces " +
                       std::to_string(count) + " buffer(s) of " + std::to_string(entry.size) +
                       " bytes for a " + std::to_string(bytes) + "-byte message");
    }
    remote_addr = entry.addr;
    remote_rkey = entry.rkey;
  }
  if (send_queue_used() >= static_cast<std::uint64_t>(send_depth_)) {
    return false;
  }
  ticket = Ticket{Ticket::State::Pending, nullptr, nullptr, slot, bytes, false};
  // Its send-queue position, so that its completion retires it and every WR before it.
  ticket.handle = reinterpret_cast<void*>(static_cast<std::uintptr_t>(sq_posted_ + 1));
  ibv_sge sge{};
  sge.addr = reinterpret_cast<std::uintptr_t>(send_buffer_.bytes() + offset);
  sge.length = static_cast<uint32_t>(bytes);
  sge.lkey = send_mr_->lkey;
  ibv_send_wr wr{};
  wr.wr_id = reinterpret_cast<std::uintptr_t>(&ticket);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  if (bytes <= max_inline_ && !send_buffer_.is_cuda()) {
    wr.send_flags |= IBV_SEND_INLINE;
  }
  wr.imm_data = htonl(static_cast<uint32_t>(slot));
  wr.wr.rdma.remote_addr = remote_addr;
  wr.wr.rdma.rkey = remote_rkey;
  ibv_send_wr* bad = nullptr;
  const int rc = ibv_post_send(qp_, &wr, &bad);
  if (rc == ENOMEM) {
    ticket.state = Ticket::State::Idle;
    return false;  // send queue full: poll and retry
  }
  if (rc != 0) {
    throw BenchError("--raw: ibv_post_send(RDMA_WRITE_WITH_IMM, " + std::to_string(bytes) +
                     " bytes) on qp " + std::to_string(qp_->qp_num) +
                     " failed: " + std::strerror(rc));
  }
  ++sq_posted_;
  if (cts_) {
    ++send_seq_;
  }
  return true;
}

void RawEndpoint::post_clear_to_send(std::uint64_t seq, int slot, std::size_t bytes) {
  const std::size_t offset = slot_offset(slot, bytes);
  // One staging entry per send-queue position: a WR that still sits in the queue (not inline,
  // not yet sent) keeps its source until the queue has turned over.
  CtsEntry& entry = staging_[sq_posted_ % staging_entries_];
  fill_cts_entry(entry,
                 CtsBuffer{reinterpret_cast<std::uintptr_t>(recv_buffer_.bytes() + offset),
                           static_cast<std::uint32_t>(bytes), recv_mr_->rkey, 0},
                 seq, 0, 1);
  ibv_sge sge{};
  sge.addr = reinterpret_cast<std::uintptr_t>(&entry);
  sge.length = sizeof(CtsEntry);
  sge.lkey = staging_mr_->lkey;
  ibv_send_wr wr{};
  // Signaled ones carry their send-queue position (odd: never a ticket's address).
  const bool signaled = seq % kCtsSignalEvery == 0;
  wr.wr_id = signaled ? ((sq_posted_ + 1) << 1 | 1) : 0;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags =
      (signaled ? IBV_SEND_SIGNALED : 0) | (sizeof(CtsEntry) <= max_inline_ ? IBV_SEND_INLINE : 0);
  wr.wr.rdma.remote_addr = remote_ring_addr_ + cts_slot_of(seq) * sizeof(CtsEntry);
  wr.wr.rdma.rkey = remote_ring_rkey_;
  ibv_send_wr* bad = nullptr;
  const int rc = ibv_post_send(qp_, &wr, &bad);
  if (rc != 0) {
    // post_recv made sure of room; a failure here is the device's.
    throw BenchError("--raw-cts: ibv_post_send(RDMA_WRITE, clear-to-send " + std::to_string(seq) +
                     ") on qp " + std::to_string(qp_->qp_num) + " failed: " + std::strerror(rc));
  }
  ++sq_posted_;
}

bool RawEndpoint::post_recv(int slot, std::size_t bytes, Ticket& ticket) {
  if (cts_ && send_queue_used() >= static_cast<std::uint64_t>(send_depth_)) {
    return false;  // no room for its clear-to-send yet: poll and retry
  }
  ticket = Ticket{Ticket::State::Pending, nullptr, nullptr, slot, bytes, true};
  ibv_recv_wr wr{};
  wr.wr_id = reinterpret_cast<std::uintptr_t>(&ticket);
  wr.sg_list = nullptr;
  wr.num_sge = 0;  // WRITE WITH IMM lands at the RDMA address; the WQE only carries completion
  ibv_recv_wr* bad = nullptr;
  const int rc = ibv_post_recv(qp_, &wr, &bad);
  if (rc == ENOMEM) {
    ticket.state = Ticket::State::Idle;
    return false;
  }
  if (rc != 0) {
    throw BenchError("--raw: ibv_post_recv on qp " + std::to_string(qp_->qp_num) +
                     " failed: " + std::strerror(rc));
  }
  if (cts_) {
    // After the receive WQE, so the WRITE WITH IMMEDIATE it lets the peer send finds one.
    post_clear_to_send(++recv_seq_, slot, bytes);
  }
  return true;
}

void RawEndpoint::poll_completions() {
  ibv_wc wcs[16];
  const int n = ibv_poll_cq(cq_, 16, wcs);
  if (n < 0) {
    throw BenchError("--raw: ibv_poll_cq on " + device_name_ + " failed");
  }
  for (int i = 0; i < n; ++i) {
    const ibv_wc& wc = wcs[i];
    // A clear-to-send's completion (odd id; an unsignaled one has id 0 and completes only when
    // flushed by an error).
    const bool clear_to_send = (wc.wr_id & 1) != 0 || wc.wr_id == 0;
    auto* ticket =
        clear_to_send ? nullptr : reinterpret_cast<Ticket*>(static_cast<std::uintptr_t>(wc.wr_id));
    if (wc.status != IBV_WC_SUCCESS) {
      throw BenchError("--raw: completion error on qp " + std::to_string(wc.qp_num) + ": " +
                       status_text(*verbs_, wc.status) + " (status " +
                       std::to_string(static_cast<int>(wc.status)) + ", vendor_err " +
                       std::to_string(wc.vendor_err) + ")");
    }
    if (clear_to_send) {
      sq_retired_ = std::max(sq_retired_, wc.wr_id >> 1);
      continue;
    }
    if (ticket->recv) {
      const auto slot = static_cast<int>(ntohl(wc.imm_data));
      if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || wc.byte_len != ticket->bytes ||
          slot != ticket->slot) {
        throw BenchError("--raw: receive completion for " + std::to_string(wc.byte_len) +
                         " bytes into slot " + std::to_string(slot) + "; expected " +
                         std::to_string(ticket->bytes) + " bytes into slot " +
                         std::to_string(ticket->slot));
      }
    } else {
      sq_retired_ =
          std::max(sq_retired_,
                   static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(ticket->handle)));
    }
    ticket->state = Ticket::State::Done;
  }
}

bool RawEndpoint::test(Ticket& ticket) {
  if (ticket.state == Ticket::State::Done) {
    return true;
  }
  if (ticket.state == Ticket::State::Idle) {
    throw BenchError("internal: test of a ticket that was never posted");
  }
  poll_completions();
  return ticket.state == Ticket::State::Done;
}

}  // namespace roce::bench
