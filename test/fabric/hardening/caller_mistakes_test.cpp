// Caller mistakes through the exported tables: NULL and stale comms, requests and memory
// handles, sizes beyond the registered region, deregMr with a receive in flight, double close
// and double deregMr, n > maxRecvs, negative sizes. Each must return an error code with one WARN
// naming the mistake, never crash, and leave the plugin usable (a fresh connection carries
// verified traffic afterwards). docs/reliability.md says which of these NCCL's contract leaves
// undefined and how far the plugin checks them.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "hang_bound.h"
#include "hardening_support.h"
#include "test_addresses.h"
#include "test_backend.h"

using roce::test::test_address;
using roce::test::use_test_devices;
using roce::test::vroce_device_list;

using namespace roce::test;

namespace {

// isend is checked against its memory handle when it is matched to a clear-to-send, so the
// receiver posts first and the send is retried (as NCCL does) until the plugin posts or refuses.
ncclResult_t isend_once_cleared(PluginDriver& p, void* comm, void* data, size_t size, int tag,
                                void* mh, void** request) {
  const auto deadline = std::chrono::steady_clock::now() + kHangBound;
  ncclResult_t r = ncclSuccess;
  do {
    r = p.isend(comm, data, size, tag, mh, request);
  } while (r == ncclSuccess && *request == nullptr && std::chrono::steady_clock::now() < deadline);
  return r;
}

// Tests a request until it completes, fails, or the hang bound passes.
ncclResult_t test_until_done(PluginDriver& p, void* request, int* done) {
  const auto deadline = std::chrono::steady_clock::now() + kHangBound;
  ncclResult_t r = ncclSuccess;
  *done = 0;
  while (r == ncclSuccess && !*done && std::chrono::steady_clock::now() < deadline) {
    int size = 0;
    r = p.test(request, done, &size);
  }
  return r;
}

bool last_warn_has(const std::string& text) {
  const auto lines = warn_lines();
  return !lines.empty() && lines.back().find(text) != std::string::npos;
}

// One connected pair on two in-process devices of the v8 table (int sizes, so negative sizes
// can be passed at all).
struct Pair {
  PluginDriver plugin{plugin_path_from_env(), Api::V8};
  CommPair comms;
  Pair() {
    use_test_devices({"hda", "hdb"});
    REQUIRE(plugin.init() == ncclSuccess);
    const int a = require_device(plugin, "hda");
    const int b = require_device(plugin, "hdb");
    comms = open_pairs(plugin, a, b, 1)[0];
  }
};

void check_still_usable(Pair& pair, uint64_t seed) {
  const int a = require_device(pair.plugin, "hda");
  const int b = require_device(pair.plugin, "hdb");
  const auto fresh = open_pairs(pair.plugin, a, b, 1);
  PlanShape shape;
  shape.groups = 20;
  shape.max_single = 64 << 10;
  TrafficOptions options;
  options.idle = nap;
  const auto runs = run_pairs(pair.plugin, fresh, seed, shape, options);
  INFO("sender: " << runs[0].sent.error << "; receiver: " << runs[0].received.error);
  CHECK(runs[0].sent.ok);
  CHECK(runs[0].received.ok);
}

}  // namespace

TEST_CASE("NULL comms, requests, handles and arrays are refused, naming the argument",
          "[hardening][mistakes][quick]") {
  Pair pair;
  auto& p = pair.plugin;
  std::vector<uint8_t> buffer(4096);
  void* mh = nullptr;
  REQUIRE(p.reg_mr(pair.comms.send, buffer.data(), buffer.size(), NCCL_PTR_HOST, &mh) ==
          ncclSuccess);
  void* request = nullptr;
  reset_warn_count();
  CHECK(p.isend(nullptr, buffer.data(), 8, 0, mh, &request) == ncclInvalidArgument);
  CHECK(last_warn_has("sendComm is NULL"));
  CHECK(p.isend(pair.comms.send, buffer.data(), 8, 0, nullptr, &request) == ncclInvalidArgument);
  CHECK(last_warn_has("mhandle is NULL"));
  void* data[1] = {buffer.data()};
  size_t sizes[1] = {8};
  int tags[1] = {0};
  void* mhs[1] = {nullptr};
  CHECK(p.irecv(nullptr, 1, data, sizes, tags, mhs, &request) == ncclInvalidArgument);
  CHECK(last_warn_has("recvComm is NULL"));
  CHECK(p.irecv(pair.comms.recv, 1, data, sizes, tags, mhs, &request) == ncclInvalidArgument);
  CHECK(last_warn_has("mhandles[0] is NULL"));
  CHECK(p.irecv(pair.comms.recv, 1, nullptr, sizes, tags, mhs, &request) == ncclInvalidArgument);
  CHECK(last_warn_has("data array is NULL"));
  int done = 0;
  CHECK(p.test(nullptr, &done, nullptr) == ncclInvalidArgument);
  CHECK(last_warn_has("request is NULL"));
  void* other = nullptr;
  CHECK(p.reg_mr(nullptr, buffer.data(), buffer.size(), NCCL_PTR_HOST, &other) ==
        ncclInvalidArgument);
  CHECK(p.dereg_mr(pair.comms.send, nullptr) == ncclInvalidArgument);
  CHECK(p.close_send(nullptr) == ncclInvalidArgument);
  CHECK(p.close_recv(nullptr) == ncclInvalidArgument);
  CHECK(p.close_listen(nullptr) == ncclInvalidArgument);
  CHECK(request == nullptr);
  CHECK(p.dereg_mr(pair.comms.send, mh) == ncclSuccess);
  CHECK(p.close_send(pair.comms.send) == ncclSuccess);
  CHECK(p.close_recv(pair.comms.recv) == ncclSuccess);
  check_still_usable(pair, 71);
}

TEST_CASE("a comm of the wrong kind, closed comms, stale requests and stale handles are refused",
          "[hardening][mistakes][quick]") {
  Pair pair;
  auto& p = pair.plugin;
  std::vector<uint8_t> buffer(4096);
  void* mh = nullptr;
  REQUIRE(p.reg_mr(pair.comms.send, buffer.data(), buffer.size(), NCCL_PTR_HOST, &mh) ==
          ncclSuccess);
  reset_warn_count();
  void* request = nullptr;
  // A recv comm where a send comm belongs, and the reverse.
  CHECK(p.isend(pair.comms.recv, buffer.data(), 8, 0, mh, &request) == ncclInvalidArgument);
  CHECK(last_warn_has("not a live RoCE send comm"));
  CHECK(p.close_recv(pair.comms.send) == ncclInvalidArgument);
  CHECK(last_warn_has("not a live RoCE recv comm"));
  // A memory handle deregistered twice, then used for a send.
  CHECK(p.dereg_mr(pair.comms.send, mh) == ncclSuccess);
  CHECK(p.dereg_mr(pair.comms.send, mh) == ncclInvalidArgument);
  CHECK(last_warn_has("not a live RoCE memory handle"));
  {
    // The receiver clears the send, which then meets the stale handle.
    std::vector<uint8_t> rbuf(4096);
    void* rmh = nullptr;
    REQUIRE(p.reg_mr(pair.comms.recv, rbuf.data(), rbuf.size(), NCCL_PTR_HOST, &rmh) ==
            ncclSuccess);
    void* rdata[1] = {rbuf.data()};
    size_t rsizes[1] = {rbuf.size()};
    int rtags[1] = {0};
    void* rmhs[1] = {rmh};
    void* rreq = nullptr;
    REQUIRE(p.irecv(pair.comms.recv, 1, rdata, rsizes, rtags, rmhs, &rreq) == ncclSuccess);
    REQUIRE(rreq != nullptr);
    CHECK(isend_once_cleared(p, pair.comms.send, buffer.data(), 8, 0, mh, &request) ==
          ncclInvalidArgument);
    CHECK(last_warn_has("not covered by its memory handle"));
    CHECK(request == nullptr);
    CHECK(p.dereg_mr(pair.comms.recv, rmh) == ncclSuccess);
  }
  // Closed twice, then used: the closed comm's address still reads as "not live".
  void* send = pair.comms.send;
  void* recv = pair.comms.recv;
  CHECK(p.close_send(send) == ncclSuccess);
  CHECK(p.close_recv(recv) == ncclSuccess);
  CHECK(p.close_send(send) == ncclInvalidArgument);
  CHECK(last_warn_has("not a live RoCE send comm"));
  CHECK(p.close_recv(recv) == ncclInvalidArgument);
  CHECK(p.isend(send, buffer.data(), 8, 0, mh, &request) == ncclInvalidArgument);
  void* data[1] = {buffer.data()};
  size_t sizes[1] = {8};
  int tags[1] = {0};
  void* mhs[1] = {mh};
  CHECK(p.irecv(recv, 1, data, sizes, tags, mhs, &request) == ncclInvalidArgument);
  void* other = nullptr;
  CHECK(p.reg_mr(send, buffer.data(), buffer.size(), NCCL_PTR_HOST, &other) == ncclInvalidArgument);
  CHECK(other == nullptr);
  check_still_usable(pair, 72);
}

TEST_CASE("a request tested after it completed, or after its comm closed, is refused",
          "[hardening][mistakes][quick]") {
  Pair pair;
  auto& p = pair.plugin;
  std::vector<uint8_t> sbuf(4096, 0x11);
  std::vector<uint8_t> rbuf(4096, 0);
  void* smh = nullptr;
  void* rmh = nullptr;
  REQUIRE(p.reg_mr(pair.comms.send, sbuf.data(), sbuf.size(), NCCL_PTR_HOST, &smh) == ncclSuccess);
  REQUIRE(p.reg_mr(pair.comms.recv, rbuf.data(), rbuf.size(), NCCL_PTR_HOST, &rmh) == ncclSuccess);
  void* data[1] = {rbuf.data()};
  size_t sizes[1] = {4096};
  int tags[1] = {5};
  void* mhs[1] = {rmh};
  void* rreq = nullptr;
  REQUIRE(p.irecv(pair.comms.recv, 1, data, sizes, tags, mhs, &rreq) == ncclSuccess);
  REQUIRE(rreq != nullptr);
  void* sreq = nullptr;
  REQUIRE(isend_once_cleared(p, pair.comms.send, sbuf.data(), 4096, 5, smh, &sreq) == ncclSuccess);
  REQUIRE(sreq != nullptr);
  int sdone = 0;
  int rdone = 0;
  REQUIRE(test_until_done(p, sreq, &sdone) == ncclSuccess);
  REQUIRE(test_until_done(p, rreq, &rdone) == ncclSuccess);
  REQUIRE(sdone);
  REQUIRE(rdone);
  CHECK(rbuf == sbuf);
  reset_warn_count();
  int done = 0;
  CHECK(p.test(sreq, &done, nullptr) == ncclInvalidArgument);
  CHECK(last_warn_has("not a request in flight"));
  // A receive left in flight when its comm closes: testing it afterwards is refused.
  void* stale = nullptr;
  REQUIRE(p.irecv(pair.comms.recv, 1, data, sizes, tags, mhs, &stale) == ncclSuccess);
  REQUIRE(stale != nullptr);
  CHECK(p.dereg_mr(pair.comms.recv, rmh) == ncclSuccess);
  CHECK(p.close_recv(pair.comms.recv) == ncclSuccess);
  CHECK(p.test(stale, &done, nullptr) == ncclInvalidArgument);
  CHECK(last_warn_has("not a request in flight"));
  CHECK(p.dereg_mr(pair.comms.send, smh) == ncclSuccess);
  CHECK(p.close_send(pair.comms.send) == ncclSuccess);
  check_still_usable(pair, 73);
}

TEST_CASE("sizes beyond the registered region, n > maxRecvs and negative sizes are refused",
          "[hardening][mistakes][quick]") {
  Pair pair;
  auto& p = pair.plugin;
  // Two pages: the region registered is exactly the allocation, page-aligned.
  auto* raw = static_cast<uint8_t*>(std::aligned_alloc(4096, 8192));
  REQUIRE(raw != nullptr);
  void* smh = nullptr;
  void* rmh = nullptr;
  REQUIRE(p.reg_mr(pair.comms.send, raw, 4096, NCCL_PTR_HOST, &smh) == ncclSuccess);
  REQUIRE(p.reg_mr(pair.comms.recv, raw + 4096, 4096, NCCL_PTR_HOST, &rmh) == ncclSuccess);
  reset_warn_count();
  void* request = nullptr;
  void* data[9];
  size_t sizes[9];
  int tags[9];
  void* mhs[9];
  for (int i = 0; i < 9; ++i) {
    data[i] = raw + 4096;
    sizes[i] = 16;
    tags[i] = i;
    mhs[i] = rmh;
  }
  // A receive running past its region (one byte beyond the page).
  sizes[0] = 4097;
  CHECK(p.irecv(pair.comms.recv, 1, data, sizes, tags, mhs, &request) == ncclInvalidArgument);
  CHECK(request == nullptr);
  CHECK(warn_count() == 1);
  sizes[0] = 16;
  // A receive inside another comm's registration (the send side's handle).
  mhs[0] = smh;
  CHECK(p.irecv(pair.comms.recv, 1, data, sizes, tags, mhs, &request) == ncclInvalidArgument);
  mhs[0] = rmh;
  // A refused receive gives back the request slot it took: more refusals than the comm has
  // slots (NCCL_NET_MAX_REQUESTS), the bad buffer last in a multi-receive, and the valid
  // receive below still gets a request.
  sizes[1] = 4097;
  for (int i = 0; i < NCCL_NET_MAX_REQUESTS + 2; ++i) {
    CHECK(p.irecv(pair.comms.recv, 2, data, sizes, tags, mhs, &request) == ncclInvalidArgument);
    CHECK(request == nullptr);
  }
  CHECK(last_warn_has("irecv buffer 1 [0x"));
  sizes[1] = 16;
  reset_warn_count();
  // n outside 1..maxRecvs.
  CHECK(p.irecv(pair.comms.recv, 9, data, sizes, tags, mhs, &request) == ncclInvalidArgument);
  CHECK(last_warn_has("n 9 is outside 1..maxRecvs"));
  CHECK(p.irecv(pair.comms.recv, 0, data, sizes, tags, mhs, &request) == ncclInvalidArgument);
  CHECK(p.irecv(pair.comms.recv, -1, data, sizes, tags, mhs, &request) == ncclInvalidArgument);
  // A send running past its region, once a receive has cleared it.
  void* cleared = nullptr;
  sizes[0] = 4096;
  REQUIRE(p.irecv(pair.comms.recv, 1, data, sizes, tags, mhs, &cleared) == ncclSuccess);
  REQUIRE(cleared != nullptr);
  sizes[0] = 16;
  CHECK(isend_once_cleared(p, pair.comms.send, raw + 100, 4000, 0, smh, &request) ==
        ncclInvalidArgument);
  CHECK(last_warn_has("not covered by its memory handle"));
  CHECK(request == nullptr);
  // Negative sizes through the v8 table's int arguments (the driver passes size_t; the v8
  // adapter sees the int NCCL would have passed).
  CHECK(p.isend(pair.comms.send, raw, static_cast<size_t>(-5), 0, smh, &request) ==
        ncclInvalidArgument);
  CHECK(last_warn_has("negative"));
  sizes[0] = static_cast<size_t>(-5);
  CHECK(p.irecv(pair.comms.recv, 1, data, sizes, tags, mhs, &request) == ncclInvalidArgument);
  CHECK(last_warn_has("sizes[0] -5 is negative"));
  CHECK(request == nullptr);
  // The bad element of a multi-receive is named.
  sizes[0] = 16;
  sizes[1] = static_cast<size_t>(-7);
  CHECK(p.irecv(pair.comms.recv, 2, data, sizes, tags, mhs, &request) == ncclInvalidArgument);
  CHECK(last_warn_has("sizes[1] -7 is negative"));
  CHECK(request == nullptr);
  // Sizes above the maxP2pBytes getProperties reports (1 GiB), before any buffer is looked at.
  const size_t too_large = (size_t{1} << 30) + 1;
  sizes[1] = too_large;
  CHECK(p.irecv(pair.comms.recv, 2, data, sizes, tags, mhs, &request) == ncclInvalidArgument);
  CHECK(last_warn_has("sizes[1] 1073741825 exceeds maxP2pBytes 1073741824"));
  CHECK(request == nullptr);
  sizes[1] = 16;
  CHECK(p.isend(pair.comms.send, raw, too_large, 0, smh, &request) == ncclInvalidArgument);
  CHECK(last_warn_has("size 1073741825 exceeds maxP2pBytes 1073741824"));
  CHECK(request == nullptr);
  CHECK(p.dereg_mr(pair.comms.send, smh) == ncclSuccess);
  CHECK(p.dereg_mr(pair.comms.recv, rmh) == ncclSuccess);
  CHECK(p.close_send(pair.comms.send) == ncclSuccess);
  CHECK(p.close_recv(pair.comms.recv) == ncclSuccess);
  std::free(raw);
  check_still_usable(pair, 74);
}

TEST_CASE("deregMr with a receive in flight: the comms fail with an error, nothing crashes",
          "[hardening][mistakes][quick]") {
  Pair pair;
  auto& p = pair.plugin;
  std::vector<uint8_t> sbuf(65536, 0x22);
  std::vector<uint8_t> rbuf(65536, 0);
  void* smh = nullptr;
  void* rmh = nullptr;
  REQUIRE(p.reg_mr(pair.comms.send, sbuf.data(), sbuf.size(), NCCL_PTR_HOST, &smh) == ncclSuccess);
  REQUIRE(p.reg_mr(pair.comms.recv, rbuf.data(), rbuf.size(), NCCL_PTR_HOST, &rmh) == ncclSuccess);
  void* data[1] = {rbuf.data()};
  size_t sizes[1] = {rbuf.size()};
  int tags[1] = {1};
  void* mhs[1] = {rmh};
  void* rreq = nullptr;
  REQUIRE(p.irecv(pair.comms.recv, 1, data, sizes, tags, mhs, &rreq) == ncclSuccess);
  REQUIRE(rreq != nullptr);
  // NCCL never does this; the registration goes away under the posted receive.
  CHECK(p.dereg_mr(pair.comms.recv, rmh) == ncclSuccess);
  void* sreq = nullptr;
  REQUIRE(isend_once_cleared(p, pair.comms.send, sbuf.data(), sbuf.size(), 1, smh, &sreq) ==
          ncclSuccess);
  REQUIRE(sreq != nullptr);
  // The write lands on a key that no longer exists: the sender's NIC gets a remote access NAK.
  int sdone = 0;
  const ncclResult_t sres = test_until_done(p, sreq, &sdone);
  CHECK_FALSE(sdone);
  CHECK(sres == ncclRemoteError);
  bool named = false;
  for (const auto& line : warn_lines()) {
    named = named || line.find("IBV_WC_REM_ACCESS_ERR") != std::string::npos;
  }
  CHECK(named);
  CHECK(std::all_of(rbuf.begin(), rbuf.end(), [](uint8_t b) { return b == 0; }));
  CHECK(p.dereg_mr(pair.comms.send, smh) == ncclSuccess);
  CHECK(p.close_send(pair.comms.send) == ncclSuccess);
  CHECK(p.close_recv(pair.comms.recv) == ncclSuccess);
  check_still_usable(pair, 75);
}
