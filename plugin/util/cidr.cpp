// CIDR parsing and matching on 16-byte addresses.
#include "util/cidr.h"

#include <arpa/inet.h>

#include <charconv>

namespace roce {

bool is_ipv4_mapped(const Ipv6Bytes& address) {
  for (size_t i = 0; i < 10; ++i) {
    if (address[i] != 0) {
      return false;
    }
  }
  return address[10] == 0xff && address[11] == 0xff;
}

bool Cidr::contains(const Ipv6Bytes& address) const {
  if ((family == AddressFamily::Ipv4) != is_ipv4_mapped(address)) {
    return false;
  }
  const int bits = family == AddressFamily::Ipv4 ? prefix_length + 96 : prefix_length;
  const int whole_bytes = bits / 8;
  for (int i = 0; i < whole_bytes; ++i) {
    if (address[static_cast<size_t>(i)] != network[static_cast<size_t>(i)]) {
      return false;
    }
  }
  const int rest = bits % 8;
  if (rest == 0) {
    return true;
  }
  const auto mask = static_cast<uint8_t>(0xff << (8 - rest));
  const auto index = static_cast<size_t>(whole_bytes);
  return (address[index] & mask) == (network[index] & mask);
}

Result<Cidr> parse_cidr(std::string_view text) {
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) {
    return failure("expected address/prefix-length, for example 10.0.0.0/8 or fd00::/8");
  }
  const std::string address(text.substr(0, slash));
  const std::string_view prefix_text = text.substr(slash + 1);
  Cidr cidr;
  in_addr v4{};
  in6_addr v6{};
  int max_prefix = 0;
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1) {
    cidr.family = AddressFamily::Ipv4;
    cidr.network[10] = 0xff;
    cidr.network[11] = 0xff;
    const auto* bytes = reinterpret_cast<const uint8_t*>(&v4.s_addr);
    for (size_t i = 0; i < 4; ++i) {
      cidr.network[12 + i] = bytes[i];
    }
    max_prefix = 32;
  } else if (inet_pton(AF_INET6, address.c_str(), &v6) == 1) {
    cidr.family = AddressFamily::Ipv6;
    for (size_t i = 0; i < 16; ++i) {
      cidr.network[i] = v6.s6_addr[i];
    }
    max_prefix = 128;
  } else {
    return failure("'" + address + "' is not an IPv4 or IPv6 address");
  }
  int prefix = -1;
  const char* end = prefix_text.data() + prefix_text.size();
  const auto [ptr, ec] = std::from_chars(prefix_text.data(), end, prefix);
  if (prefix_text.empty() || ec != std::errc() || ptr != end || prefix < 0 || prefix > max_prefix) {
    return failure("prefix length '" + std::string(prefix_text) + "' must be a number in 0.." +
                   std::to_string(max_prefix));
  }
  cidr.prefix_length = prefix;
  return cidr;
}

std::string address_to_string(const Ipv6Bytes& address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (is_ipv4_mapped(address)) {
    if (inet_ntop(AF_INET, address.data() + 12, text, sizeof(text)) == nullptr) {
      return "?";
    }
    return text;
  }
  if (inet_ntop(AF_INET6, address.data(), text, sizeof(text)) == nullptr) {
    return "?";
  }
  return text;
}

}  // namespace roce
