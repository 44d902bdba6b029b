// What a CPU poller on another thread may rely on while vroce writes received payload into host
// memory (the plugin's CTS ring works this way): when an acquire load of the last 8 bytes of an
// RDMA WRITE (or of the local buffer of an RDMA READ) shows that operation's sequence, every
// earlier byte of it already holds the new data. Each round writes a fresh pattern at a new
// offset and size (1 to 3 packets), while the poller spins on the last word; the writer waits for
// the poller's verdict before reusing the region, so old and new data never mix legitimately.
// Under ThreadSanitizer the release/acquire pair is what makes the poller's later reads race-free.
#include <arpa/inet.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <string>
#include <thread>

#include "hang_bound.h"
#include "harness.h"
#include "test_addresses.h"
#include "test_environment.h"

using roce::test::test_address;
using roce::test::vroce_device_list;

using namespace vroce_test;
using namespace std::chrono_literals;

void roce_test_environment() {
  setenv("VROCE_DEVICES", vroce_device_list({"pfA", "pfB"}).c_str(), 1);
}

namespace {

constexpr unsigned kRemote =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
constexpr size_t kRegion = 64 * 1024;
constexpr uint64_t kSeqTag = 0x5EC0'0000'0000'0000ull;  // no pattern byte run looks like this
constexpr auto kWait = roce::test::kHangBound;

// Sizes that end in a sequence word: one word, odd multiples of 8 around the 16- and 64-byte
// steps of the copy loop and of glibc's memcpy, one MTU and a bit, and three packets.
constexpr size_t kSizes[] = {8,   16,  24,  40,   56,   64,   72,   96,   120,  128,  136,
                             200, 256, 504, 1000, 2048, 4088, 4096, 4104, 8192, 9000, 12288};

// One round, as the writer announces it to the poller.
struct Round {
  std::atomic<uint64_t> seq{0};      // written last by the writer (release)
  size_t offset = 0;                 // of the operation in the polled buffer, a multiple of 8
  size_t size = 0;                   // bytes, a multiple of 8, the last 8 are the sequence
  std::atomic<uint64_t> verdict{0};  // the poller's answer: seq when checked
  std::atomic<uint64_t> torn{0};     // rounds in which the poller saw the sequence too early
  std::atomic<uint64_t> timeouts{0};
  std::string first_failure;  // written by the poller before its verdict
};

void fill_round(uint8_t* at, size_t size, uint64_t seq) {
  fill_pattern(at, size - 8, seq);
  std::memcpy(at + size - 8, &seq, 8);
}

// Spins on the last word of each announced round with acquire loads, then checks the rest.
void poll_rounds(const uint8_t* buffer, Round& round, uint64_t last_seq) {
  for (uint64_t expected = kSeqTag + 1; expected <= last_seq; ++expected) {
    while (round.seq.load(std::memory_order_acquire) != expected) {
      std::this_thread::yield();
    }
    const uint8_t* at = buffer + round.offset;
    // Mostly a tight loop, to look at the buffer while the copy is under way.
    const auto* word = reinterpret_cast<const uint64_t*>(at + round.size - 8);
    if (!wait_for_word(word, expected, kWait)) {
      round.timeouts.fetch_add(1, std::memory_order_relaxed);
    } else if (int64_t bad = find_mismatch(at, round.size - 8, expected); bad >= 0) {
      if (round.torn.fetch_add(1, std::memory_order_relaxed) == 0) {
        round.first_failure = "sequence " + std::to_string(expected - kSeqTag) + ", size " +
                              std::to_string(round.size) + ": byte " + std::to_string(bad) +
                              " was still old when the last word showed the new sequence";
      }
    }
    round.verdict.store(expected, std::memory_order_release);
  }
}

struct Pair {
  Device a{"pfA"};
  Device b{"pfB"};
  Endpoint ea{a, QpOptions{}};
  Endpoint eb{b, QpOptions{}};
  Pair() {
    ea.connect(eb.info());
    eb.connect(ea.info());
  }
};

enum class Op { Write, Read };

// Runs `rounds` operations from A. For Write, B's region is polled; for Read, A's local buffer
// (the READ response lands there through the scatter path). Returns the Round with the counts.
void run_rounds(Op op, uint64_t rounds, Round& round) {
  Pair pair;
  Buffer a_buf(pair.a.pd, kRegion, kRemote);
  Buffer b_buf(pair.b.pd, kRegion, kRemote);
  Buffer& source = op == Op::Write ? a_buf : b_buf;
  Buffer& landing = op == Op::Write ? b_buf : a_buf;
  const uint64_t last_seq = kSeqTag + rounds;
  std::thread poller(poll_rounds, landing.data, std::ref(round), last_seq);

  uint64_t random = 0x9E3779B97F4A7C15ull;
  for (uint64_t i = 1; i <= rounds; ++i) {
    random ^= random << 13;
    random ^= random >> 7;
    random ^= random << 17;
    const size_t size = kSizes[random % std::size(kSizes)];
    const size_t offset = ((random >> 20) % ((kRegion - size) / 8)) * 8;
    const uint64_t seq = kSeqTag + i;
    fill_round(source.data + offset, size, seq);
    round.offset = offset;
    round.size = size;
    round.seq.store(seq, std::memory_order_release);

    ibv_sge sge = a_buf.sge(offset, size);  // the WRITE's source, the READ's destination
    ibv_send_wr wr{};
    wr.wr_id = i;
    wr.opcode = op == Op::Write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = b_buf.addr() + offset;
    wr.wr.rdma.rkey = b_buf.mr->rkey;
    ibv_send_wr* bad = nullptr;
    REQUIRE(ibv_post_send(pair.ea.qp, &wr, &bad) == 0);
    auto wcs = wait_completions(pair.ea.send_cq, 1, kWait);
    REQUIRE(wcs.size() == 1);
    REQUIRE(wcs[0].status == IBV_WC_SUCCESS);
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (round.verdict.load(std::memory_order_acquire) != seq) {
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      std::this_thread::yield();
    }
  }
  poller.join();
}

uint64_t rounds_to_run() {
  // Enough rounds to hit many sizes and offsets many times; fewer under the sanitizers, whose
  // builds run every memory access through a check.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  return 400;
#else
  return 20000;
#endif
}

}  // namespace

TEST_CASE("RDMA WRITE payload is visible below the last word once the last word is", "[write]") {
  Round round;
  run_rounds(Op::Write, rounds_to_run(), round);
  INFO(round.first_failure);
  CHECK(round.timeouts.load() == 0);
  CHECK(round.torn.load() == 0);
}

TEST_CASE("RDMA READ responses land in the requester's buffer in the same order", "[read]") {
  Round round;
  run_rounds(Op::Read, rounds_to_run() / 2, round);
  INFO(round.first_failure);
  CHECK(round.timeouts.load() == 0);
  CHECK(round.torn.load() == 0);
}
