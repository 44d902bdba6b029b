// Work-request id packing: every field survives the round trip at its limits.
#include "core/datapath/wr_id.h"

#include <catch2/catch.hpp>

using roce::pack_wr_id;
using roce::unpack_wr_id;
using roce::WrKind;

TEST_CASE("wr_id fields round-trip at their limits", "[wrid]") {
  for (auto kind : {WrKind::Recv, WrKind::SendGroup, WrKind::CtsWrite, WrKind::Flush}) {
    for (uint8_t qp : {uint8_t{0}, uint8_t{15}, uint8_t{255}}) {
      for (uint16_t index : {uint16_t{0}, uint16_t{31}, uint16_t{255}, uint16_t{65535}}) {
        for (uint32_t pos : {0u, 1u, 0x7fffffffu, 0xffffffffu}) {
          auto id = unpack_wr_id(pack_wr_id(kind, qp, index, pos));
          CHECK(id.kind == kind);
          CHECK(id.qp == qp);
          CHECK(id.index == index);
          CHECK(id.sq_pos == pos);
        }
      }
    }
  }
}

TEST_CASE("ids that no plugin WR carries decode as invalid", "[wrid]") {
  CHECK(unpack_wr_id(0).kind == WrKind::Invalid);
  CHECK(unpack_wr_id(uint64_t{9} << 24).kind == WrKind::Invalid);
  CHECK(unpack_wr_id(uint64_t{0xff} << 24).kind == WrKind::Invalid);
}

TEST_CASE("the one-field readers agree with unpack_wr_id", "[wrid]") {
  for (auto kind : {WrKind::Recv, WrKind::SendGroup, WrKind::CtsWrite, WrKind::Flush}) {
    const uint64_t id = pack_wr_id(kind, 200, 40000, 0xfedcba98u);
    const auto unpacked = unpack_wr_id(id);
    CHECK(roce::wr_id_is(id, unpacked.kind));
    CHECK(roce::wr_id_qp(id) == unpacked.qp);
    CHECK(roce::wr_id_index(id) == unpacked.index);
    CHECK(roce::wr_id_sq_pos(id) == unpacked.sq_pos);
    CHECK(roce::wr_id_qp(id) == 200);
    CHECK(roce::wr_id_index(id) == 40000);
    CHECK(roce::wr_id_sq_pos(id) == 0xfedcba98u);
  }
  CHECK_FALSE(roce::wr_id_is(pack_wr_id(WrKind::SendGroup, 0, 0), WrKind::Recv));
  CHECK_FALSE(roce::wr_id_is(uint64_t{9} << 24, WrKind::Recv));
}
