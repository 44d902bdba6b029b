// An IPv4 or IPv6 TCP endpoint (address and port) for the bootstrap sockets, convertible to and
// from sockaddr and to the 16-byte form the listen handle carries.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "roce/result.h"
#include "util/config.h"

namespace roce::net {

class SocketAddress {
 public:
  SocketAddress();

  // "127.0.7.1:5000", "[fd00::1]:5000"; without ":port" the port is 0 (bind to any port).
  static Result<SocketAddress> parse(std::string_view text);
  // bytes: IPv4 in the first 4 bytes (rest zero), or the 16 IPv6 bytes.
  static SocketAddress from_bytes(AddressFamily family, const std::array<uint8_t, 16>& bytes,
                                  uint16_t port);
  // Returns std::nullopt for families other than AF_INET/AF_INET6.
  static std::optional<SocketAddress> from_sockaddr(const sockaddr* address, socklen_t length);

  AddressFamily family() const;
  uint16_t port() const;
  std::array<uint8_t, 16> bytes() const;
  const sockaddr* raw() const { return reinterpret_cast<const sockaddr*>(&storage_); }
  socklen_t raw_length() const { return length_; }
  int domain() const { return storage_.ss_family; }

  // "127.0.7.1:5000" or "[fd00::1]:5000".
  std::string to_string() const;

  bool operator==(const SocketAddress& other) const;

 private:
  sockaddr_storage storage_{};
  socklen_t length_ = 0;
};

}  // namespace roce::net
