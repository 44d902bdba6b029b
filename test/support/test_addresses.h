// Loopback addresses that belong to one test process, so that tests never share a vroce device
// (vroce serves one process per device address) even when two ctest runs share the machine.
//
// A process claims a block of kAddressesPerBlock addresses inside 127.128.0.0/9 (all of 127/8
// is local on lo, and no hand-written address of the project lies in that half) by binding a UDP
// socket to the block's first address on kClaimPort and keeping it open. The kernel makes the
// claim exclusive across every process of the network namespace, whichever build tree or user
// it comes from, and releases it when the process and the children that inherited the socket are
// gone, crashed or not: no lock files, nothing to clean up. The search starts at a block derived
// from the PID (unique among live processes, so the first block is almost always free) and moves
// on to the next block when one is taken.
//
// A process started with ROCE_TEST_ADDRESSES set (by with_test_addresses, or by a test that
// claimed a block and started it) uses those addresses instead of claiming its own: it runs
// inside its parent's claim, and the parent decides which of them each child binds.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace roce::test {

inline constexpr int kAddressesPerBlock = 16;
inline constexpr uint16_t kClaimPort = 47913;
// The environment variable that carries a claimed block to child processes: the block's
// addresses, separated by spaces.
inline constexpr const char* kAddressesVariable = "ROCE_TEST_ADDRESSES";

// The index-th address (0 .. kAddressesPerBlock-1) of this process's block, as "127.a.b.c".
// Claims the block on first use (and exports it in ROCE_TEST_ADDRESSES for children). Throws
// std::runtime_error, naming the cause, when no block can be claimed or the index is out of range.
std::string test_address(int index);

// "name0=address0,name1=address1,...", the names on consecutive addresses from `first`: the
// value of VROCE_DEVICES for devices of this process.
std::string vroce_device_list(std::initializer_list<std::string_view> names, int first = 0);

// The pure parts, for the allocator's own tests.
// The block's first address for block number `block` (0 .. kBlockCount-1), in host order.
inline constexpr uint32_t kBlockCount = (1U << 23) / kAddressesPerBlock;
uint32_t block_base(uint32_t block);
std::string ipv4_text(uint32_t host_order_address);
// Parses ROCE_TEST_ADDRESSES' format; an empty result means malformed (error set).
std::vector<std::string> parse_address_list(const std::string& text, std::string* error);

// Claims a block now, searching from `first_block`; returns its addresses, and the claim's file
// descriptor (kept open by the caller for as long as the block is in use) in *claim_fd. Throws
// std::runtime_error when every block tried is taken or the socket cannot be made.
std::vector<std::string> claim_block(uint32_t first_block, int* claim_fd);

}  // namespace roce::test
