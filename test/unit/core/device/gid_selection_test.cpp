// GID selection on synthetic tables shaped like mlx5's: v1/v2 pairs per address (link-local
// first), IPv4-mapped and IPv6 addresses, empty slots, and container views with unknown types.
#include "core/device/gid_selection.h"

#include <arpa/inet.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "result_checks.h"

namespace {

using roce::GidTableEntry;
using roce::GidType;

std::array<uint8_t, 16> gid(const char* text) {
  std::array<uint8_t, 16> bytes{};
  in_addr v4{};
  if (inet_pton(AF_INET, text, &v4) == 1) {
    bytes[10] = 0xff;
    bytes[11] = 0xff;
    std::memcpy(bytes.data() + 12, &v4, 4);
    return bytes;
  }
  in6_addr v6{};
  REQUIRE(inet_pton(AF_INET6, text, &v6) == 1);
  std::memcpy(bytes.data(), &v6, 16);
  return bytes;
}

// mlx5 with one IPv4 and one IPv6 address: 0/1 link-local, 2/3 IPv4, 4/5 IPv6, then empty slots.
std::vector<GidTableEntry> mlx5_table() {
  return {
      {0, gid("fe80::ba59:9fff:fe00:1"), GidType::RoceV1},
      {1, gid("fe80::ba59:9fff:fe00:1"), GidType::RoceV2},
      {2, gid("10.0.0.1"), GidType::RoceV1},
      {3, gid("10.0.0.1"), GidType::RoceV2},
      {4, gid("fd00::1"), GidType::RoceV1},
      {5, gid("fd00::1"), GidType::RoceV2},
      {6, {}, GidType::Unknown},
      {7, {}, GidType::Unknown},
  };
}

roce::GidSelectionPolicy policy(roce::AddressFamily family = roce::AddressFamily::Ipv4,
                                int override_index = -1, std::string range = "") {
  roce::GidSelectionPolicy p;
  p.family = family;
  p.override_index = override_index;
  p.addr_range = std::move(range);
  p.device_name = "vroce0";
  p.port = 1;
  return p;
}

int selected(const std::vector<GidTableEntry>& table, const roce::GidSelectionPolicy& p) {
  const roce::Result<roce::GidSelection> selection = roce::select_gid(table, p);
  INFO(roce::error_text(selection));
  REQUIRE(selection.has_value());
  CHECK(selection->entry.index == selection->index);
  return selection->index;
}

std::string error_of(const std::vector<GidTableEntry>& table, const roce::GidSelectionPolicy& p) {
  return roce::test::failure_of(roce::select_gid(table, p));
}

}  // namespace

TEST_CASE("automatic selection takes the first RoCE v2 IPv4-mapped GID, skipping link-local",
          "[gid]") {
  CHECK(selected(mlx5_table(), policy()) == 3);
}

TEST_CASE("automatic selection with AF_INET6 takes the first global RoCE v2 IPv6 GID", "[gid]") {
  CHECK(selected(mlx5_table(), policy(roce::AddressFamily::Ipv6)) == 5);
}

TEST_CASE("automatic selection honours NCCL_IB_ADDR_RANGE", "[gid]") {
  std::vector<GidTableEntry> table = mlx5_table();
  table.push_back({8, gid("192.168.7.5"), GidType::RoceV1});
  table.push_back({9, gid("192.168.7.5"), GidType::RoceV2});
  CHECK(selected(table, policy(roce::AddressFamily::Ipv4, -1, "192.168.0.0/16")) == 9);
  CHECK(selected(table, policy(roce::AddressFamily::Ipv4, -1, "10.0.0.0/8")) == 3);
  CHECK(selected(table, policy(roce::AddressFamily::Ipv6, -1, "fd00::/8")) == 5);
}

TEST_CASE("the table order decides, not the order of the entries in the snapshot", "[gid]") {
  std::vector<GidTableEntry> table = mlx5_table();
  table.push_back({9, gid("10.0.0.9"), GidType::RoceV2});
  std::swap(table[3], table.back());
  CHECK(selected(table, policy()) == 3);
}

TEST_CASE("a sparse table (ibv_query_gid_table, no empty slots) selects the same way", "[gid]") {
  const std::vector<GidTableEntry> table = {
      {0, gid("fe80::1"), GidType::RoceV1},
      {1, gid("fe80::1"), GidType::RoceV2},
      {4, gid("10.1.2.3"), GidType::RoceV1},
      {5, gid("10.1.2.3"), GidType::RoceV2},
  };
  CHECK(selected(table, policy()) == 5);
  CHECK_THAT(
      error_of(table, policy(roce::AddressFamily::Ipv4, 3)),
      Catch::Contains("names an empty GID slot") && Catch::Contains("use NCCL_IB_GID_INDEX=5"));
}

TEST_CASE("an override naming a RoCE v1 GID is refused, pointing at its RoCE v2 twin", "[gid]") {
  CHECK(error_of(mlx5_table(), policy(roce::AddressFamily::Ipv4, 2)) ==
        "NCCL_IB_GID_INDEX=2 names a RoCE v1 GID (::ffff:10.0.0.1) on vroce0 port 1; RoCE v1 is "
        "not routable over UDP; use NCCL_IB_GID_INDEX=3 (RoCE v2, same address) or unset it");
}

TEST_CASE("an override naming a valid RoCE v2 GID of the family is used as given", "[gid]") {
  CHECK(selected(mlx5_table(), policy(roce::AddressFamily::Ipv4, 3)) == 3);
  CHECK(selected(mlx5_table(), policy(roce::AddressFamily::Ipv6, 5)) == 5);
  // NCCL_IB_ADDR_RANGE limits the automatic choice only, as in NCCL.
  CHECK(selected(mlx5_table(), policy(roce::AddressFamily::Ipv4, 3, "192.168.0.0/16")) == 3);
}

TEST_CASE("an override naming a link-local or other-family RoCE v2 GID is used with a warning",
          "[gid]") {
  // As NCCL: an explicit index is used as given. The warning says what is odd and what to use.
  const std::vector<GidTableEntry> table = mlx5_table();
  const auto used = [&](roce::AddressFamily family, int index) {
    auto selection = roce::select_gid(table, policy(family, index));
    INFO(roce::error_text(selection));
    REQUIRE(selection.has_value());
    CHECK(selection->index == index);
    return selection->warning;
  };
  CHECK_THAT(used(roce::AddressFamily::Ipv4, 1),
             Catch::Contains("names a link-local GID (fe80::ba59:9fff:fe00:1)") &&
                 Catch::Contains("used as given") && Catch::Contains("use NCCL_IB_GID_INDEX=3"));
  CHECK_THAT(used(roce::AddressFamily::Ipv4, 5),
             Catch::Contains("names an IPv6 GID (fd00::1)") &&
                 Catch::Contains("NCCL_IB_ADDR_FAMILY is AF_INET") &&
                 Catch::Contains("use NCCL_IB_GID_INDEX=3"));
  CHECK_THAT(used(roce::AddressFamily::Ipv6, 3),
             Catch::Contains("names an IPv4 GID (::ffff:10.0.0.1)") &&
                 Catch::Contains("use NCCL_IB_GID_INDEX=5"));
  CHECK(used(roce::AddressFamily::Ipv4, 3).empty());
}

TEST_CASE("an override naming an empty or missing entry is refused", "[gid]") {
  const std::vector<GidTableEntry> table = mlx5_table();
  CHECK_THAT(error_of(table, policy(roce::AddressFamily::Ipv4, 6)),
             Catch::Contains("NCCL_IB_GID_INDEX=6 names an empty GID slot on vroce0 port 1") &&
                 Catch::Contains("use NCCL_IB_GID_INDEX=3 (RoCE v2, ::ffff:10.0.0.1)"));
  CHECK_THAT(error_of(table, policy(roce::AddressFamily::Ipv4, 40)),
             Catch::Contains("NCCL_IB_GID_INDEX=40 is past the GID table on vroce0 port 1 "
                             "(indices 0..7)") &&
                 Catch::Contains("use NCCL_IB_GID_INDEX=3"));
  CHECK_THAT(error_of({}, policy(roce::AddressFamily::Ipv4, 0)),
             Catch::Contains("the table is empty") &&
                 Catch::Contains("no RoCE v2 GID of family AF_INET is usable"));
}

TEST_CASE("an override naming an InfiniBand GID is refused", "[gid]") {
  std::vector<GidTableEntry> table = mlx5_table();
  table[3].type = GidType::Ib;
  CHECK_THAT(error_of(table, policy(roce::AddressFamily::Ipv4, 3)),
             Catch::Contains("names an InfiniBand GID"));
}

TEST_CASE("with no RoCE v2 GID the error lists the table and says what to change", "[gid]") {
  SECTION("only RoCE v1 entries") {
    std::vector<GidTableEntry> table = mlx5_table();
    for (GidTableEntry& entry : table) {
      if (entry.type == GidType::RoceV2) {
        entry.type = GidType::RoceV1;
      }
    }
    const std::string error = error_of(table, policy());
    CHECK_THAT(error, Catch::StartsWith("no usable GID on vroce0 port 1: wanted a RoCE v2 GID "
                                        "of family AF_INET"));
    CHECK_THAT(error, Catch::Contains("2 ::ffff:10.0.0.1 (RoCE v1)"));
    CHECK_THAT(error, Catch::Contains("give the port's network interface an IPv4 address"));
  }
  SECTION("only the other family has one") {
    const std::vector<GidTableEntry> table = {
        {0, gid("fe80::1"), GidType::RoceV2},
        {1, gid("fd00::7"), GidType::RoceV2},
    };
    CHECK_THAT(error_of(table, policy()),
               Catch::Contains("set NCCL_IB_ADDR_FAMILY=AF_INET6 to use index 1 (fd00::7)"));
  }
  SECTION("the only candidate is outside NCCL_IB_ADDR_RANGE") {
    CHECK_THAT(error_of(mlx5_table(), policy(roce::AddressFamily::Ipv4, -1, "172.16.0.0/12")),
               Catch::Contains("inside NCCL_IB_ADDR_RANGE=172.16.0.0/12") &&
                   Catch::Contains("index 3 (::ffff:10.0.0.1) is RoCE v2 but outside the range"));
  }
}

TEST_CASE(
    "in a container where GID types read as unknown, automatic selection explains and an "
    "override is honoured",
    "[gid]") {
  std::vector<GidTableEntry> table = mlx5_table();
  for (GidTableEntry& entry : table) {
    entry.type = GidType::Unknown;
  }
  CHECK_THAT(error_of(table, policy()),
             Catch::Contains("the type of index 2, 3 could not be read") &&
                 Catch::Contains("name it with NCCL_IB_GID_INDEX"));

  const auto selection = roce::select_gid(table, policy(roce::AddressFamily::Ipv4, 3));
  REQUIRE(selection.has_value());
  CHECK(selection->index == 3);
  CHECK(selection->type_unknown);
  // A link-local one is used too, with the warning.
  const auto link_local = roce::select_gid(table, policy(roce::AddressFamily::Ipv4, 0));
  REQUIRE(link_local.has_value());
  CHECK_THAT(link_local->warning, Catch::Contains("link-local"));
}

TEST_CASE("a mixed container view uses the known RoCE v2 entry", "[gid]") {
  std::vector<GidTableEntry> table = mlx5_table();
  table[2].type = GidType::Unknown;
  CHECK(selected(table, policy()) == 3);
}

TEST_CASE("RoCE v1 is refused as a policy and a malformed range is reported", "[gid]") {
  roce::GidSelectionPolicy v1 = policy();
  v1.roce_version = 1;
  CHECK_THAT(error_of(mlx5_table(), v1), Catch::Contains("RoCE v2 only"));
  CHECK_THAT(error_of(mlx5_table(), policy(roce::AddressFamily::Ipv4, -1, "10.0.0.0")),
             Catch::Contains("NCCL_IB_ADDR_RANGE=10.0.0.0 is malformed"));
}

TEST_CASE("GIDs print in their IPv6 form and types by name", "[gid]") {
  CHECK(roce::gid_to_string(gid("10.0.0.1")) == "::ffff:10.0.0.1");
  CHECK(roce::gid_to_string(gid("fe80::1")) == "fe80::1");
  CHECK(roce::gid_to_string({}) == "::");
  CHECK(std::string(roce::gid_type_name(GidType::RoceV1)) == "RoCE v1");
  CHECK(std::string(roce::gid_type_name(GidType::RoceV2)) == "RoCE v2");
  CHECK(std::string(roce::gid_type_name(GidType::Unknown)) == "unknown type");
}
