// The plugin's libibverbs loader binding vroce's libibverbs.so.1 through NCCL_IBVERBS_LIB.
#include <catch2/catch.hpp>

#include "test_addresses.h"
#include "verbs/context.h"
#include "verbs/device_list.h"
#include "vroce_process.h"

using roce::test::test_address;
using roce::test::vroce_device_list;

using namespace roce;

TEST_CASE("NCCL_IBVERBS_LIB loads vroce and binds every required entry point", "[loader][vroce]") {
  const auto lib = test::load_vroce(vroce_device_list({"pv0"}));
  CHECK(lib->resolved_path() == VROCE_LIBRARY_PATH);
  const ibv::Functions& fn = lib->fn();
  CHECK(fn.get_device_list != nullptr);
  CHECK(fn.open_device != nullptr);
  CHECK(fn.query_port_compat != nullptr);
  CHECK(fn.create_qp != nullptr);
  CHECK(fn.modify_qp != nullptr);
  CHECK(fn.query_qp != nullptr);
  CHECK(fn.event_type_str != nullptr);
  // vroce implements the GID-type query the plugin prefers over sysfs.
  CHECK(fn.query_gid_ex != nullptr);
  UNSCOPED_INFO("optional entry points vroce lacks: " << lib->missing_optional().size());

  verbs::DeviceList list(lib);
  REQUIRE(list.devices().size() == 1);
  const auto context = verbs::Context::open(lib, list.devices()[0]);
  CHECK(context->name() == "pv0");
  CHECK(context->device_attr().phys_port_cnt == 1);
}

TEST_CASE("a NCCL_IBVERBS_LIB that does not exist fails naming it", "[loader][vroce]") {
  test::set_env("NCCL_IBVERBS_LIB", "/nonexistent/pv/libibverbs.so.1");
  const Config config = test::config_from_env();
  CHECK_THAT(
      test::failure_of(ibv::Library::open(config.ibverbs_lib)),
      Catch::Contains("/nonexistent/pv/libibverbs.so.1") && Catch::Contains("NCCL_IBVERBS_LIB"));
}
