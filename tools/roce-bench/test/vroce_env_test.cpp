// The per-rank vroce environment and the raw path's device choice.
#include "vroce_env.h"

#include <catch2/catch.hpp>

#include "errors.h"
#include "raw_endpoint.h"
#include "result_checks.h"

using namespace roce::bench;
using roce::test::failure_of;

TEST_CASE("vroce's embedded default is vroce0..7 on 127.0.0.11..18") {
  const auto d = default_vroce_devices();
  REQUIRE(d.size() == 8);
  CHECK(d[0].name == "vroce0");
  CHECK(d[0].address == "127.0.0.11");
  CHECK(d[7].name == "vroce7");
  CHECK(d[7].address == "127.0.0.18");
}

TEST_CASE("VROCE_DEVICES lists parse, bad entries are named") {
  const auto d = parse_vroce_devices("rb0=127.0.5.1,rb1=veth0");
  REQUIRE(d);
  REQUIRE(d->size() == 2);
  CHECK((*d)[1].address == "veth0");
  CHECK(failure_of(parse_vroce_devices("rb0=127.0.5.1,")).find("''") != std::string::npos);
  CHECK(failure_of(parse_vroce_devices("rb0")).find("expected name=address") != std::string::npos);
  CHECK(failure_of(parse_vroce_devices("=1.2.3.4")).find("expected name=address") !=
        std::string::npos);
  CHECK(failure_of(parse_vroce_devices("a=1,a=2")).find("twice") != std::string::npos);
}

TEST_CASE("each rank gets its own device, named exactly") {
  const auto devices = default_vroce_devices();
  const auto env = rank_environment(devices, 1, 2, "/lib/vroce.so");
  CHECK(env.vroce_devices == "vroce1=127.0.0.12");
  CHECK(env.nccl_ib_hca == "=vroce1");
  CHECK(env.ibverbs_lib == "/lib/vroce.so");
  CHECK_THROWS_AS(rank_environment(devices, 0, 9, "x"), UsageError);
}

TEST_CASE("vdevice: each rank gets its own devices, as the functions of one PCI device") {
  const auto devices = default_vroce_devices();
  const auto first = rank_environment(devices, 0, 2, "/lib/vroce.so", 2);
  CHECK(first.vroce_devices == "vroce0=127.0.0.11,vroce1=127.0.0.12");
  CHECK(first.nccl_ib_hca == "=vroce0,vroce1");
  CHECK(first.pci_functions == "vroce0+vroce1");
  const auto second = rank_environment(devices, 1, 2, "/lib/vroce.so", 2);
  CHECK(second.vroce_devices == "vroce2=127.0.0.13,vroce3=127.0.0.14");
  CHECK(second.nccl_ib_hca == "=vroce2,vroce3");
  CHECK(second.pci_functions == "vroce2+vroce3");
  CHECK(rank_environment(devices, 1, 2, "x").pci_functions.empty());  // one device: no card
  try {
    rank_environment(devices, 0, 2, "x", 5);
    FAIL("10 devices out of 8");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("2 ranks with 5 devices each (--vdevice) need 10") !=
          std::string::npos);
  }
}

TEST_CASE("the raw path takes one device from --hca or a single-entry NCCL_IB_HCA") {
  auto c = choose_raw_device("", nullptr);
  CHECK(c.name.empty());
  c = choose_raw_device("", "=vroce1");
  CHECK(c.name == "vroce1");
  CHECK(c.exact);
  c = choose_raw_device("", "mlx5_0:2");
  CHECK(c.name == "mlx5_0");
  CHECK_FALSE(c.exact);
  CHECK(c.port == 2);
  c = choose_raw_device("rb1", "=vroce0");
  CHECK(c.name == "rb1");
  CHECK(c.exact);
  CHECK_THROWS_AS(choose_raw_device("", "^mlx5_1"), UsageError);
  CHECK_THROWS_AS(choose_raw_device("", "mlx5_0,mlx5_1"), UsageError);
  CHECK_THROWS_AS(choose_raw_device("mlx5_0:x", nullptr), UsageError);
}
