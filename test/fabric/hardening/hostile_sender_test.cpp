// A sender that breaks the data-path protocol: it writes a message for which the receiver posted
// no irecv, so no clear-to-send went out for it. The receiver's posted-ahead receives take the
// immediate anyway (a NIC consumes a receive for every WRITE WITH IMMEDIATE), so only the
// plugin's sequence bookkeeping can tell. It must fail that receive comm with one WARN naming
// the peer and the message, keep failing it without logging again, and leave other connections
// working.
//
// The hostile sender is a real send comm of this process's own plugin core (roce_core, linked
// in, not the .so), whose data QP the test posts on directly: the handshake, the QP states and
// the receiver's side are the product's own, and only the writes break the rules.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/api.h"
#include "core/datapath/api_data_path.h"
#include "core/datapath/send_comm.h"
#include "hang_bound.h"
#include "hardening_support.h"
#include "test_backend.h"
#include "verbs/completion_queue.h"
#include "verbs/queue_pair.h"

using roce::test::use_test_devices;

using namespace roce::test;

namespace {

using Clock = std::chrono::steady_clock;

int device_named(const char* name) {
  int ndev = 0;
  REQUIRE(roce::api::devices(&ndev) == ncclSuccess);
  for (int d = 0; d < ndev; ++d) {
    roce::api::Properties props;
    REQUIRE(roce::api::get_properties(d, &props) == ncclSuccess);
    if (std::string(props.name) == name) {
      return d;
    }
  }
  FAIL("no device named " << name);
  return -1;
}

struct Connection {
  void* send = nullptr;
  void* recv = nullptr;
};

// listen on `to`, then connect from `from` and accept, both stepped from this thread.
Connection connect_pair(int from, int to) {
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  void* listen_comm = nullptr;
  REQUIRE(roce::api::listen(to, NCCL_NET_TRAFFIC_CLASS_UNDEF, handle, &listen_comm) == ncclSuccess);
  Connection c;
  const auto deadline = Clock::now() + kHangBound;
  while ((c.send == nullptr || c.recv == nullptr) && Clock::now() < deadline) {
    if (c.send == nullptr) {
      REQUIRE(roce::api::connect(from, NCCL_NET_TRAFFIC_CLASS_UNDEF, handle, &c.send) ==
              ncclSuccess);
    }
    if (c.recv == nullptr) {
      REQUIRE(roce::api::accept(listen_comm, &c.recv) == ncclSuccess);
    }
  }
  REQUIRE(roce::api::close_listen(listen_comm) == ncclSuccess);
  REQUIRE(c.send != nullptr);
  REQUIRE(c.recv != nullptr);
  return c;
}

// Tests `request` until it is done or fails (or the hang bound passes); the last result.
ncclResult_t test_until_done(void* request, int* done, int* size) {
  const auto deadline = Clock::now() + kHangBound;
  ncclResult_t r = ncclSuccess;
  *done = 0;
  while (r == ncclSuccess && *done == 0 && Clock::now() < deadline) {
    r = roce::api::test(request, done, size);
  }
  return r;
}

// Two zero-length WRITE WITH IMMEDIATEs on data QP 0 of `send_comm`, signaled, outside the
// protocol (no clear-to-send consumed); returns once the receiver's NIC has acknowledged both,
// so both receive completions wait in the receiver's CQ.
void write_twice_without_cts(void* send_comm) {
  auto* send =
      static_cast<roce::SendComm*>(roce::Comm::from_handle(send_comm, roce::CommKind::Send));
  REQUIRE(send != nullptr);
  ibv_send_wr wrs[2] = {};
  for (int i = 0; i < 2; ++i) {
    wrs[i].wr_id = 0x4057110 + static_cast<uint64_t>(i);
    wrs[i].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wrs[i].send_flags = IBV_SEND_SIGNALED;
    wrs[i].imm_data = 0;  // zero bytes: within any receive
    wrs[i].next = i == 0 ? &wrs[1] : nullptr;
  }
  ibv_send_wr* bad = nullptr;
  REQUIRE(send->data_qp(0).post_send(wrs, &bad) == 0);
  int acknowledged = 0;
  const auto deadline = Clock::now() + kHangBound;
  while (acknowledged < 2 && Clock::now() < deadline) {
    ibv_wc wc[2];
    const int got = send->completion_queue().poll(2, wc);
    REQUIRE(got >= 0);
    for (int k = 0; k < got; ++k) {
      INFO("wc status " << wc[k].status);
      REQUIRE(wc[k].status == IBV_WC_SUCCESS);
    }
    acknowledged += got;
  }
  REQUIRE(acknowledged == 2);
}

struct Buffer {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(64);
  void* mh = nullptr;
};

// One irecv of the whole buffer (registered on the first call); the plugin's result.
ncclResult_t irecv_into(void* recv_comm, Buffer& buffer, int tag, void** request) {
  if (buffer.mh == nullptr) {
    REQUIRE(roce::api::reg_mr(recv_comm, buffer.bytes.data(), buffer.bytes.size(), NCCL_PTR_HOST,
                              &buffer.mh) == ncclSuccess);
  }
  void* data[1] = {buffer.bytes.data()};
  const int sizes[1] = {static_cast<int>(buffer.bytes.size())};
  const int tags[1] = {tag};
  void* mhandles[1] = {buffer.mh};
  *request = nullptr;
  return roce::api::irecv(recv_comm, 1, data, sizes, tags, mhandles, nullptr, request);
}

// irecv_into, which must post.
void* post_irecv(void* recv_comm, Buffer& buffer, int tag = 0) {
  void* request = nullptr;
  REQUIRE(irecv_into(recv_comm, buffer, tag, &request) == ncclSuccess);
  REQUIRE(request != nullptr);
  return request;
}

size_t warns_naming(const std::string& text) {
  size_t n = 0;
  for (const auto& line : warn_lines()) {
    if (line.find(text) != std::string::npos) {
      ++n;
    }
  }
  return n;
}

}  // namespace

TEST_CASE(
    "a sender writing without a clear-to-send fails the receive comm with one WARN, and "
    "other connections go on",
    "[hardening][quick][vroce]") {
  use_test_devices({"hda", "hdb"});
  reset_warn_count();
  REQUIRE(roce::api::init(test_logger) == ncclSuccess);
  const int a = device_named("hda");
  const int b = device_named("hdb");

  const Connection hostile = connect_pair(a, b);
  // Message 1 gets its irecv (after the fact; the receive completion waits in the CQ until the
  // comm polls), message 2 never does.
  write_twice_without_cts(hostile.send);
  Buffer posted;
  void* request = post_irecv(hostile.recv, posted);
  int done = 0;
  int size = -1;
  CHECK(test_until_done(request, &done, &size) == ncclRemoteError);
  const std::string named = "wrote message 2 into qp";
  CHECK(warns_naming(named) == 1);
  CHECK(warned(named, "before this side posted its irecv"));

  // The comm stays failed, and says so without another WARN.
  const int warns_before = warn_count();
  Buffer second;
  void* more = nullptr;
  CHECK(irecv_into(hostile.recv, second, 0, &more) == ncclRemoteError);
  CHECK(warn_count() == warns_before);

  // Another connection between the same devices carries a verified message.
  const Connection fresh = connect_pair(a, b);
  Buffer source;
  for (size_t i = 0; i < source.bytes.size(); ++i) {
    source.bytes[i] = static_cast<uint8_t>(i * 13 + 5);
  }
  REQUIRE(roce::api::reg_mr(fresh.send, source.bytes.data(), source.bytes.size(), NCCL_PTR_HOST,
                            &source.mh) == ncclSuccess);
  Buffer target;
  void* recv_request = post_irecv(fresh.recv, target, 7);
  void* send_request = nullptr;
  const auto deadline = Clock::now() + kHangBound;
  while (send_request == nullptr && Clock::now() < deadline) {
    REQUIRE(roce::api::isend(fresh.send, source.bytes.data(), source.bytes.size(), 7, source.mh,
                             nullptr, &send_request) == ncclSuccess);
  }
  REQUIRE(send_request != nullptr);
  int send_done = 0;
  int sent = 0;
  REQUIRE(test_until_done(send_request, &send_done, &sent) == ncclSuccess);
  int received = 0;
  REQUIRE(test_until_done(recv_request, &done, &received) == ncclSuccess);
  CHECK(send_done == 1);
  CHECK(done == 1);
  CHECK(received == 64);
  CHECK(target.bytes == source.bytes);

  CHECK(roce::api::dereg_mr(fresh.send, source.mh) == ncclSuccess);
  CHECK(roce::api::dereg_mr(fresh.recv, target.mh) == ncclSuccess);
  CHECK(roce::api::dereg_mr(hostile.recv, posted.mh) == ncclSuccess);
  CHECK(roce::api::dereg_mr(hostile.recv, second.mh) == ncclSuccess);
  for (void* comm : {fresh.send, hostile.send}) {
    CHECK(roce::api::close_send(comm) == ncclSuccess);
  }
  for (void* comm : {fresh.recv, hostile.recv}) {
    CHECK(roce::api::close_recv(comm) == ncclSuccess);
  }
  CHECK(roce::api::finalize() == ncclSuccess);
}
