// --vdevice's per-member port counters: finding a device's port, reading the 4-byte-word
// counters as bytes, the difference over a run, and the allgather line's round trip.
#include "member_traffic.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

using namespace roce::bench;
namespace fs = std::filesystem;

namespace {

struct TempTree {
  fs::path root;
  TempTree() {
    char pattern[] = "/tmp/rb-member-traffic.XXXXXX";
    root = mkdtemp(pattern);
  }
  ~TempTree() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  void counter(const std::string& dev, int port, const std::string& name, const std::string& v) {
    const fs::path dir =
        root / "class/infiniband" / dev / "ports" / std::to_string(port) / "counters";
    fs::create_directories(dir);
    std::ofstream(dir / name) << v;
  }
};

}  // namespace

TEST_CASE("a member's port counters are found under its one port and read as bytes") {
  TempTree tree;
  tree.counter("pfa", 1, "port_xmit_data", "250\n");
  tree.counter("pfa", 1, "port_rcv_data", "10\n");
  const std::string dir = port_counters_dir(tree.root.string(), "pfa");
  CHECK(dir == (tree.root / "class/infiniband/pfa/ports/1/counters").string());
  const PortTraffic before = read_port_traffic(dir);
  CHECK(before.sent_bytes == 1000u);
  CHECK(before.received_bytes == 40u);
  tree.counter("pfa", 1, "port_xmit_data", "1250\n");
  tree.counter("pfa", 1, "port_rcv_data", "nonsense\n");
  const PortTraffic delta = traffic_delta(before, read_port_traffic(dir));
  CHECK(delta.sent_bytes == 4000u);
  CHECK_FALSE(delta.received_bytes);

  // No such device, or a device with two ports: which port a plugin device uses is not known.
  CHECK(port_counters_dir(tree.root.string(), "pfb").empty());
  tree.counter("two", 1, "port_xmit_data", "1");
  tree.counter("two", 2, "port_xmit_data", "1");
  CHECK(port_counters_dir(tree.root.string(), "two").empty());
  CHECK_FALSE(read_port_traffic("").sent_bytes);
}

TEST_CASE("a counter that went down counts from 0") {
  const PortTraffic delta = traffic_delta({100, 100}, {40, 140});
  CHECK(delta.sent_bytes == 40u);
  CHECK(delta.received_bytes == 40u);
}

TEST_CASE("a rank's member traffic goes through the allgather line and is described") {
  const std::vector<MemberTraffic> mine = {{1, "rbd2", {268435456, 1048576}},
                                           {1, "rbd3", {std::nullopt, 0}}};
  const std::string line = encode_member_traffic(mine);
  CHECK(line == "rbd2 268435456 1048576;rbd3 - 0");
  const auto back = decode_member_traffic(1, line);
  REQUIRE(back.size() == 2);
  CHECK(back[0].rank == 1);
  CHECK(back[0].device == "rbd2");
  CHECK(back[0].traffic.sent_bytes == 268435456u);
  CHECK_FALSE(back[1].traffic.sent_bytes);
  CHECK(back[1].traffic.received_bytes == 0u);
  CHECK(decode_member_traffic(0, "").empty());
  CHECK(describe_member_traffic(back) ==
        "rank 1: rbd2 sent 268.4 MB, received 1.0 MB; rbd3 sent ? (no counter), received 0.0 MB");
}
