// The opcode traits table against the IBA header rules, and the opcode chooser.
#include "wire/opcode.h"

#include <catch2/catch.hpp>

using namespace vroce::wire;

TEST_CASE("opcode: every RC opcode and CNP is known, everything else is not", "[wire][opcode]") {
  int known = 0;
  for (int v = 0; v < 256; ++v) {
    const auto& t = opcode_traits(static_cast<std::uint8_t>(v));
    const bool expect = (v <= 0x14) || v == 0x16 || v == 0x17 || v == 0x81;
    CHECK(t.known() == expect);
    if (t.known()) {
      ++known;
      CHECK(t.name != "UNKNOWN");
    } else {
      CHECK(t.name == "UNKNOWN");
      CHECK(t.headers == 0);
    }
  }
  CHECK(known == 24);
  CHECK(opcode_name(0x24) == "UNKNOWN");  // UC SEND ONLY: not RC
  CHECK(opcode_name(0x0A) == "RC_RDMA_WRITE_ONLY");
}

TEST_CASE("opcode: extension headers follow the IBA rules", "[wire][opcode]") {
  for (int v = 0; v < 256; ++v) {
    const auto& t = opcode_traits(static_cast<std::uint8_t>(v));
    if (!t.known()) {
      continue;
    }
    INFO("opcode " << t.name);
    const bool write_or_read_start =
        (t.kind == OpKind::Write && t.starts_message()) || t.kind == OpKind::ReadRequest;
    CHECK(t.has(kHasReth) == write_or_read_start);
    const bool imm = v == 0x03 || v == 0x05 || v == 0x09 || v == 0x0B;
    CHECK(t.has(kHasImmDt) == imm);
    const bool aeth = t.kind == OpKind::Acknowledge || t.kind == OpKind::AtomicAcknowledge ||
                      (t.kind == OpKind::ReadResponse && t.segment != Segment::Middle);
    CHECK(t.has(kHasAeth) == aeth);
    CHECK(t.has(kHasAtomicEth) == (t.kind == OpKind::Atomic));
    CHECK(t.has(kHasAtomicAckEth) == (t.kind == OpKind::AtomicAcknowledge));
    CHECK(t.has(kHasIeth) == (v == 0x16 || v == 0x17));
    CHECK(t.has_payload ==
          (t.kind == OpKind::Send || t.kind == OpKind::Write || t.kind == OpKind::ReadResponse));
    CHECK(t.consumes_rwqe == (t.kind == OpKind::Send || v == 0x09 || v == 0x0B));
    CHECK((t.direction == Direction::Response) ==
          (t.kind == OpKind::ReadResponse || t.kind == OpKind::Acknowledge ||
           t.kind == OpKind::AtomicAcknowledge));
  }
  CHECK(opcode_traits(Opcode::Cnp).header_bytes == kCnpReservedSize);
  CHECK(opcode_traits(Opcode::Cnp).direction == Direction::Notification);
  CHECK(header_size(opcode_traits(Opcode::WriteOnlyImm)) == 32);
  CHECK(header_size(opcode_traits(Opcode::CompareSwap)) == 40);
  CHECK(header_size(opcode_traits(Opcode::ReadResponseMiddle)) == 12);
}

TEST_CASE("opcode: segments of every message kind", "[wire][opcode]") {
  const Segment segs[] = {Segment::First, Segment::Middle, Segment::Last, Segment::Only};
  struct Row {
    MessageKind kind;
    Opcode want[4];
  };
  const Row rows[] = {
      {MessageKind::Send,
       {Opcode::SendFirst, Opcode::SendMiddle, Opcode::SendLast, Opcode::SendOnly}},
      {MessageKind::SendWithImm,
       {Opcode::SendFirst, Opcode::SendMiddle, Opcode::SendLastImm, Opcode::SendOnlyImm}},
      {MessageKind::SendWithInv,
       {Opcode::SendFirst, Opcode::SendMiddle, Opcode::SendLastInv, Opcode::SendOnlyInv}},
      {MessageKind::Write,
       {Opcode::WriteFirst, Opcode::WriteMiddle, Opcode::WriteLast, Opcode::WriteOnly}},
      {MessageKind::WriteWithImm,
       {Opcode::WriteFirst, Opcode::WriteMiddle, Opcode::WriteLastImm, Opcode::WriteOnlyImm}},
      {MessageKind::ReadResponse,
       {Opcode::ReadResponseFirst, Opcode::ReadResponseMiddle, Opcode::ReadResponseLast,
        Opcode::ReadResponseOnly}},
  };
  for (const Row& row : rows) {
    for (int i = 0; i < 4; ++i) {
      const auto op = opcode_for(row.kind, segs[i]);
      REQUIRE(op);
      CHECK(*op == row.want[i]);
      CHECK(opcode_traits(*op).segment == segs[i]);
    }
    CHECK_FALSE(opcode_for(row.kind, Segment::None));
  }
}
