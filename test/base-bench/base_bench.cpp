// roce_base_bench: costs of the foundation's hot-ish operations, each next to a same-run
// baseline, printed as a table (label bench; never a timed assertion).
//   - log::enabled() for a filtered record vs one relaxed atomic load (the "cheap" claim);
//   - a filtered ROCE_INFO with arguments (nothing is formatted) vs the same baseline;
//   - an INFO record formatted and handed to an NCCL-style logger;
//   - handshake encode/decode of a 4-QP ConnectRequest vs copying the same bytes;
//   - a request/reply exchange through FramedChannel over loopback vs a raw TCP ping-pong of
//     the same sizes on the same sockets.
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/recycled_blocks.h"
#include "net/handshake.h"
#include "net/socket.h"
#include "util/log.h"

namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int> g_sink{0};
std::atomic<unsigned long> g_level_word{3};
// Results land here so the optimiser keeps every measured call; a plain volatile store costs
// about a cycle, unlike an atomic read-modify-write that would dwarf what is measured.
volatile int g_result = 0;

void null_logger(ncclDebugLogLevel, unsigned long, const char*, int, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  const char* text = va_arg(args, const char*);
  va_end(args);
  g_sink.fetch_add(static_cast<int>(text[0]), std::memory_order_relaxed);
}

template <typename F>
double ns_per_op(long iterations, F&& body) {
  const auto start = Clock::now();
  for (long i = 0; i < iterations; ++i) {
    body(i);
  }
  const std::chrono::duration<double, std::nano> elapsed = Clock::now() - start;
  return elapsed.count() / static_cast<double>(iterations);
}

void row(const char* what, double ns, const char* baseline_name, double baseline_ns) {
  std::printf("| %-52s | %10.1f | %-34s | %10.1f | %6.2fx |\n", what, ns, baseline_name,
              baseline_ns, ns / baseline_ns);
}

roce::net::ConnectRequest sample_request() {
  roce::net::ConnectRequest request;
  request.nonce = 0x1122334455667788ULL;
  request.endpoint.plugin_version = roce::net::plugin_version_code();
  request.endpoint.device_name = "vroce0";
  request.endpoint.gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 7, 1};
  request.endpoint.gid_index = 3;
  request.endpoint.mtu = 5;
  request.endpoint.traffic_class = 106;
  for (uint32_t i = 0; i < 4; ++i) {
    request.endpoint.qps.push_back({0x100 + i, 0x1000 + i});
  }
  request.cts_ring = {0x7f0000001000ULL, 0x1234, 256, 64};
  request.max_recvs = 8;
  return request;
}

bool pump(roce::net::FramedChannel& channel, std::vector<uint8_t>* message) {
  for (long spin = 0; spin < 100000000; ++spin) {
    const roce::net::IoStatus status = channel.receive(message);
    if (status == roce::net::IoStatus::Done) {
      return true;
    }
    if (status == roce::net::IoStatus::Error) {
      return false;
    }
  }
  return false;
}

bool flush(roce::net::FramedChannel& channel) {
  for (long spin = 0; spin < 100000000; ++spin) {
    const roce::net::IoStatus status = channel.flush();
    if (status != roce::net::IoStatus::InProgress) {
      return status == roce::net::IoStatus::Done;
    }
  }
  return false;
}

bool send_all(int fd, const std::vector<uint8_t>& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      return false;
    }
    sent += static_cast<size_t>(n);
  }
  return true;
}

// Spins on MSG_DONTWAIT like the framed channel does, so both rows poll the same way.
bool recv_all(int fd, std::vector<uint8_t>& bytes) {
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::recv(fd, bytes.data() + got, bytes.size() - got, MSG_DONTWAIT);
    if (n == 0) {
      return false;
    }
    if (n > 0) {
      got += static_cast<size_t>(n);
    }
  }
  return true;
}

int loopback_rows() {
  const auto bind_address = roce::net::SocketAddress::parse("127.0.7.30:0");
  auto listener = roce::net::Listener::open(*bind_address);
  if (!listener) {
    std::fprintf(stderr, "bench: %s\n", listener.error().c_str());
    return 1;
  }
  const auto deadline = Clock::now() + std::chrono::minutes(1);
  auto connector = roce::net::Connector::start(listener->address(), deadline);
  roce::net::Socket client;
  roce::net::Socket server;
  roce::net::SocketError socket_error;
  bool client_done = false;
  bool server_done = false;
  while (!(client_done && server_done)) {
    if (!client_done) {
      const auto status = connector->progress(&client, &socket_error);
      if (status == roce::net::IoStatus::Error) {
        std::fprintf(stderr, "bench: %s\n", socket_error.message.c_str());
        return 1;
      }
      client_done = status == roce::net::IoStatus::Done;
    }
    if (!server_done) {
      server_done = listener->accept(&server, &socket_error) == roce::net::IoStatus::Done;
    }
  }
  const int client_fd = client.fd();
  const int server_fd = server.fd();
  roce::net::FramedChannel sender(std::move(client), deadline);
  roce::net::FramedChannel receiver(std::move(server), deadline);
  const std::vector<uint8_t> request = *roce::net::encode_message(sample_request());
  const long kExchanges = 20000;

  // Raw baseline: the same byte counts (frame header included) on the same sockets, echoed by
  // the same thread, so both rows pay identical kernel costs and differ only by our layer.
  std::vector<uint8_t> wire(request.size() + roce::net::FramedChannel::kHeaderSize, 0x5a);
  std::vector<uint8_t> scratch(wire.size());
  const double raw_ns = ns_per_op(kExchanges, [&](long) {
    if (!send_all(client_fd, wire) || !recv_all(server_fd, scratch) ||
        !send_all(server_fd, scratch) || !recv_all(client_fd, scratch)) {
      std::abort();
    }
  });

  const double framed_ns = ns_per_op(kExchanges, [&](long) {
    std::vector<uint8_t> message;
    if (!sender.queue(request) || !flush(sender) || !pump(receiver, &message)) {
      std::abort();
    }
    const auto decoded = roce::net::decode_message(message);
    if (!decoded.ok() || !receiver.queue(message) || !flush(receiver) || !pump(sender, &message)) {
      std::abort();
    }
  });
  row("request there and back, FramedChannel + decode", framed_ns,
      "raw send/recv of the same bytes", raw_ns);
  return 0;
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  setenv("NCCL_DEBUG", "WARN", 1);
  unsetenv("NCCL_DEBUG_SUBSYS");
  roce::log::set_nccl_logger(&null_logger);

  std::printf("| %-52s | %10s | %-34s | %10s | %7s |\n", "operation", "ns/op", "baseline", "ns/op",
              "ratio");
  std::printf("|%s|%s|%s|%s|%s|\n", std::string(54, '-').c_str(), std::string(12, '-').c_str(),
              std::string(36, '-').c_str(), std::string(12, '-').c_str(),
              std::string(9, '-').c_str());

  const long kFast = 50000000;
  const double atomic_ns = ns_per_op(kFast, [](long) {
    g_result = static_cast<int>(g_level_word.load(std::memory_order_relaxed) > 4);
  });
  const double enabled_ns = ns_per_op(kFast, [](long) {
    g_result = static_cast<int>(roce::log::enabled(NCCL_LOG_TRACE, NCCL_NET));
  });
  row("log::enabled(TRACE, NET), filtered", enabled_ns, "one relaxed atomic load", atomic_ns);
  const double filtered_ns = ns_per_op(kFast, [](long i) {
    ROCE_INFO(NCCL_NET, "qp 0x{:x} posted {} bytes", i, i * 2);
    g_result = 0;
  });
  row("ROCE_INFO with 2 arguments, filtered", filtered_ns, "one relaxed atomic load", atomic_ns);

  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "NET", 1);
  roce::log::set_nccl_logger(&null_logger);
  const long kSlow = 1000000;
  const double emitted_ns =
      ns_per_op(kSlow, [](long i) { ROCE_INFO(NCCL_NET, "qp 0x{:x} posted {} bytes", i, i * 2); });
  const double snprintf_ns = ns_per_op(kSlow, [](long i) {
    char buffer[128];
    std::snprintf(buffer, sizeof(buffer), "NET/RoCE qp 0x%lx posted %ld bytes", i, i * 2);
    g_result = buffer[0];
  });
  row("ROCE_INFO emitted to an NCCL logger", emitted_ns, "snprintf of the same line", snprintf_ns);

  const roce::net::ConnectRequest request = sample_request();
  const std::vector<uint8_t> bytes = *roce::net::encode_message(request);
  const double encode_ns = ns_per_op(kSlow, [&](long) {
    const auto out = roce::net::encode_message(request);
    g_result = static_cast<int>(out->size());
  });
  const double copy_ns = ns_per_op(kSlow, [&](long) {
    std::vector<uint8_t> out(bytes);
    g_result = static_cast<int>(out.size());
  });
  row("encode ConnectRequest (4 QPs)", encode_ns, "copy of its bytes into a vector", copy_ns);
  const double decode_ns = ns_per_op(kSlow, [&](long) {
    const auto result = roce::net::decode_message(bytes);
    g_result = static_cast<int>(result.ok());
  });
  row("decode + validate ConnectRequest (4 QPs)", decode_ns, "copy of its bytes into a vector",
      copy_ns);

  // The stale-handle check every isend/irecv/iflush makes before the comm's type tag: the live
  // mark in front of the recycled block, against the tag compare alone (what it adds to).
  struct Tagged {
    uint64_t vptr_slot = 0;
    uint64_t magic = 0x726f63652d636f6dULL;
  };
  void* raw = roce::recycled::allocate(sizeof(Tagged));
  auto* tagged = new (raw) Tagged;
  Tagged* volatile handle = tagged;
  const double tag_ns = ns_per_op(kFast, [&](long) {
    const Tagged* h = handle;
    g_result = static_cast<int>(h->magic == 0x726f63652d636f6dULL);
  });
  const double live_ns = ns_per_op(kFast, [&](long) {
    const Tagged* h = handle;
    g_result = static_cast<int>(roce::recycled::is_live(h) && h->magic == 0x726f63652d636f6dULL);
  });
  row("live mark + type tag of a handle (isend's check)", live_ns, "type tag compare alone",
      tag_ns);
  roce::recycled::release(raw, sizeof(Tagged));

  const int status = loopback_rows();
  std::printf("\n%zu-byte ConnectRequest; ratio = ns/op over baseline ns/op.\n", bytes.size());
  return status;
}
