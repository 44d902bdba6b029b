// The listen handle NCCL carries between ranks: fits 128 bytes, round-trips, and refuses bytes
// that are not a handle from this plugin.
#include "net/listen_handle.h"

#include <catch2/catch.hpp>
#include <set>

#include "result_checks.h"

namespace {

using roce::net::ListenHandle;

ListenHandle sample(const char* address_text) {
  ListenHandle handle;
  handle.address = roce::test::value_of(roce::net::SocketAddress::parse(address_text));
  handle.nonce = 0x0123456789abcdefULL;
  return handle;
}

std::array<uint8_t, NCCL_NET_HANDLE_MAXSIZE> encode(const ListenHandle& handle) {
  std::array<uint8_t, NCCL_NET_HANDLE_MAXSIZE> buffer{};
  roce::net::encode_listen_handle(handle, buffer);
  return buffer;
}

std::string error_of(std::span<const uint8_t> bytes) {
  return roce::test::failure_of(roce::net::decode_listen_handle(bytes));
}

}  // namespace

TEST_CASE("a listen handle fits NCCL's 128-byte handle buffer", "[handle]") {
  STATIC_REQUIRE(roce::net::kListenHandleSize <= NCCL_NET_HANDLE_MAXSIZE);
}

TEST_CASE("IPv4 and IPv6 listen handles round-trip with nonce and stage", "[handle]") {
  for (const char* text : {"127.0.7.1:4791", "[fd00::1:2]:65535"}) {
    ListenHandle handle = sample(text);
    handle.stage = 3;
    const auto buffer = encode(handle);
    const roce::Result<ListenHandle> decoded = roce::net::decode_listen_handle(buffer);
    INFO(roce::error_text(decoded));
    REQUIRE(decoded.has_value());
    CHECK(decoded->address == handle.address);
    CHECK(decoded->nonce == handle.nonce);
    CHECK(decoded->stage == 3);
  }
}

TEST_CASE("the encoded handle is little-endian with the magic first", "[handle]") {
  const auto buffer = encode(sample("127.0.7.1:4791"));
  CHECK(buffer[0] == 0x52);  // 'R'
  CHECK(buffer[1] == 0x6f);  // 'o'
  CHECK(buffer[4] == roce::net::kListenHandleVersion);
  CHECK(buffer[5] == 4);
  CHECK(buffer[8] == (4791 & 0xff));
  CHECK(buffer[9] == (4791 >> 8));
  CHECK(buffer[12] == 127);
  CHECK(buffer[15] == 1);
  CHECK(buffer[32] == 0xef);
  CHECK(buffer[39] == 0x01);
}

TEST_CASE("a handle from another program, version or a damaged buffer is refused", "[handle]") {
  const auto good = encode(sample("127.0.7.1:4791"));
  REQUIRE(roce::net::decode_listen_handle(good).has_value());

  CHECK_THAT(error_of(std::span<const uint8_t>(good).first(10)),
             Catch::Contains("10 bytes, at least 48 needed"));

  auto bad = good;
  bad[0] ^= 0xff;
  CHECK_THAT(error_of(bad), Catch::Contains("magic") && Catch::Contains("same NCCL net plugin"));

  bad = good;
  bad[4] = 2;
  CHECK_THAT(error_of(bad), Catch::Contains("format version 2, this plugin reads version 1"));

  bad = good;
  bad[5] = 5;
  CHECK_THAT(error_of(bad), Catch::Contains("address family 5"));

  bad = good;
  bad[8] = 0;
  bad[9] = 0;
  CHECK_THAT(error_of(bad), Catch::Contains("port 0"));

  bad = good;
  for (size_t i = 32; i < 40; ++i) {
    bad[i] = 0;
  }
  CHECK_THAT(error_of(bad), Catch::Contains("nonce 0"));

  for (const size_t reserved : {size_t{7}, size_t{10}, size_t{16}, size_t{28}, size_t{45}}) {
    bad = good;
    bad[reserved] = 1;
    INFO(reserved);
    CHECK_THAT(error_of(bad), Catch::Contains("reserved bytes are not zero"));
  }
}

TEST_CASE("nonces are random and never zero", "[handle]") {
  std::set<uint64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    const roce::Result<uint64_t> nonce = roce::net::random_nonce();
    INFO(roce::error_text(nonce));
    REQUIRE(nonce.has_value());
    CHECK(*nonce != 0);
    seen.insert(*nonce);
  }
  CHECK(seen.size() == 1000);
}
