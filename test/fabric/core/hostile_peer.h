// The raw-socket side of the hostile-peer tests: a TCP client of the plugin's listener that
// writes whatever bytes a test chooses, framed as the handshake frames its messages or not.
// Header-only so that each test binary takes it with the plugin sources it already links.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "net/handshake.h"
#include "net/listen_handle.h"
#include "plugin_driver.h"

namespace roce::test {

// The listener's address and nonce, from the handle listen() filled.
inline roce::net::ListenHandle decode_handle(const Handle& handle) {
  auto decoded = roce::net::decode_listen_handle(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(handle.data()), handle.size()));
  INFO(roce::error_text(decoded));
  REQUIRE(decoded);
  return *decoded;
}

// A blocking TCP connection to the listener; -1 when the kernel refuses one more.
inline int raw_connect(const roce::net::SocketAddress& address) {
  int fd = socket(address.domain(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return -1;
  }
  if (::connect(fd, address.raw(), address.raw_length()) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Writes every byte, or stops quietly where the listener has already dropped the connection.
inline void send_all(int fd, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n <= 0) {
      return;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
}

inline void send_all(int fd, const std::vector<uint8_t>& bytes) {
  send_all(fd, bytes.data(), bytes.size());
}

// `body` behind the handshake's 4-byte little-endian length, which announces `announced` bytes.
inline std::vector<uint8_t> framed(const std::vector<uint8_t>& body, size_t announced) {
  std::vector<uint8_t> out;
  out.reserve(4 + body.size());
  for (int i = 0; i < 4; ++i) {
    out.push_back(static_cast<uint8_t>(announced >> (8 * i)));
  }
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

inline std::vector<uint8_t> framed(const std::vector<uint8_t>& body) {
  return framed(body, body.size());
}

// The encoded connect request of a peer this plugin would accept, but for `nonce`.
inline std::vector<uint8_t> connect_request_bytes(uint64_t nonce) {
  roce::net::ConnectRequest request;
  request.nonce = nonce;
  request.endpoint.plugin_version = roce::net::plugin_version_code();
  request.endpoint.device_name = "intruder";
  request.endpoint.gid[10] = 0xff;
  request.endpoint.gid[11] = 0xff;
  request.endpoint.gid[15] = 9;
  request.endpoint.mtu = 3;
  request.endpoint.qps.push_back({0x123, 7});
  request.cts_ring = {0x1000, 1, 64, 256};
  request.max_recvs = 8;
  auto bytes = roce::net::encode_message(request);
  INFO(roce::error_text(bytes));
  REQUIRE(bytes);
  return *bytes;
}

// Descriptors closed when the test ends, however it ends.
struct OwnedFds {
  std::vector<int> fds;
  OwnedFds() = default;
  OwnedFds(const OwnedFds&) = delete;
  OwnedFds& operator=(const OwnedFds&) = delete;
  ~OwnedFds() { close_all(); }
  void close_all() {
    for (int fd : fds) {
      close(fd);
    }
    fds.clear();
  }
};

}  // namespace roce::test
