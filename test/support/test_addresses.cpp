// The per-process loopback address blocks: see test_addresses.h.
#include "test_addresses.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <stdexcept>

namespace roce::test {
namespace {

constexpr uint32_t kRegionBase = 0x7F800000U;  // 127.128.0.0/9
// How many blocks a claim tries before it gives up: far more than tests ever run at once.
constexpr uint32_t kMaxProbes = 4096;

std::mutex g_mutex;
std::vector<std::string> g_addresses;

std::vector<std::string> addresses_of(uint32_t block) {
  std::vector<std::string> out;
  for (uint32_t i = 0; i < kAddressesPerBlock; ++i) {
    out.push_back(ipv4_text(block_base(block) + i));
  }
  return out;
}

std::string joined(const std::vector<std::string>& addresses) {
  std::string text;
  for (const auto& a : addresses) {
    text += (text.empty() ? "" : " ") + a;
  }
  return text;
}

const std::vector<std::string>& process_addresses() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_addresses.empty()) {
    return g_addresses;
  }
  if (const char* inherited = std::getenv(kAddressesVariable); inherited != nullptr) {
    std::string error;
    g_addresses = parse_address_list(inherited, &error);
    if (g_addresses.empty()) {
      throw std::runtime_error(std::string(kAddressesVariable) + "='" + inherited +
                               "' is malformed: " + error +
                               " (unset it to let this process claim its own block)");
    }
    return g_addresses;
  }
  int claim_fd = -1;
  g_addresses = claim_block(static_cast<uint32_t>(getpid()) % kBlockCount, &claim_fd);
  // claim_fd stays open for the life of the process (and of the children that inherit it).
  setenv(kAddressesVariable, joined(g_addresses).c_str(), 1);
  return g_addresses;
}

}  // namespace

uint32_t block_base(uint32_t block) {
  return kRegionBase + (block % kBlockCount) * kAddressesPerBlock;
}

std::string ipv4_text(uint32_t host_order_address) {
  in_addr addr{};
  addr.s_addr = htonl(host_order_address);
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &addr, text, sizeof text);
  return text;
}

std::vector<std::string> parse_address_list(const std::string& text, std::string* error) {
  std::vector<std::string> out;
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    in_addr addr{};
    if (inet_pton(AF_INET, word.c_str(), &addr) != 1 || (ntohl(addr.s_addr) >> 24) != 127) {
      *error = "'" + word + "' is not a 127.x.y.z address";
      return {};
    }
    out.push_back(word);
  }
  if (out.size() != kAddressesPerBlock) {
    *error = "expected " + std::to_string(kAddressesPerBlock) + " addresses, found " +
             std::to_string(out.size());
    return {};
  }
  return out;
}

std::vector<std::string> claim_block(uint32_t first_block, int* claim_fd) {
  // Not SOCK_CLOEXEC: children started by the test inherit the claim, so the block stays taken
  // while any of them still binds its addresses.
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) {
    throw std::runtime_error(std::string("test addresses: socket: ") + std::strerror(errno));
  }
  int last_errno = 0;
  for (uint32_t probe = 0; probe < kMaxProbes; ++probe) {
    const uint32_t block = (first_block + probe) % kBlockCount;
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_port = htons(kClaimPort);
    at.sin_addr.s_addr = htonl(block_base(block));
    if (bind(fd, reinterpret_cast<const sockaddr*>(&at), sizeof at) == 0) {
      *claim_fd = fd;
      return addresses_of(block);
    }
    last_errno = errno;
    if (last_errno != EADDRINUSE) {
      break;
    }
  }
  close(fd);
  throw std::runtime_error(
      "test addresses: no loopback block of " + std::to_string(kAddressesPerBlock) +
      " addresses could be claimed in 127.128.0.0/9 (UDP port " + std::to_string(kClaimPort) +
      "): " + std::strerror(last_errno) +
      (last_errno == EADDRINUSE ? " for every block tried; are thousands of tests running?"
                                : "; is the loopback interface up in this network namespace?"));
}

std::string test_address(int index) {
  const auto& addresses = process_addresses();
  if (index < 0 || index >= kAddressesPerBlock) {
    throw std::runtime_error("test address index " + std::to_string(index) + " is outside 0.." +
                             std::to_string(kAddressesPerBlock - 1));
  }
  return addresses[static_cast<size_t>(index)];
}

std::string vroce_device_list(std::initializer_list<std::string_view> names, int first) {
  std::string list;
  int index = first;
  for (const auto name : names) {
    list += (list.empty() ? "" : ",") + std::string(name) + "=" + test_address(index++);
  }
  return list;
}

}  // namespace roce::test
