// An in-memory verbs provider for unit tests of the verbs layer and the async-event thread: a
// Functions table (ibv::Library::from_functions) whose entry points manage plain structs, plus
// an ops table for post/poll. It follows the rules that matter to the code under test: QP state
// set by modify, outstanding requests flushed in order with IBV_WC_WR_FLUSH_ERR when the QP
// enters ERR, posts to an ERR QP completing at once as flushed, and events delivered through an
// eventfd-backed async fd. One FakeVerbs exists at a time (the entry points are plain functions).
#pragma once

#include <infiniband/verbs.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ibv/library.h"

namespace roce::test {

class FakeVerbs {
 public:
  struct ModifyCall {
    uint32_t qp_num;
    int mask;
    ibv_qp_attr attr;
  };

  // Knobs.
  int modify_error = 0;     // errno returned by every ibv_modify_qp when non-zero
  int modify_timeouts = 0;  // the next this many ibv_modify_qp calls return ETIMEDOUT
  int tc_rewrite = -1;      // >= 0: the traffic class query_qp reports
  bool refuse_posts_in_err = false;
  ibv_port_attr port{};  // what query_port reports (first 48 bytes, compat symbol)
  std::vector<ibv_gid> gids;

  // Observations.
  std::vector<ModifyCall> modify_calls;
  int live_pds = 0, live_cqs = 0, live_qps = 0, live_mrs = 0, open_contexts = 0;
  int acked_events = 0;
  std::vector<std::string> destroy_order;

  FakeVerbs() {
    current() = this;
    std::memset(&vctx_, 0, sizeof(vctx_));
    std::memset(&device_, 0, sizeof(device_));
    std::strcpy(device_.name, "fake0");
    ibv_context& ctx = vctx_.context;
    ctx.device = &device_;
    ctx.async_fd = eventfd(0, EFD_CLOEXEC);
    ctx.num_comp_vectors = 1;
    ctx.ops.post_send = &FakeVerbs::post_send;
    ctx.ops.post_recv = &FakeVerbs::post_recv;
    ctx.ops.poll_cq = &FakeVerbs::poll_cq;
    port.state = IBV_PORT_ACTIVE;
    port.link_layer = IBV_LINK_LAYER_ETHERNET;
    port.active_mtu = IBV_MTU_1024;
    port.max_mtu = IBV_MTU_4096;
    port.active_speed = 128;
    port.active_width = 2;
    port.gid_tbl_len = 4;
  }
  ~FakeVerbs() {
    close(vctx_.context.async_fd);
    current() = nullptr;
  }
  FakeVerbs(const FakeVerbs&) = delete;
  FakeVerbs& operator=(const FakeVerbs&) = delete;

  static FakeVerbs*& current() {
    static FakeVerbs* instance = nullptr;
    return instance;
  }

  std::shared_ptr<const ibv::Library> library() {
    ibv::Functions f;
    f.get_device_list = [](int* n) -> ibv_device** {
      static ibv_device* list[2];
      list[0] = &current()->device_;
      list[1] = nullptr;
      if (n != nullptr)
        *n = 1;
      return list;
    };
    f.free_device_list = [](ibv_device**) {};
    f.get_device_name = [](ibv_device* d) -> const char* { return d->name; };
    f.open_device = [](ibv_device*) -> ibv_context* {
      ++current()->open_contexts;
      return &current()->vctx_.context;
    };
    f.close_device = [](ibv_context*) -> int {
      --current()->open_contexts;
      current()->destroy_order.push_back("context");
      return 0;
    };
    f.query_device = [](ibv_context*, ibv_device_attr* attr) -> int {
      std::memset(attr, 0, sizeof(*attr));
      attr->phys_port_cnt = 1;
      attr->max_qp = 1024;
      attr->max_qp_wr = 4096;
      attr->max_sge = 4;
      attr->max_cqe = 4096;
      attr->max_qp_rd_atom = 16;
      attr->max_qp_init_rd_atom = 16;
      attr->max_pkeys = 1;
      attr->sys_image_guid = 0x1122334455667788ULL;
      return 0;
    };
    f.query_port_compat = [](ibv_context*, uint8_t port_num, _compat_ibv_port_attr* out) -> int {
      if (port_num != 1)
        return EINVAL;
      std::memcpy(out, &current()->port, 48);  // the compat symbol's size
      return 0;
    };
    f.query_gid = [](ibv_context*, uint8_t, int index, ibv_gid* gid) -> int {
      auto& table = current()->gids;
      if (index < 0 || static_cast<size_t>(index) >= table.size())
        return EINVAL;
      *gid = table[static_cast<size_t>(index)];
      return 0;
    };
    f.alloc_pd = [](ibv_context* ctx) -> ibv_pd* {
      auto* pd = new ibv_pd{};
      pd->context = ctx;
      ++current()->live_pds;
      return pd;
    };
    f.dealloc_pd = [](ibv_pd* pd) -> int {
      delete pd;
      --current()->live_pds;
      current()->destroy_order.push_back("pd");
      return 0;
    };
    f.reg_mr = [](ibv_pd* pd, void* addr, size_t length, int) -> ibv_mr* {
      auto* mr = new ibv_mr{};
      mr->context = pd->context;
      mr->pd = pd;
      mr->addr = addr;
      mr->length = length;
      mr->lkey = mr->rkey = static_cast<uint32_t>(++current()->next_key_);
      ++current()->live_mrs;
      return mr;
    };
    f.dereg_mr = [](ibv_mr* mr) -> int {
      delete mr;
      --current()->live_mrs;
      current()->destroy_order.push_back("mr");
      return 0;
    };
    f.create_cq = [](ibv_context* ctx, int cqe, void*, ibv_comp_channel*, int) -> ibv_cq* {
      auto* cq = new ibv_cq{};
      cq->context = ctx;
      cq->cqe = cqe;
      ++current()->live_cqs;
      return cq;
    };
    f.destroy_cq = [](ibv_cq* cq) -> int {
      current()->completions_.erase(cq);
      delete cq;
      --current()->live_cqs;
      current()->destroy_order.push_back("cq");
      return 0;
    };
    f.create_qp = [](ibv_pd* pd, ibv_qp_init_attr* init) -> ibv_qp* {
      auto* qp = new ibv_qp{};
      qp->context = pd->context;
      qp->pd = pd;
      qp->send_cq = init->send_cq;
      qp->recv_cq = init->recv_cq;
      qp->qp_type = init->qp_type;
      qp->state = IBV_QPS_RESET;
      qp->qp_num = ++current()->next_qpn_;
      ++current()->live_qps;
      return qp;
    };
    f.modify_qp = [](ibv_qp* qp, ibv_qp_attr* attr, int mask) -> int {
      FakeVerbs& fake = *current();
      fake.modify_calls.push_back({qp->qp_num, mask, *attr});
      if (fake.modify_error != 0)
        return fake.modify_error;
      if (fake.modify_timeouts > 0) {
        --fake.modify_timeouts;
        return ETIMEDOUT;
      }
      if ((mask & IBV_QP_AV) != 0)
        fake.tc_[qp] = attr->ah_attr.grh.traffic_class;
      qp->state = attr->qp_state;
      if (attr->qp_state == IBV_QPS_ERR)
        fake.flush(qp);
      return 0;
    };
    f.query_qp = [](ibv_qp* qp, ibv_qp_attr* attr, int, ibv_qp_init_attr*) -> int {
      FakeVerbs& fake = *current();
      std::memset(attr, 0, sizeof(*attr));
      attr->ah_attr.grh.traffic_class =
          fake.tc_rewrite >= 0 ? static_cast<uint8_t>(fake.tc_rewrite) : fake.tc_[qp];
      return 0;
    };
    f.destroy_qp = [](ibv_qp* qp) -> int {
      current()->outstanding_.erase(qp);
      delete qp;
      --current()->live_qps;
      current()->destroy_order.push_back("qp");
      return 0;
    };
    f.get_async_event = [](ibv_context* ctx, ibv_async_event* event) -> int {
      FakeVerbs& fake = *current();
      std::lock_guard lock(fake.events_mutex_);
      if (fake.events_.empty()) {
        uint64_t drained;
        (void)!read(ctx->async_fd, &drained, sizeof(drained));  // non-blocking: may be empty
        errno = EAGAIN;
        return -1;
      }
      *event = fake.events_.front();
      fake.events_.pop_front();
      return 0;
    };
    f.ack_async_event = [](ibv_async_event*) { ++current()->acked_events; };
    f.fork_init = []() -> int { return 0; };
    f.event_type_str = [](ibv_event_type) -> const char* { return "fake event"; };
    return ibv::Library::from_functions(f, "fake-verbs");
  }

  // Queues an async event and makes the async fd readable.
  void raise(const ibv_async_event& event) {
    {
      std::lock_guard lock(events_mutex_);
      events_.push_back(event);
    }
    const uint64_t one = 1;
    (void)!write(vctx_.context.async_fd, &one, sizeof(one));
  }

  // Adds a completion to a CQ as if the device produced it.
  void complete(ibv_cq* cq, uint32_t qp_num, uint64_t wr_id) {
    ibv_wc wc{};
    wc.qp_num = qp_num;
    wc.wr_id = wr_id;
    wc.status = IBV_WC_SUCCESS;
    completions_[cq].push_back(wc);
  }
  size_t pending_completions(ibv_cq* cq) { return completions_[cq].size(); }

  // Makes the context look like rdma-core's extended one, with a query_port op that fills the
  // whole struct and, when the caller's buffer has room, active_speed_ex.
  void enable_extended_query_port(uint32_t speed_ex) {
    speed_ex_ = speed_ex;
    vctx_.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
    vctx_.sz = sizeof(verbs_context);
    vctx_.query_port = [](ibv_context*, uint8_t port_num, ibv_port_attr* attr, size_t len) -> int {
      if (port_num != 1 || len < sizeof(ibv_port_attr))
        return EINVAL;
      std::memset(attr, 0, len);
      std::memcpy(attr, &current()->port, sizeof(ibv_port_attr));
      if (len >= sizeof(ibv_port_attr) + sizeof(uint32_t)) {
        std::memcpy(reinterpret_cast<char*>(attr) + sizeof(ibv_port_attr), &current()->speed_ex_,
                    sizeof(uint32_t));
      }
      ++current()->extended_queries;
      return 0;
    };
  }
  int extended_queries = 0;
  ibv_context* context() { return &vctx_.context; }

 private:
  struct Posted {
    uint64_t wr_id;
    bool send;
  };

  static int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
    FakeVerbs& fake = *current();
    for (; wr != nullptr; wr = wr->next) {
      if (qp->state == IBV_QPS_ERR && !fake.refuse_posts_in_err) {
        fake.flush_one(qp->send_cq, qp->qp_num, wr->wr_id);
      } else if (qp->state == IBV_QPS_RTS) {
        fake.outstanding_[qp].push_back({wr->wr_id, true});
      } else {
        *bad = wr;
        return EINVAL;
      }
    }
    return 0;
  }
  static int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
    FakeVerbs& fake = *current();
    for (; wr != nullptr; wr = wr->next) {
      if (qp->state == IBV_QPS_ERR && !fake.refuse_posts_in_err) {
        fake.flush_one(qp->recv_cq, qp->qp_num, wr->wr_id);
      } else if (qp->state != IBV_QPS_RESET && qp->state != IBV_QPS_ERR) {
        fake.outstanding_[qp].push_back({wr->wr_id, false});
      } else {
        *bad = wr;
        return EINVAL;
      }
    }
    return 0;
  }
  static int poll_cq(ibv_cq* cq, int max, ibv_wc* wc) {
    auto& queue = current()->completions_[cq];
    int n = 0;
    while (n < max && !queue.empty()) {
      wc[n++] = queue.front();
      queue.pop_front();
    }
    return n;
  }

  void flush_one(ibv_cq* cq, uint32_t qp_num, uint64_t wr_id) {
    ibv_wc wc{};
    wc.qp_num = qp_num;
    wc.wr_id = wr_id;
    wc.status = IBV_WC_WR_FLUSH_ERR;
    completions_[cq].push_back(wc);
  }
  void flush(ibv_qp* qp) {
    for (const Posted& posted : outstanding_[qp]) {
      flush_one(posted.send ? qp->send_cq : qp->recv_cq, qp->qp_num, posted.wr_id);
    }
    outstanding_[qp].clear();
  }

  verbs_context vctx_;
  ibv_device device_;
  uint32_t speed_ex_ = 0;
  uint64_t next_key_ = 0x100;
  uint32_t next_qpn_ = 0x40;
  std::map<ibv_qp*, uint8_t> tc_;
  std::map<ibv_qp*, std::vector<Posted>> outstanding_;
  std::map<ibv_cq*, std::deque<ibv_wc>> completions_;
  std::mutex events_mutex_;
  std::deque<ibv_async_event> events_;
};

}  // namespace roce::test
