// A listener under hostile or broken peers: silent connections (more than the listener keeps),
// garbage, an oversized frame, a well-formed request with the wrong nonce, and a plugin connect
// whose handle carries the wrong nonce. All are refused or dropped while the real connection
// succeeds and carries verified traffic.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "hang_bound.h"
#include "hostile_peer.h"
#include "net/listen_handle.h"
#include "plugin_driver.h"
#include "test_addresses.h"
#include "test_backend.h"
#include "traffic.h"

using roce::test::test_address;
using roce::test::use_test_devices;
using roce::test::vroce_device_list;

using namespace roce::test;

TEST_CASE("silent, garbage and wrong-nonce connections are refused while the real one succeeds",
          "[fabric][connect]") {
  use_test_devices({"pca", "pcb"});
  PluginDriver plugin(plugin_path_from_env(), Api::V8);
  REQUIRE(plugin.init() == ncclSuccess);
  const int a = plugin.find_device("pca");
  const int b = plugin.find_device("pcb");
  REQUIRE(a >= 0);
  REQUIRE(b >= 0);
  Handle handle;
  void* listen_comm = nullptr;
  REQUIRE(plugin.listen(b, &handle, &listen_comm) == ncclSuccess);
  const roce::net::ListenHandle listen = decode_handle(handle);
  reset_warn_count();

  OwnedFds hostiles;
  // More silent connections than the listener keeps pending.
  for (int i = 0; i < 200; ++i) {
    const int fd = raw_connect(listen.address);
    REQUIRE(fd >= 0);
    hostiles.fds.push_back(fd);
  }
  // Garbage that is not a frame, and a frame announcing far more than a handshake message.
  int garbage = raw_connect(listen.address);
  REQUIRE(garbage >= 0);
  hostiles.fds.push_back(garbage);
  const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  send_all(garbage, junk, sizeof junk);
  int oversized = raw_connect(listen.address);
  REQUIRE(oversized >= 0);
  hostiles.fds.push_back(oversized);
  const uint8_t huge[4] = {0xff, 0xff, 0xff, 0x7f};
  send_all(oversized, huge, 4);
  // A well-formed request carrying the wrong nonce.
  int wrong = raw_connect(listen.address);
  REQUIRE(wrong >= 0);
  hostiles.fds.push_back(wrong);
  send_all(wrong, framed(connect_request_bytes(listen.nonce ^ 0x5a5a)));

  // The plugin itself, given a handle whose nonce was tampered with, is refused.
  Handle tampered = handle;
  roce::net::ListenHandle bad = listen;
  bad.nonce ^= 1;
  roce::net::encode_listen_handle(
      bad, std::span<uint8_t>(reinterpret_cast<uint8_t*>(tampered.data()), tampered.size()));
  void* tampered_comm = nullptr;
  ncclResult_t tampered_result = ncclSuccess;
  std::atomic<bool> tampered_finished{false};
  std::thread tampered_connect([&] {
    tampered_result = connect_until_ready(plugin, a, &tampered, &tampered_comm, kHangBoundMs);
    tampered_finished = true;
  });

  // Meanwhile the real connection, accepted by the same polling that refuses the rest.
  void* send_comm = nullptr;
  void* recv_comm = nullptr;
  ncclResult_t accept_result = ncclInternalError;
  std::thread acceptor(
      [&] { accept_result = accept_until_ready(plugin, listen_comm, &recv_comm, kHangBoundMs); });
  ncclResult_t connect_result = connect_until_ready(plugin, a, &handle, &send_comm, kHangBoundMs);
  acceptor.join();
  REQUIRE(connect_result == ncclSuccess);
  REQUIRE(accept_result == ncclSuccess);
  // Keep polling the listener until the tampered attempt has its answer.
  std::atomic<bool> tampered_done{false};
  const auto deadline = std::chrono::steady_clock::now() + kHangBound;
  while (!tampered_done && std::chrono::steady_clock::now() < deadline) {
    void* extra = nullptr;
    REQUIRE(plugin.accept(listen_comm, &extra) == ncclSuccess);
    CHECK(extra == nullptr);
    tampered_done = tampered_finished.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  tampered_connect.join();
  CHECK(tampered_result != ncclSuccess);
  CHECK(tampered_comm == nullptr);

  PlanShape shape;
  shape.groups = 30;
  shape.max_single = 64 << 10;
  TrafficOptions options;
  options.close_with_requests_in_flight = false;
  TrafficResult sent;
  std::thread sender([&] { sent = run_sender(plugin, send_comm, 5, shape, options); });
  TrafficResult received = run_receiver(plugin, recv_comm, 5, shape, options);
  sender.join();
  INFO("sender: " << sent.error << "; receiver: " << received.error);
  CHECK(sent.ok);
  CHECK(received.ok);

  bool nonce_logged = false;
  bool garbage_logged = false;
  for (const auto& line : warn_lines()) {
    nonce_logged = nonce_logged || line.find("nonce") != std::string::npos;
    garbage_logged = garbage_logged || line.find("refused") != std::string::npos ||
                     line.find("dropped") != std::string::npos;
  }
  CHECK(nonce_logged);
  CHECK(garbage_logged);
  CHECK(plugin.close_listen(listen_comm) == ncclSuccess);
}
