// vroce-wire-bench: throughput of the wire codec, printed as tables with a same-run baseline.
//   1. CRC-32 over packet-sized buffers: PCLMULQDQ folding and slicing-by-8, with memcpy of the
//      same bytes as the floor every per-byte pass is compared against.
//   2. Whole packets: build_packet (gather + pad + ICRC) and parse_packet (ICRC verify +
//      headers) for RDMA WRITE payloads of 64 B .. 4 KiB, as packets and payload GB/s.
// Not a test: it never fails on speed. --quick runs each cell briefly (ctest -L bench).
// Rates are per second of this thread's CPU time, so time the scheduler gives to other
// processes on a shared build machine does not count against the code being measured.
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "wire/crc32.h"
#include "wire/icrc.h"
#include "wire/packet.h"

using namespace vroce::wire;

namespace {

std::chrono::duration<double> g_cell_time{0.3};
volatile std::uint32_t g_sink;

double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Runs fn repeatedly for about g_cell_time of CPU time and returns calls per CPU second.
template <typename Fn>
double rate(Fn&& fn) {
  for (int i = 0; i < 100; ++i) {
    fn();  // warm caches and the branch predictor
  }
  std::uint64_t calls = 0;
  const double start = thread_cpu_seconds();
  double now = start;
  while (now - start < g_cell_time.count()) {
    for (int i = 0; i < 256; ++i) {
      fn();
    }
    calls += 256;
    now = thread_cpu_seconds();
  }
  return static_cast<double>(calls) / (now - start);
}

constexpr std::size_t kSizes[] = {64, 256, 1024, 4096};

void crc_table() {
  std::vector<std::uint8_t> src(4096 + 64), dst(4096 + 64);
  for (std::size_t i = 0; i < src.size(); ++i) {
    src[i] = static_cast<std::uint8_t>(i * 131 + 7);
  }
  std::printf("CRC-32 throughput, GB/s (memcpy of the same bytes is the floor)\n");
  std::printf("%8s %10s %10s %10s %10s %14s\n", "bytes", "memcpy", "pclmul", "slicing8", "bitwise",
              "pclmul/slice8");
  for (const std::size_t n : kSizes) {
    const double gb = static_cast<double>(n) / 1e9;
    const double copy = rate([&] {
                          std::memcpy(dst.data(), src.data(), n);
                          g_sink = dst[n - 1];
                        }) *
                        gb;
    double pcl = 0;
    if (crc32_pclmul_supported()) {
      pcl = rate([&] { g_sink = crc32_update_pclmul(kCrc32Init, src.data(), n); }) * gb;
    }
    const double s8 = rate([&] { g_sink = crc32_update_slicing8(kCrc32Init, src.data(), n); }) * gb;
    const double bit = rate([&] { g_sink = crc32_update_bitwise(kCrc32Init, src.data(), n); }) * gb;
    std::printf("%8zu %10.2f %10.2f %10.2f %10.3f %13.1fx\n", n, copy, pcl, s8, bit,
                s8 > 0 ? pcl / s8 : 0.0);
  }
  std::printf("(dispatcher uses: %.*s)\n\n", static_cast<int>(crc32_implementation().size()),
              crc32_implementation().data());
}

void packet_table() {
  const FlowAddress flow = flow_v4(0x7F00000B, 0x7F00000C, 0xC001);
  std::vector<std::uint8_t> payload(kMaxPayload);
  for (std::size_t i = 0; i < payload.size(); ++i) {
    payload[i] = static_cast<std::uint8_t>(i * 17 + 3);
  }
  std::vector<std::uint8_t> out(kMaxPacketSize);
  ParseOptions opts;
  opts.flow = flow;

  std::printf("Packets: RDMA WRITE ONLY (RETH) build and parse, one core\n");
  std::printf("%8s %10s %12s %12s %12s %12s %12s\n", "payload", "memcpy", "build Mpps",
              "build GB/s", "parse Mpps", "parse GB/s", "icrc GB/s");
  for (const std::size_t n : kSizes) {
    PacketHeaders h;
    h.bth.opcode = static_cast<std::uint8_t>(Opcode::WriteOnly);
    h.bth.dest_qp = 0x123;
    h.reth = {0x1000, 0x55, static_cast<std::uint32_t>(n)};
    const ByteSpan piece(payload.data(), n);
    const double gb = static_cast<double>(n) / 1e9;
    const double copy = rate([&] {
                          std::memcpy(out.data() + 28, payload.data(), n);
                          g_sink = out[n];
                        }) *
                        gb;
    const double build =
        rate([&] { g_sink = static_cast<std::uint32_t>(build_packet(h, piece, flow, out).size); });
    const std::size_t size = build_packet(h, piece, flow, out).size;
    const ByteSpan pkt(out.data(), size);
    const double parse = rate(
        [&] { g_sink = static_cast<std::uint32_t>(parse_packet(pkt, opts).view.payload.size()); });
    const double icrc = rate([&] { g_sink = icrc_compute(flow, pkt).value_or(0); }) *
                        static_cast<double>(size) / 1e9;
    std::printf("%8zu %10.2f %12.2f %12.2f %12.2f %12.2f %12.2f\n", n, copy, build / 1e6,
                build * gb, parse / 1e6, parse * gb, icrc);
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--quick") {
      g_cell_time = std::chrono::duration<double>(0.02);
    } else {
      std::fprintf(stderr, "usage: vroce-wire-bench [--quick]\n");
      return 2;
    }
  }
  crc_table();
  packet_table();
  return 0;
}
