// Splitting messages over the data QPs of a connection.
#include "core/datapath/size_split.h"

#include <catch2/catch.hpp>

using roce::chunk_for_qp;
using roce::first_message_of_qp;
using roce::kChunkAlignment;
using roce::qp_of_message;

TEST_CASE("one QP carries the whole message", "[split]") {
  CHECK(chunk_for_qp(0, 0, 1).length == 0);
  CHECK(chunk_for_qp(12345, 0, 1).length == 12345);
  CHECK(chunk_for_qp(12345, 0, 1).offset == 0);
}

TEST_CASE("chunks over several QPs are 128-byte aligned, disjoint and cover the message",
          "[split]") {
  for (int nqps : {2, 3, 4, 7, 16}) {
    for (size_t size : {size_t{0}, size_t{1}, size_t{127}, size_t{128}, size_t{129}, size_t{1000},
                        size_t{4096}, size_t{65537}, size_t{4} << 20, (size_t{1} << 30) - 3}) {
      size_t covered = 0;
      for (int qp = 0; qp < nqps; ++qp) {
        auto c = chunk_for_qp(size, qp, nqps);
        INFO("size " << size << " nqps " << nqps << " qp " << qp);
        CHECK(c.offset == (c.length == 0 ? c.offset : covered));
        if (c.length > 0) {
          CHECK(c.offset % kChunkAlignment == 0);
          covered += c.length;
        }
        CHECK(c.offset + c.length <= size);
      }
      CHECK(covered == size);
    }
  }
}

TEST_CASE("a small message leaves trailing QPs empty", "[split]") {
  CHECK(chunk_for_qp(200, 0, 4).length == 128);
  CHECK(chunk_for_qp(200, 1, 4).length == 72);
  CHECK(chunk_for_qp(200, 2, 4).length == 0);
  CHECK(chunk_for_qp(200, 3, 4).length == 0);
}

TEST_CASE("first_message_of_qp is the first sequence from 1 that qp_of_message puts on the QP",
          "[split]") {
  for (int nqps : {1, 2, 3, 4, 7, 128}) {
    for (int qp = 0; qp < nqps; ++qp) {
      uint64_t first = 1;
      while (qp_of_message(first, nqps) != qp) {
        ++first;
      }
      INFO("nqps " << nqps << ", qp " << qp);
      CHECK(first_message_of_qp(qp, nqps) == first);
      // The QP's later messages follow every nqps.
      CHECK(qp_of_message(first + static_cast<uint64_t>(nqps), nqps) == qp);
    }
  }
}
