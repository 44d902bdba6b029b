// The profiler event check: balanced, well-formed events pass; the rest name what is wrong.
#include "profiler_check.h"

#include <catch2/catch.hpp>

#include "nccl_net/profiler_net.h"

using namespace roce::bench;

TEST_CASE("profiler events: no events, balanced ones and each kind of fault") {
  ProfilerTally t;
  CHECK(profiler_problem(t, 0).empty());  // events are optional
  t.starts = 10;
  t.stops = 10;
  t.send_starts = 5;
  t.send_bytes = 4096;
  CHECK(profiler_problem(t, 4096).empty());
  CHECK(profiler_problem(t, 8192) == "send events report 4096 bytes, the isends carried 8192");
  t.stops = 9;
  CHECK(profiler_problem(t, 4096) == "10 profiler events started but 9 stopped");
  t.bad = 1;
  t.first_problem = "a stop of an event that was never started, or was stopped already";
  CHECK(profiler_problem(t, 4096).find("1 bad profiler event call(s), the first: a stop") == 0);
}

TEST_CASE("the profiler callback counts starts and stops and refuses a foreign handle") {
  const ncclProfilerCallback_t cb = profiler_callback();
  const ProfilerTally before = profiler_tally();
  ncclProfilerNetIbDescr_v1_t d{};
  d.type = ncclProfileQp;
  d.qp.qpNum = 17;
  d.qp.opcode = 1;
  d.qp.length = 64;
  void* event = nullptr;
  const auto id = static_cast<int64_t>(NCCL_PROFILER_NET_TYPE_IB | NCCL_PROFILER_NET_IB_VER);
  REQUIRE(cb(&event, ncclProfilerNetEventStart, profiler_handle(), id, &d) == ncclSuccess);
  CHECK(event != nullptr);
  REQUIRE(cb(&event, ncclProfilerNetEventStop, nullptr, 0, nullptr) == ncclSuccess);
  ProfilerTally after = profiler_tally();
  CHECK(after.starts == before.starts + 1);
  CHECK(after.stops == before.stops + 1);
  CHECK(after.send_bytes == before.send_bytes + 64);
  CHECK(after.bad == before.bad);
  // A second stop of the same event, and a start with a handle roce-bench never passed.
  cb(&event, ncclProfilerNetEventStop, nullptr, 0, nullptr);
  int foreign = 0;
  cb(&event, ncclProfilerNetEventStart, &foreign, id, &d);
  after = profiler_tally();
  CHECK(after.bad == before.bad + 2);
}
