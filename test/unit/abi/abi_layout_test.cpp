// The ncclNet structs are read by NCCL's loader at fixed offsets: a layout slip would be silent
// memory corruption, so pin sizes and the offsets NCCL's shims read.
#include <catch2/catch.hpp>
#include <cstddef>

#include "nccl_net/nccl_net.h"

TEST_CASE("ncclNet property structs keep NCCL's layout, v6 to v12", "[abi]") {
  STATIC_REQUIRE(sizeof(ncclNetDeviceHandle_v7_t) == 32);
  STATIC_REQUIRE(offsetof(ncclNetProperties_v6_t, maxRecvs) == 44);
  STATIC_REQUIRE(sizeof(ncclNetProperties_v6_t) == 48);
  STATIC_REQUIRE(offsetof(ncclNetProperties_v7_t, netDeviceVersion) == 52);
  STATIC_REQUIRE(sizeof(ncclNetProperties_v7_t) == 56);
  STATIC_REQUIRE(sizeof(ncclNetProperties_v8_t) == 64);
  STATIC_REQUIRE(offsetof(ncclNetProperties_v8_t, netDeviceVersion) == 56);
  STATIC_REQUIRE(offsetof(ncclNetProperties_v9_t, forceFlush) == 32);
  STATIC_REQUIRE(offsetof(ncclNetProperties_v9_t, vProps) == 64);
  STATIC_REQUIRE(offsetof(ncclNetProperties_v9_t, maxP2pBytes) == 88);
  STATIC_REQUIRE(sizeof(ncclNetProperties_v9_t) == 104);
  STATIC_REQUIRE(offsetof(ncclNetProperties_v11_t, maxMultiRequestSize) == 104);
  STATIC_REQUIRE(sizeof(ncclNetProperties_v11_t) == 112);
  STATIC_REQUIRE(sizeof(ncclNetAttr_v11_t) == 44);
  STATIC_REQUIRE(sizeof(ncclNetVDeviceProps_v12_t) == 36);
  STATIC_REQUIRE(offsetof(ncclNetProperties_v12_t, vProps) == 64);
  STATIC_REQUIRE(offsetof(ncclNetProperties_v12_t, maxP2pBytes) == 104);
  STATIC_REQUIRE(offsetof(ncclNetProperties_v12_t, maxMultiRequestSize) == 120);
  STATIC_REQUIRE(offsetof(ncclNetProperties_v12_t, railId) == 124);
  STATIC_REQUIRE(offsetof(ncclNetProperties_v12_t, planeId) == 126);
  STATIC_REQUIRE(sizeof(ncclNetProperties_v12_t) == 128);
}

TEST_CASE("ncclNet function tables have the member count NCCL expects", "[abi]") {
  // name + one pointer per entry point.
  STATIC_REQUIRE(sizeof(ncclNet_v6_t) == 17 * sizeof(void*));
  STATIC_REQUIRE(sizeof(ncclNet_v7_t) == 19 * sizeof(void*));
  STATIC_REQUIRE(sizeof(ncclNet_v8_t) == 19 * sizeof(void*));
  STATIC_REQUIRE(sizeof(ncclNet_v9_t) == 20 * sizeof(void*));
  STATIC_REQUIRE(sizeof(ncclNet_v10_t) == 20 * sizeof(void*));
  STATIC_REQUIRE(sizeof(ncclNet_v11_t) == 22 * sizeof(void*));
  STATIC_REQUIRE(offsetof(ncclNet_v11_t, finalize) == 20 * sizeof(void*));
  STATIC_REQUIRE(sizeof(ncclNet_v12_t) == 22 * sizeof(void*));
  STATIC_REQUIRE(offsetof(ncclNet_v12_t, makeVDevice) == 19 * sizeof(void*));
}
