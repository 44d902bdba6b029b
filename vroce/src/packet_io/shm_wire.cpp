#include "packet_io/shm_wire.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "packet_io/socket_address.h"
#include "stats/stats.h"
#include "util/log.h"
#include "wire/packet.h"

namespace vroce::packet_io {

namespace {

// An inbox file's size: its header and the ring.
constexpr size_t kFileSize = shm::kHeaderSize + size_t{ShmInbox::kSlotCount} * shm::kSlotSize;
// A sender that keeps finding its claim taken gives up after this many tries and counts the
// ring as full: only a corrupt claim counter could make it loop longer.
constexpr int kClaimTries = 1024;

template <typename T>
std::atomic_ref<T> atomic(T& word) noexcept {
  return std::atomic_ref<T>(word);
}

socklen_t address_length(const sockaddr_storage& address) {
  return address.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
}

// The address a datagram from `family`/`bytes` would have come from: port 4791.
bool source_address(uint8_t family, const uint8_t* bytes, sockaddr_storage* out) {
  *out = sockaddr_storage{};
  if (family == AF_INET) {
    auto& in = reinterpret_cast<sockaddr_in&>(*out);
    in.sin_family = AF_INET;
    in.sin_port = htons(wire::kRoceUdpPort);
    std::memcpy(&in.sin_addr, bytes, sizeof(in.sin_addr));
    return true;
  }
  if (family == AF_INET6) {
    auto& in6 = reinterpret_cast<sockaddr_in6&>(*out);
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(wire::kRoceUdpPort);
    std::memcpy(&in6.sin6_addr, bytes, sizeof(in6.sin6_addr));
    return true;
  }
  return false;
}

}  // namespace

// ---- ShmMapping ----------------------------------------------------------------------------

ShmMapping::~ShmMapping() {
  if (base_ != nullptr) {
    ::munmap(base_, size_);
  }
}

shm::SlotHeader& ShmMapping::slot(uint64_t position) const noexcept {
  return *reinterpret_cast<shm::SlotHeader*>(slots_ + (position % slot_count_) * slot_size_);
}

uint8_t* ShmMapping::slot_data(shm::SlotHeader& slot) const noexcept {
  return reinterpret_cast<uint8_t*>(&slot) + shm::kSlotDataOffset;
}

bool ShmMapping::closed() const noexcept {
  return atomic(header_->closed).load(std::memory_order_acquire) != 0;
}

void ShmMapping::mark_closed() noexcept {
  atomic(header_->closed).store(1, std::memory_order_release);
}

int ShmMapping::map_existing(const std::string& path, std::string* message) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    *message = path + ": " + std::strerror(err);
    return err;
  }
  int rc = map_fd(fd, path, message);
  ::close(fd);
  return rc;
}

int ShmMapping::map_fd(int fd, const std::string& path, std::string* message) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != kFileSize) {
    *message = path + " is not a vroce inbox of this version (size " + std::to_string(st.st_size) +
               ", expected " + std::to_string(kFileSize) + ")";
    return EPROTO;
  }
  void* base = ::mmap(nullptr, kFileSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    int err = errno;
    *message = path + ": mmap: " + std::strerror(err);
    return err;
  }
  adopt(base, st);
  if (header_->magic != shm::kMagic || header_->version != shm::kVersion ||
      header_->slot_count != ShmInbox::kSlotCount || header_->slot_size != shm::kSlotSize) {
    *message = path + " is an inbox of another vroce version (layout " +
               std::to_string(header_->version) + ", this one reads " +
               std::to_string(shm::kVersion) + ")";
    return EPROTO;
  }
  return 0;
}

void ShmMapping::adopt(void* base, const struct stat& file) noexcept {
  device_ = file.st_dev;
  inode_ = file.st_ino;
  base_ = base;
  size_ = kFileSize;
  header_ = static_cast<shm::InboxHeader*>(base);
  slots_ = static_cast<uint8_t*>(base) + shm::kHeaderSize;
  slot_count_ = ShmInbox::kSlotCount;
  slot_size_ = shm::kSlotSize;
}

namespace {

// The process's mappings of inbox files, by file identity.
struct MappingRegistry {
  std::mutex mutex;
  std::vector<std::weak_ptr<ShmMapping>> mappings;  // guarded by mutex
};

MappingRegistry& registry() {
  static MappingRegistry instance;
  return instance;
}

}  // namespace

std::shared_ptr<ShmMapping> ShmMapping::shared(const std::string& path, std::string* message,
                                               int* error) {
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    *error = errno;
    *message = path + ": " + std::strerror(*error);
    return nullptr;
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0) {
    MappingRegistry& r = registry();
    std::lock_guard lock(r.mutex);
    std::erase_if(r.mappings, [](const auto& weak) { return weak.expired(); });
    for (const auto& weak : r.mappings) {
      auto mapping = weak.lock();
      // A closed inbox is never handed out again, even should its inode number come back.
      if (mapping && mapping->device_ == st.st_dev && mapping->inode_ == st.st_ino &&
          !mapping->closed()) {
        ::close(fd);
        return mapping;
      }
    }
  }
  auto mapping = std::make_shared<ShmMapping>();
  *error = mapping->map_fd(fd, path, message);
  ::close(fd);
  if (*error != 0) {
    return nullptr;
  }
  share(mapping);
  return mapping;
}

void ShmMapping::share(const std::shared_ptr<ShmMapping>& mapping) {
  MappingRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  r.mappings.push_back(mapping);
}

int ShmMapping::create(const std::string& path, std::string* message) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    int err = errno;
    *message = "cannot create " + path + ": " + std::strerror(err);
    return err;
  }
  int err = ::posix_fallocate(fd, 0, static_cast<off_t>(kFileSize));
  if (err != 0) {
    ::close(fd);
    ::unlink(path.c_str());
    *message = "cannot reserve " + std::to_string(kFileSize >> 20) + " MiB for " + path + ": " +
               std::strerror(err) + " (a container's /dev/shm may be too small: --shm-size)";
    return err;
  }
  struct stat st {};
  void* base = ::fstat(fd, &st) == 0
                   ? ::mmap(nullptr, kFileSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                   : MAP_FAILED;
  err = errno;
  ::close(fd);
  if (base == MAP_FAILED) {
    ::unlink(path.c_str());
    *message = path + ": mmap: " + std::strerror(err);
    return err;
  }
  adopt(base, st);
  // Nobody else has the file yet (it is renamed into place after this), so plain stores do.
  for (uint64_t position = 0; position < slot_count_; ++position) {
    slot(position).sequence = position;
  }
  header_->tail = 0;
  header_->sleeping = 0;
  header_->closed = 0;
  header_->slot_count = slot_count_;
  header_->slot_size = static_cast<uint32_t>(slot_size_);
  header_->owner_pid = static_cast<uint32_t>(::getpid());
  header_->version = shm::kVersion;
  atomic(header_->magic).store(shm::kMagic, std::memory_order_release);
  return 0;
}

// ---- names ---------------------------------------------------------------------------------

std::string shm_inbox_prefix(std::string* message) {
  // Two devices with one address in two namespaces are two devices: the namespace is part of
  // the name.
  struct stat st {};
  if (::stat("/proc/thread-self/ns/net", &st) != 0) {
    int err = errno;
    *message = "cannot identify the network namespace (/proc/thread-self/ns/net): " +
               std::string(std::strerror(err));
    return {};
  }
  return "/dev/shm/vroce-wire." + std::to_string(st.st_ino) + ".";
}

std::string shm_inbox_path(const std::string& prefix, const sockaddr_storage& address) {
  return prefix + address_text(address);
}

// ---- ShmInbox ------------------------------------------------------------------------------

ShmInbox::~ShmInbox() {
  if (path_.empty()) {
    return;
  }
  map_->mark_closed();
  // Remove the name only while it is still ours (a later owner replaces it with its own).
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && st.st_ino == map_->inode()) {
    ::unlink(path_.c_str());
  }
}

int ShmInbox::open(const std::string& prefix, const sockaddr_storage& self, std::string* message) {
  // The destination a datagram's IP_PKTINFO would name: our address, port 4791 (the ICRC
  // covers both).
  self_ = self;
  if (self_.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in&>(self_).sin_port = htons(wire::kRoceUdpPort);
  } else {
    reinterpret_cast<sockaddr_in6&>(self_).sin6_port = htons(wire::kRoceUdpPort);
  }
  const std::string path = shm_inbox_path(prefix, self);
  const std::string fresh = path + ".new." + std::to_string(::getpid());
  ::unlink(fresh.c_str());  // left by a process of this pid that died while creating it
  auto map = std::make_shared<ShmMapping>();
  int rc = map->create(fresh, message);
  if (rc != 0) {
    return rc;
  }
  {
    // An inbox left by an earlier owner of this address (the UDP bind, made before this, makes
    // owners exclusive, so that owner is gone): its senders must look the name up again.
    ShmMapping old;
    std::string ignored;
    if (old.map_existing(path, &ignored) == 0) {
      old.mark_closed();
    }
  }
  if (::rename(fresh.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(fresh.c_str());
    *message = "cannot place the inbox " + path + ": " + std::strerror(err);
    return err;
  }
  // The process's senders to this device write through this mapping.
  ShmMapping::share(map);
  map_ = std::move(map);
  path_ = path;
  sources_.resize(UdpPort::kMaxBatch);
  return 0;
}

bool ShmInbox::arrival() const noexcept {
  const uint64_t head = head_hint_.load(std::memory_order_relaxed);
  return atomic(map_->slot(head).sequence).load(std::memory_order_acquire) == head + 1;
}

void ShmInbox::release_handed_out() noexcept {
  for (; released_ < head_; ++released_) {
    atomic(map_->slot(released_).sequence)
        .store(released_ + map_->slot_count(), std::memory_order_release);
  }
}

bool ShmInbox::pass_over_abandoned() {
  // Claimed (the claim counter is past it) but not filled: a sender is between its claim and
  // its publish, or died there.
  if (atomic(map_->header().tail).load(std::memory_order_relaxed) <= head_) {
    stuck_ = false;
    return false;
  }
  auto now = std::chrono::steady_clock::now();
  if (!stuck_) {
    stuck_ = true;
    stuck_since_ = now;
    return false;
  }
  if (now - stuck_since_ < kAbandonedSlot) {
    return false;
  }
  // Give the slot to the next lap. A sender that was only stalled finds its publish refused.
  uint64_t expected = head_;
  if (!atomic(map_->slot(head_).sequence)
           .compare_exchange_strong(expected, head_ + map_->slot_count(),
                                    std::memory_order_acq_rel)) {
    return false;  // filled just now
  }
  stuck_ = false;
  ++head_;
  released_ = head_;
  stats().shm_abandoned.add();
  VROCE_LOG(Warn,
            "inbox %s: a sender claimed a slot and did not fill it within %lld ms (it died or "
            "stalled); passed over, its packet is lost and RC retransmits it",
            path_.c_str(), static_cast<long long>(kAbandonedSlot.count()));
  return true;
}

size_t ShmInbox::receive(std::span<InDatagram> out) {
  release_handed_out();
  size_t count = 0;
  const size_t limit = std::min(out.size(), sources_.size());
  while (count < limit) {
    shm::SlotHeader& slot = map_->slot(head_);
    if (atomic(slot.sequence).load(std::memory_order_acquire) != head_ + 1) {
      if (count == 0 && pass_over_abandoned()) {
        release_handed_out();
        continue;
      }
      break;
    }
    stuck_ = false;
    // Read once: the sender's process could still write to the slot (it must not, but a
    // datagram is never trusted).
    const uint32_t length = slot.length;
    InDatagram& d = out[count];
    d.data = map_->slot_data(slot);
    d.length = std::min<size_t>(length, wire::kMaxPacketSize);
    d.truncated = length > wire::kMaxPacketSize;
    d.traffic_class = slot.traffic_class;
    d.dst = &self_;
    d.dst_known = source_address(slot.source_family, slot.source_address, &sources_[count]);
    d.src = &sources_[count];
    ++head_;
    ++count;
  }
  head_hint_.store(head_, std::memory_order_relaxed);
  if (count > 0) {
    stats().shm_received.add(count);
  }
  return count;
}

bool ShmInbox::prepare_sleep() noexcept {
  // The mark, then a look at the slot; the sender publishes the slot, then looks at the mark.
  // All four are sequentially consistent (no fences: GCC's TSan has none), so one of the two
  // looks sees the other side's write: the sender rings, or this thread stays awake.
  atomic(map_->header().sleeping).store(1, std::memory_order_seq_cst);
  if (atomic(map_->slot(head_).sequence).load(std::memory_order_seq_cst) == head_ + 1) {
    atomic(map_->header().sleeping).store(0, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void ShmInbox::end_sleep() noexcept {
  atomic(map_->header().sleeping).store(0, std::memory_order_relaxed);
}

// ---- ShmPeers ------------------------------------------------------------------------------

ShmPeers::~ShmPeers() = default;

void ShmPeers::open(std::string prefix, const sockaddr_storage& self, std::string device_name) {
  prefix_ = std::move(prefix);
  self_ = self;
  device_name_ = std::move(device_name);
}

ShmPeers::Peer* ShmPeers::find(const sockaddr_storage& address) {
  if (last_ != nullptr && same_ip(last_->address, address)) {
    return last_;
  }
  for (auto& peer : peers_) {
    if (same_ip(peer->address, address)) {
      last_ = peer.get();
      return last_;
    }
  }
  auto peer = std::make_unique<Peer>();
  peer->address = address;
  peer->address_len = address_length(address);
  peers_.push_back(std::move(peer));
  last_ = peers_.back().get();
  return last_;
}

bool ShmPeers::usable(Peer& peer) {
  if (peer.map && !peer.map->closed()) {
    return true;
  }
  auto now = std::chrono::steady_clock::now();
  if (peer.map) {
    peer.map.reset();  // its owner is gone: a new one may have placed a new inbox
  } else if (now < peer.retry_at) {
    return false;
  }
  std::string message;
  int rc = 0;
  auto map = ShmMapping::shared(shm_inbox_path(prefix_, peer.address), &message, &rc);
  if (!map) {
    peer.retry_at = now + kLookupRetry;
    if (rc != ENOENT && !peer.reported) {
      peer.reported = true;
      VROCE_LOG(Info, "device %s: %s; sending to %s by UDP", device_name_.c_str(), message.c_str(),
                address_text(peer.address).c_str());
    }
    return false;
  }
  peer.map = std::move(map);
  return true;
}

bool ShmPeers::write_slot(ShmMapping& map, const uint8_t* data, size_t length,
                          uint8_t traffic_class) {
  if (length > wire::kMaxPacketSize) {
    return false;  // no RoCE packet is longer; a datagram this long would be refused too
  }
  auto tail = atomic(map.header().tail);
  uint64_t position = tail.load(std::memory_order_relaxed);
  for (int tries = 0;; ++tries) {
    if (tries == kClaimTries) {
      return false;
    }
    shm::SlotHeader& slot = map.slot(position);
    uint64_t sequence = atomic(slot.sequence).load(std::memory_order_acquire);
    auto lead = static_cast<int64_t>(sequence - position);
    if (lead == 0) {
      if (tail.compare_exchange_weak(position, position + 1, std::memory_order_relaxed)) {
        break;
      }
    } else if (lead < 0) {
      return false;  // the reader has not given this slot back: the ring is full
    } else {
      position = tail.load(std::memory_order_relaxed);
    }
  }
  shm::SlotHeader& slot = map.slot(position);
  std::memcpy(map.slot_data(slot), data, length);
  slot.length = static_cast<uint32_t>(length);
  slot.traffic_class = traffic_class;
  slot.source_family = static_cast<uint8_t>(self_.ss_family);
  if (self_.ss_family == AF_INET) {
    std::memcpy(slot.source_address, &reinterpret_cast<const sockaddr_in&>(self_).sin_addr, 4);
  } else {
    std::memcpy(slot.source_address, &reinterpret_cast<const sockaddr_in6&>(self_).sin6_addr, 16);
  }
  // The reader passes over a slot left unfilled too long; then this publish is refused and the
  // packet is lost like any other. Sequentially consistent: ordered before the look at the
  // reader's sleep mark in ring_doorbells (see ShmInbox::prepare_sleep).
  uint64_t expected = position;
  return atomic(slot.sequence)
      .compare_exchange_strong(expected, position + 1, std::memory_order_seq_cst,
                               std::memory_order_relaxed);
}

bool ShmPeers::deliver(const OutDatagram& datagram, size_t* lost) {
  Peer* peer = find(*datagram.dst);
  if (!usable(*peer)) {
    return false;
  }
  size_t written = 0;
  size_t packets = 1;
  if (datagram.segment_count >= 2) {
    packets = datagram.segment_count;
    for (size_t i = 0; i < datagram.segment_count; ++i) {
      const iovec& segment = datagram.segments[i];
      if (write_slot(*peer->map, static_cast<const uint8_t*>(segment.iov_base), segment.iov_len,
                     datagram.traffic_class)) {
        ++written;
      }
    }
  } else if (write_slot(*peer->map, datagram.data, datagram.length, datagram.traffic_class)) {
    written = 1;
  }
  stats().shm_sent.add(written);
  if (written < packets) {
    stats().shm_ring_full.add(packets - written);
    *lost += packets - written;
  }
  if (written > 0 && !peer->touched) {
    peer->touched = true;
    touched_.push_back(peer);
  }
  return true;
}

bool ShmPeers::take_sleeper(ShmMapping& map) noexcept {
  auto sleeping = atomic(map.header().sleeping);
  return sleeping.load(std::memory_order_seq_cst) != 0 &&
         sleeping.exchange(0, std::memory_order_relaxed) != 0;
}

}  // namespace vroce::packet_io
