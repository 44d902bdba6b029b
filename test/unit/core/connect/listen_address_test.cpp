// Where the handshake listener binds: the GID's address when it is local, else
// NCCL_SOCKET_IFNAME's interface, else the default route's (net_ib parity F8).
#include "core/connect/listen_address.h"

#include <catch2/catch.hpp>

#include "result_checks.h"

using namespace roce;

namespace {

BindAddress v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  BindAddress out;
  out.bytes[0] = a;
  out.bytes[1] = b;
  out.bytes[2] = c;
  out.bytes[3] = d;
  return out;
}

BindAddress v6_link_local() {
  BindAddress out;
  out.family = AddressFamily::Ipv6;
  out.bytes[0] = 0xfe;
  out.bytes[1] = 0x80;
  out.bytes[15] = 1;
  return out;
}

ListenAddressInputs pod() {
  ListenAddressInputs in;
  in.gid_address = v4(192, 168, 7, 10);  // the host's address, in the GID table
  in.gid_address_is_local = false;
  in.interfaces = {{"lo", v4(127, 0, 0, 1)},
                   {"eth0", v6_link_local()},
                   {"eth0", v4(10, 244, 1, 5)},
                   {"net1", v4(10, 99, 0, 7)}};
  return in;
}

HcaFilter filter(const std::string& text) {
  return roce::test::value_of(parse_hca_filter(text));
}

}  // namespace

TEST_CASE("a GID address of this namespace is the listener's address", "[listen]") {
  ListenAddressInputs in = pod();
  in.gid_address_is_local = true;
  const HcaFilter f = filter("net1");
  in.socket_ifname = &f;
  const auto choice = choose_listen_address(in);
  REQUIRE(choice.has_value());
  CHECK(address_text(choice->address) == "192.168.7.10");
  CHECK(choice->why == "the address of the device's GID");
}

TEST_CASE("a GID address absent from the namespace gives NCCL_SOCKET_IFNAME's interface",
          "[listen]") {
  ListenAddressInputs in = pod();
  in.default_interface = "eth0";
  for (const auto& [text, expected] :
       {std::pair{"net1", "10.99.0.7"}, std::pair{"=eth0", "10.244.1.5"},
        std::pair{"^lo,eth", "10.99.0.7"}, std::pair{"eth", "10.244.1.5"}}) {
    const HcaFilter f = filter(text);
    in.socket_ifname = &f;
    in.socket_ifname_text = text;
    const auto choice = choose_listen_address(in);
    INFO(text << ": " << roce::error_text(choice));
    REQUIRE(choice.has_value());
    CHECK(address_text(choice->address) == expected);  // IPv6 link-local is skipped
    CHECK_THAT(choice->why, Catch::Contains("192.168.7.10 is not an address of this network "
                                            "namespace") &&
                                Catch::Contains(std::string("NCCL_SOCKET_IFNAME=") + text));
  }
}

TEST_CASE("without NCCL_SOCKET_IFNAME the default route's interface is used", "[listen]") {
  ListenAddressInputs in = pod();
  in.default_interface = "eth0";
  const auto choice = choose_listen_address(in);
  REQUIRE(choice.has_value());
  CHECK(address_text(choice->address) == "10.244.1.5");
  CHECK_THAT(choice->why, Catch::Contains("default route is on eth0"));
}

TEST_CASE("no interface to fall back on is an error naming the cause and the fix", "[listen]") {
  ListenAddressInputs in = pod();
  CHECK_THAT(roce::test::failure_of(choose_listen_address(in)),
             Catch::Contains("192.168.7.10") && Catch::Contains("no default route") &&
                 Catch::Contains("lo, eth0, net1") && Catch::Contains("set NCCL_SOCKET_IFNAME"));

  const HcaFilter f = filter("ib");
  in.socket_ifname = &f;
  in.socket_ifname_text = "ib";
  in.default_interface = "eth0";  // not used: NCCL_SOCKET_IFNAME decides when set
  CHECK_THAT(roce::test::failure_of(choose_listen_address(in)),
             Catch::Contains("NCCL_SOCKET_IFNAME=ib selects no interface"));

  in.socket_ifname = nullptr;
  in.default_interface = "wg0";
  CHECK_THAT(roce::test::failure_of(choose_listen_address(in)),
             Catch::Contains("default route's interface wg0 has no usable address"));
}

TEST_CASE("an IPv6 GID prefers the interface's IPv6 address", "[listen]") {
  ListenAddressInputs in = pod();
  in.gid_address.family = AddressFamily::Ipv6;
  in.gid_address.bytes = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9};
  BindAddress global6;
  global6.family = AddressFamily::Ipv6;
  global6.bytes = {0xfd, 0x42, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5};
  in.interfaces.push_back({"eth0", global6});
  in.default_interface = "eth0";
  const auto choice = choose_listen_address(in);
  REQUIRE(choice.has_value());
  CHECK(address_text(choice->address) == "fd42::5");
}

TEST_CASE("addresses of this namespace are local, others are not", "[listen]") {
  CHECK(address_is_local(v4(127, 0, 0, 1)));
  CHECK_FALSE(address_is_local(v4(192, 0, 2, 123)));  // TEST-NET-1, never assigned here
}
