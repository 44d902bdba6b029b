// The shared-memory wire (VROCE_WIRE=shm): RoCEv2 packets between vroce devices of one host
// without the kernel's UDP path, which costs an RC exchange more than vroce itself does (a
// datagram each way, and its ACK, is 5-7 us of system calls and softirq on loopback).
//
// Each device on this wire owns an inbox: a file in /dev/shm, named after the device's network
// namespace and address, that every process sending to the device maps. It holds a ring of packet
// slots in which any number of senders claim slots (a bounded multi-producer queue: one sequence
// word per slot, a shared claim counter) and the device's engine alone reads them. A slot holds
// what a datagram would have carried: the UDP payload exactly (BTH to ICRC, built and checked
// by the same codec), the sender's address and the traffic class. The receiving engine parses a
// slot as it parses a datagram, so everything above the socket (ICRC, PSNs, ACKs, faults,
// counters) is the same on both wires; what the shared-memory wire lacks is what lives in the
// kernel: nftables rules, veths and captures see none of its packets.
//
// Waking. A progress thread that is about to sleep marks its inbox; a sender that published a
// slot and then finds the mark clears it and rings a doorbell, an empty UDP datagram to the
// device's socket, which the sleeping thread's epoll watches. A thread that spins after
// activity, or a program thread that polls a CQ, finds a filled slot with one memory read and
// no system call.
//
// Failure. A full ring drops the packet, as a full switch queue would, and RC retransmits it. A
// slot claimed by a sender that died (or stalled) before filling it is passed over after
// kAbandonedSlot, so one dead process cannot stop a device's traffic; the stalled sender's late
// publish then fails and its packet counts as lost. A device that closes marks its inbox closed
// and removes the file; the next owner of its address (the UDP bind makes owners exclusive)
// marks a dead owner's file closed and replaces it; a sender that finds the inbox it mapped
// closed looks the name up again. The files are created 0600: only processes of the same user
// share a wire, the others reach the device by UDP.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "packet_io/udp_port.h"
#include "wire/flow.h"
#include "wire/packet.h"

namespace vroce::packet_io {

namespace shm {

// The file's layout. Any change to it changes kVersion: a process of an older vroce then finds
// the inbox unusable, says so once, and sends to that device by UDP.
constexpr uint64_t kMagic = 0x3165726977656f72ULL;  // "roewire1"
constexpr uint32_t kVersion = 1;

struct InboxHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t slot_count;
  uint32_t slot_size;
  uint32_t owner_pid;
  // The senders' claim counter: the next position to claim. Alone in its cache line, the one
  // line every sender writes.
  alignas(64) uint64_t tail;
  // Read by every sender on every packet, written rarely: the owner sleeps (a sender that
  // clears it rings the doorbell) and the owner is gone (senders look the name up again).
  alignas(64) uint32_t sleeping;
  uint32_t closed;
};

// One packet slot. `sequence` is the slot's state for the position p that maps to it: p when it
// is free for a sender to claim at p, p + 1 once that sender filled it, p + slot_count once the
// reader gave it back for the next lap.
struct SlotHeader {
  uint64_t sequence;
  uint32_t length;
  uint8_t traffic_class;
  uint8_t source_family;
  uint16_t reserved;
  uint8_t source_address[16];  // IPv4 (4 bytes) or IPv6; the port is always 4791
};

constexpr size_t kHeaderSize = 256;
constexpr size_t kSlotDataOffset = 64;
constexpr size_t kSlotSize = (kSlotDataOffset + wire::kMaxPacketSize + 63) / 64 * 64;
static_assert(sizeof(InboxHeader) <= kHeaderSize);
static_assert(sizeof(SlotHeader) <= kSlotDataOffset);

}  // namespace shm

// One mapped inbox file; owners and senders both hold one.
class ShmMapping {
 public:
  ShmMapping() = default;
  ShmMapping(const ShmMapping&) = delete;
  ShmMapping& operator=(const ShmMapping&) = delete;
  ~ShmMapping();

  // Maps an existing inbox and checks its layout. 0, or an errno with *message.
  int map_existing(const std::string& path, std::string* message);
  // The same inbox mapped once per process: a mapping of this file that the process already
  // holds (its own device's inbox, or one another device of the process sends to) is shared.
  // Two mappings of one file would work, but a thread sanitizer keys its happens-before by
  // address and would not see a publish through one and its read through the other. Null
  // with *error and *message when map_existing fails.
  static std::shared_ptr<ShmMapping> shared(const std::string& path, std::string* message,
                                            int* error);
  // Makes this mapping (just created) the one shared() hands out for its file.
  static void share(const std::shared_ptr<ShmMapping>& mapping);
  // Creates, sizes (reserving the memory: a full /dev/shm fails here, not with SIGBUS later)
  // and initialises a new inbox at `path`. 0, or an errno with *message.
  int create(const std::string& path, std::string* message);

  shm::InboxHeader& header() const noexcept { return *header_; }
  shm::SlotHeader& slot(uint64_t position) const noexcept;
  uint8_t* slot_data(shm::SlotHeader& slot) const noexcept;
  uint32_t slot_count() const noexcept { return slot_count_; }
  bool closed() const noexcept;
  void mark_closed() noexcept;
  ino_t inode() const noexcept { return inode_; }

 private:
  int map_fd(int fd, const std::string& path, std::string* message);
  // Takes `base`, a mapping of the whole file `file` describes, as this mapping's.
  void adopt(void* base, const struct stat& file) noexcept;

  dev_t device_ = 0;  // the file's identity, for shared()
  ino_t inode_ = 0;
  void* base_ = nullptr;
  size_t size_ = 0;
  shm::InboxHeader* header_ = nullptr;
  uint8_t* slots_ = nullptr;
  uint32_t slot_count_ = 0;
  size_t slot_size_ = 0;
};

// Where the inboxes of the calling thread's network namespace live: "/dev/shm/vroce-wire.<the
// namespace's inode>." followed by an address. Empty, with *message, if the namespace cannot be
// identified.
std::string shm_inbox_prefix(std::string* message);
// The inbox path of an address (IPv4 or IPv6) under a prefix.
std::string shm_inbox_path(const std::string& prefix, const sockaddr_storage& address);

// A device's own inbox: the reading end. Used with the engine mutex held, except arrival(),
// which any thread may call.
class ShmInbox {
 public:
  // Four windows of full-sized packets (a requester keeps at most 1024 unacknowledged): room
  // for several QPs streaming into one device while its progress thread is off the CPU, about
  // as many packets as the UDP wire's 32 MiB socket buffer holds. 17 MiB of /dev/shm.
  static constexpr uint32_t kSlotCount = 4096;
  // A claimed slot left unfilled this long is passed over: its sender died or stalled.
  static constexpr std::chrono::milliseconds kAbandonedSlot{200};

  ShmInbox() = default;
  ShmInbox(const ShmInbox&) = delete;
  ShmInbox& operator=(const ShmInbox&) = delete;
  // Marks the inbox closed and removes its file.
  ~ShmInbox();

  // Creates the inbox of `self` under `prefix`, replacing (and marking closed) a file left by an
  // earlier owner of the address. 0, or an errno with *message.
  int open(const std::string& prefix, const sockaddr_storage& self, std::string* message);
  const std::string& path() const noexcept { return path_; }

  // Hands out the filled slots in order, up to out.size(), as datagrams from their senders to
  // this device; they stay valid until the next receive(), which gives them back to the ring.
  size_t receive(std::span<InDatagram> out);
  // The next slot is filled: exact with the engine mutex held; from any other thread (the
  // spinning progress thread) a hint, which may miss a slot that the mutex holder has just
  // moved past, and may name one it has just read. One memory read.
  bool arrival() const noexcept;

  // The progress thread is about to sleep: marks the inbox so that the next sender rings the
  // doorbell. False when a slot was filled meanwhile (then it must not sleep). With the engine
  // mutex held: the look must be at the slot the reader is really at.
  bool prepare_sleep() noexcept;
  // The progress thread is awake again.
  void end_sleep() noexcept;

 private:
  void release_handed_out() noexcept;
  // The slot at head_ is claimed but unfilled: passes it over once that has lasted
  // kAbandonedSlot. True when it did.
  bool pass_over_abandoned();

  std::shared_ptr<ShmMapping> map_;
  std::string path_;
  sockaddr_storage self_{};
  uint64_t head_ = 0;  // the next slot to read
  // head_ for the spinning progress thread's look, which it takes without the engine mutex.
  std::atomic<uint64_t> head_hint_{0};
  uint64_t released_ = 0;  // slots below this are given back to the ring
  std::chrono::steady_clock::time_point stuck_since_{};
  bool stuck_ = false;
  // The senders' addresses of the slots handed out: copied out of the shared memory and
  // checked, so a datagram's address is never read from memory another process can change.
  std::vector<sockaddr_storage> sources_;
};

// The sending end: the inboxes of the peers this device sends to, mapped on first use.
class ShmPeers {
 public:
  // A peer found without an inbox is looked up again after this long.
  static constexpr std::chrono::milliseconds kLookupRetry{100};

  ShmPeers() = default;
  ShmPeers(const ShmPeers&) = delete;
  ShmPeers& operator=(const ShmPeers&) = delete;
  ~ShmPeers();

  void open(std::string prefix, const sockaddr_storage& self, std::string device_name);

  // Writes one datagram (or each segment of a GSO send) into its destination's inbox. False
  // when the destination has no inbox on this host (send it by UDP). A packet that finds the
  // peer's ring full is lost, as on a congested link, and counted in *lost.
  bool deliver(const OutDatagram& datagram, size_t* lost);

  // After a batch of deliver(): calls ring(address) for each peer delivered to since the last
  // call whose progress thread sleeps, so that it wakes.
  template <typename Ring>
  void ring_doorbells(Ring&& ring) {
    if (touched_.empty()) {
      return;
    }
    for (Peer* peer : touched_) {
      peer->touched = false;
      if (peer->map && take_sleeper(*peer->map)) {
        ring(peer->address, peer->address_len);
      }
    }
    touched_.clear();
  }

 private:
  struct Peer {
    sockaddr_storage address{};
    socklen_t address_len = 0;
    std::shared_ptr<ShmMapping> map;  // null: no inbox (yet)
    std::chrono::steady_clock::time_point retry_at{};
    bool touched = false;
    bool reported = false;  // a lookup failure other than "no such inbox" was logged
  };
  Peer* find(const sockaddr_storage& address);
  bool usable(Peer& peer);
  bool write_slot(ShmMapping& map, const uint8_t* data, size_t length, uint8_t traffic_class);
  static bool take_sleeper(ShmMapping& map) noexcept;

  std::string prefix_;
  std::string device_name_;
  sockaddr_storage self_{};
  std::vector<std::unique_ptr<Peer>> peers_;
  Peer* last_ = nullptr;        // the last peer found: most batches go to one
  std::vector<Peer*> touched_;  // delivered to since the last ring_doorbells
};

}  // namespace vroce::packet_io
