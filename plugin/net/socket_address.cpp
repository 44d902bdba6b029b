// SocketAddress: text, sockaddr and 16-byte conversions.
#include "net/socket_address.h"

#include <arpa/inet.h>

#include <charconv>
#include <cstring>

namespace roce::net {

SocketAddress::SocketAddress() {
  auto* v4 = reinterpret_cast<sockaddr_in*>(&storage_);
  v4->sin_family = AF_INET;
  length_ = sizeof(sockaddr_in);
}

Result<SocketAddress> SocketAddress::parse(std::string_view text) {
  std::string_view host = text;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) {
      return failure("'" + std::string(text) + "': missing ']' after an IPv6 address");
    }
    host = text.substr(1, close - 1);
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        return failure("'" + std::string(text) + "': expected ':port' after ']'");
      }
      port_text = rest.substr(1);
    }
  } else if (const size_t colon = text.find(':');
             colon != std::string_view::npos &&
             text.find(':', colon + 1) == std::string_view::npos) {
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  unsigned port = 0;
  if (!port_text.empty()) {
    const char* end = port_text.data() + port_text.size();
    const auto [ptr, ec] = std::from_chars(port_text.data(), end, port);
    if (ec != std::errc() || ptr != end || port > 65535) {
      return failure("'" + std::string(text) + "': port '" + std::string(port_text) +
                     "' is not a number in 0..65535");
    }
  }
  const std::string host_text(host);
  std::array<uint8_t, 16> bytes{};
  if (inet_pton(AF_INET, host_text.c_str(), bytes.data()) == 1) {
    return from_bytes(AddressFamily::Ipv4, bytes, static_cast<uint16_t>(port));
  }
  if (inet_pton(AF_INET6, host_text.c_str(), bytes.data()) == 1) {
    return from_bytes(AddressFamily::Ipv6, bytes, static_cast<uint16_t>(port));
  }
  return failure("'" + std::string(text) + "': '" + host_text + "' is not an IPv4 or IPv6 address");
}

SocketAddress SocketAddress::from_bytes(AddressFamily family, const std::array<uint8_t, 16>& bytes,
                                        uint16_t port) {
  SocketAddress address;
  address.storage_ = {};
  if (family == AddressFamily::Ipv4) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&address.storage_);
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    std::memcpy(&v4->sin_addr, bytes.data(), 4);
    address.length_ = sizeof(sockaddr_in);
  } else {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&address.storage_);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    std::memcpy(&v6->sin6_addr, bytes.data(), 16);
    address.length_ = sizeof(sockaddr_in6);
  }
  return address;
}

std::optional<SocketAddress> SocketAddress::from_sockaddr(const sockaddr* address,
                                                          socklen_t length) {
  SocketAddress out;
  if (address->sa_family == AF_INET && length >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    out.storage_ = {};
    std::memcpy(&out.storage_, address, sizeof(sockaddr_in));
    out.length_ = sizeof(sockaddr_in);
    return out;
  }
  if (address->sa_family == AF_INET6 && length >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    out.storage_ = {};
    std::memcpy(&out.storage_, address, sizeof(sockaddr_in6));
    out.length_ = sizeof(sockaddr_in6);
    return out;
  }
  return std::nullopt;
}

AddressFamily SocketAddress::family() const {
  return storage_.ss_family == AF_INET6 ? AddressFamily::Ipv6 : AddressFamily::Ipv4;
}

uint16_t SocketAddress::port() const {
  if (storage_.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
  }
  return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
}

std::array<uint8_t, 16> SocketAddress::bytes() const {
  std::array<uint8_t, 16> out{};
  if (storage_.ss_family == AF_INET6) {
    std::memcpy(out.data(), &reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr, 16);
  } else {
    std::memcpy(out.data(), &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, 4);
  }
  return out;
}

std::string SocketAddress::to_string() const {
  char text[INET6_ADDRSTRLEN] = {};
  const std::array<uint8_t, 16> raw = bytes();
  if (storage_.ss_family == AF_INET6) {
    if (inet_ntop(AF_INET6, raw.data(), text, sizeof(text)) == nullptr) {
      return "[?]:" + std::to_string(port());
    }
    return "[" + std::string(text) + "]:" + std::to_string(port());
  }
  if (inet_ntop(AF_INET, raw.data(), text, sizeof(text)) == nullptr) {
    return "?:" + std::to_string(port());
  }
  return std::string(text) + ":" + std::to_string(port());
}

bool SocketAddress::operator==(const SocketAddress& other) const {
  return family() == other.family() && port() == other.port() && bytes() == other.bytes();
}

}  // namespace roce::net
