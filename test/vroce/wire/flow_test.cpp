// FlowAddress from socket addresses as recvmsg/IP_PKTINFO report them.
#include "wire/flow.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <catch2/catch.hpp>
#include <cstring>

using namespace vroce::wire;

namespace {

sockaddr_in v4(const char* ip, std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  REQUIRE(inet_pton(AF_INET, ip, &a.sin_addr) == 1);
  return a;
}

sockaddr_in6 v6(const char* ip, std::uint16_t port) {
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(port);
  REQUIRE(inet_pton(AF_INET6, ip, &a.sin6_addr) == 1);
  return a;
}

const sockaddr& sa(const auto& a) {
  return reinterpret_cast<const sockaddr&>(a);
}

}  // namespace

TEST_CASE("flow: IPv4 socket addresses", "[wire][flow]") {
  const auto src = v4("127.0.0.11", 0xC001);
  const auto dst = v4("127.0.0.12", 4791);
  const auto f = flow_from_sockaddrs(sa(src), sa(dst));
  REQUIRE(f);
  CHECK(f->family == IpFamily::V4);
  CHECK(*f == flow_v4(0x7F00000B, 0x7F00000C, 0xC001, 4791));
}

TEST_CASE("flow: IPv6 socket addresses, and IPv4-mapped ones become IPv4", "[wire][flow]") {
  const auto src = v6("fd00::1", 0xD000);
  const auto dst = v6("fd00::2", 4791);
  const auto f = flow_from_sockaddrs(sa(src), sa(dst));
  REQUIRE(f);
  CHECK(f->family == IpFamily::V6);
  CHECK(f->src_ip[0] == 0xfd);
  CHECK(f->dst_ip[15] == 2);
  CHECK(f->src_port == 0xD000);

  const auto mapped_src = v6("::ffff:127.0.0.11", 0xC001);
  const auto mapped_dst = v6("::ffff:127.0.0.12", 4791);
  const auto m = flow_from_sockaddrs(sa(mapped_src), sa(mapped_dst));
  REQUIRE(m);
  CHECK(*m == flow_v4(0x7F00000B, 0x7F00000C, 0xC001, 4791));
  // A mapped address and a plain IPv4 one are the same packet on the wire.
  const auto plain_dst = v4("127.0.0.12", 4791);
  CHECK(flow_from_sockaddrs(sa(mapped_src), sa(plain_dst)) == m);
}

TEST_CASE("flow: other families and mixed families are refused", "[wire][flow]") {
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  const auto a4 = v4("127.0.0.1", 1);
  const auto a6 = v6("fd00::1", 1);
  CHECK_FALSE(flow_from_sockaddrs(sa(un), sa(a4)));
  CHECK_FALSE(flow_from_sockaddrs(sa(a4), sa(un)));
  CHECK_FALSE(flow_from_sockaddrs(sa(a4), sa(a6)));
}
