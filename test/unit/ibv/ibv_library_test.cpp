// Loading libibverbs with dlopen/dlvsym.
#include <catch2/catch.hpp>

#include "ibv/library.h"
#include "result_checks.h"

using roce::ibv::Library;
using roce::test::failure_of;
using roce::test::value_of;

TEST_CASE("a missing library is one error naming the path, the loader's reason and the fix",
          "[ibv]") {
  CHECK_THAT(failure_of(Library::open("/nonexistent/libibverbs.so.1")),
             Catch::Contains("cannot load libibverbs from '/nonexistent/libibverbs.so.1'") &&
                 Catch::Contains("No such file or directory") &&
                 Catch::Contains("NCCL_IBVERBS_LIB"));
}

TEST_CASE("a library without the verbs entry points names what is missing", "[ibv]") {
  const std::string what = failure_of(Library::open("libm.so.6"));
  CHECK(what.find("lacks required entry point(s)") != std::string::npos);
  CHECK(what.find("ibv_get_device_list@IBVERBS_1.1") != std::string::npos);
  CHECK(what.find("ibv_event_type_str@IBVERBS_1.1") != std::string::npos);
  CHECK(what.find("libm.so.6") != std::string::npos);
}

TEST_CASE("rdma-core's libibverbs.so.1 binds every required and optional entry point it has",
          "[ibv]") {
  // Debian's libibverbs1 (rdma-core 44) is installed with libibverbs-dev (install-deps.sh).
  const auto lib = value_of(Library::open(""));
  CHECK(lib->requested_path() == "libibverbs.so.1");
  CHECK(lib->resolved_path().find("libibverbs.so.1") != std::string::npos);
  const auto& fn = lib->fn();
  CHECK(fn.get_device_list != nullptr);
  CHECK(fn.query_port_compat != nullptr);
  CHECK(fn.event_type_str != nullptr);
  CHECK(fn.reg_mr_iova2 != nullptr);
  CHECK(fn.reg_dmabuf_mr != nullptr);
  CHECK(fn.query_gid_ex != nullptr);
  CHECK(fn.query_ece != nullptr);
  CHECK(fn.set_ece != nullptr);
  CHECK(fn.wc_status_str != nullptr);
  // ibv_query_port_speed is rdma-core 62+: absent from Debian's 44, and reported as such.
  for (const std::string& missing : lib->missing_optional()) {
    CHECK(missing == "ibv_query_port_speed");
  }
  CHECK((fn.query_port_speed == nullptr) == (lib->missing_optional().size() == 1));
  CHECK(std::string(fn.event_type_str(IBV_EVENT_PORT_ERR)) == "port error");
}
