// The RC transport engine of one device in one process: the device's UDP socket, the transport
// state of its QPs, and one progress thread that blocks in epoll on that socket, an eventfd and a
// timerfd (ACK timeouts, RNR waits, delayed packets). All of it is guarded by one mutex, and any
// thread that holds it may make progress: the progress thread when woken, a posting thread that
// finds the engine idle (it transmits its own work at once, as a NIC's doorbell would), a thread
// polling an empty CQ (it receives what arrived), and control operations (modify, destroy). A
// posting thread that finds the engine busy leaves its QP on a list and wakes the thread only if
// it sleeps. Nobody holds the mutex while blocked, so nothing waits for a sleeping thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/qp_transport.h"
#include "packet_io/fault_injector.h"
#include "packet_io/gso_burst.h"
#include "packet_io/port_counters.h"
#include "packet_io/shm_wire.h"
#include "packet_io/udp_port.h"
#include "packet_io/wake_fd.h"
#include "stats/stats.h"
#include "wire/icrc.h"
#include "wire/packet.h"

namespace vroce::core {
class DeviceState;
struct Qp;

// Per-packet facts the fault injector and the counters need.
struct TxMeta {
  uint32_t dest_qpn = 0;
  uint32_t psn = 0;
  PacketClass cls = PacketClass::Other;
  bool request = false;
  bool retransmission = false;
  bool cnp = false;  // a congestion notification: never ECN-capable, never ECN-marked
  size_t payload = 0;
};

class Engine {
 public:
  // Opens the device's socket and starts the progress thread. nullptr with *error on failure.
  static std::unique_ptr<Engine> start(DeviceState& device, int* error);

  Engine(DeviceState& device, const FaultSpec& faults);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  ~Engine();

  DeviceState& device() const noexcept { return device_; }
  // The device's port counters (hw_counters and counters), counted next to the process Stats.
  packet_io::PortCounters& port_counters() const noexcept { return port_counters_; }
  int socket_family() const noexcept { return port_.family(); }

  // ---- any thread, without the mutex -------------------------------------------------------

  // Runs fn with the engine mutex held (control operations: add/remove/modify QPs).
  int call(const std::function<int()>& fn);

  void add_qp(Qp* qp);
  void remove_qp(Qp* qp);

  // A QP has new send work (or, in ERR, new WQEs to flush). Transmits at once when the engine
  // is idle; otherwise queues the QP for whoever holds the engine.
  void kick(Qp* qp) noexcept;

  // Receives and processes what arrived, if no other thread is at it (a CQ poller's idle hook).
  void try_progress() noexcept;

  // ---- with the mutex held (transport code) --------------------------------------------------

  Clock::time_point now() const noexcept { return now_; }

  // Puts a QP on the list the transmit pass visits.
  void activate(Qp* qp) noexcept;

  // Builds one packet for `qp` into the transmit batch (flushing it first when full). Returns
  // false when the codec refused the headers (a bug; logged).
  bool emit(const Qp& qp, const wire::PacketHeaders& headers,
            std::span<const wire::ByteSpan> payload, const TxMeta& meta);

  // A scratch buffer of one MTU for gathering from CUDA memory.
  std::span<uint8_t> bounce() noexcept { return bounce_; }

 private:
  struct TxSlot {
    uint8_t data[wire::kMaxPacketSize];
    size_t length = 0;
    const PeerPath* path = nullptr;
    TxMeta meta;
  };
  struct Delayed {
    Clock::time_point due;
    std::vector<uint8_t> data;
    sockaddr_storage dst{};
    socklen_t dst_len = 0;
    uint8_t traffic_class = 0;
    uint8_t hop_limit = 0;
  };
  int open(std::string* message);
  int open_shm_wire(std::string* message);
  // The progress thread, until stop_: rounds of work until none is left, then a spin for an
  // arrival or a sleep in epoll until something wakes it.
  void run();
  struct ProgressLoop;  // what the thread carries from one pass to the next
  struct Wait;          // what ended one wait
  // Rounds under the mutex until one leaves nothing to do right away; the last one arms the
  // timer and sets when the thread must wake at the latest.
  void work_until_idle(ProgressLoop& loop, bool may_spin);
  // Polls the inbox and epoll without blocking, for at most spin_ (only when may_spin).
  void spin_for_arrival(ProgressLoop& loop, Wait& wait, bool may_spin);
  // Blocks in epoll until an arrival, a wake-up, the timer, or the time the last round set.
  void sleep_until_woken(ProgressLoop& loop, Wait& wait, bool may_spin);
  // That sleep's timeout: the time the last round set, and the time the port counters are due
  // to be published (marking them watched or not, see hand_over).
  int sleep_timeout_ms(const ProgressLoop& loop);
  // Reads the eventfd and timerfd that fired, and notes an arrival the next round may leave to
  // a program thread that holds the engine.
  void take_wakeups(ProgressLoop& loop, const Wait& wait);
  void count_progress_thread_cpu();
  void wake() noexcept;
  // kick's wait for a taken engine: true when it got the mutex (then held) within kKickWait.
  bool wait_for_engine() noexcept;
  // The progress thread, before it locks for a round: a posting thread waiting for the engine
  // goes first (bounded by twice kKickWait).
  void let_kick_in() noexcept;
  // One round of work: queued kicks, receive, timers, transmit, flush. Returns true while there
  // is more to do right away. Needs the mutex.
  // ACK timeouts are declared only when `timeouts` (the progress thread).
  bool pump(bool receive, bool timeouts);
  // Some QP's ACK timer runs / has passed its deadline. Need the mutex.
  bool any_ack_timer() const;
  // Asks the scheduler for the shortest time slice for the progress thread (EEVDF), so that an
  // arrival preempts a spinning program thread at once.
  void request_short_slice();
  static constexpr uint64_t kSchedSliceNs = 100'000;
  bool ack_expired() const;
  // The progress thread was runnable but not running for `stolen`: moves every ACK deadline
  // by it. Needs the mutex.
  void account_stall(std::chrono::nanoseconds stolen);
  // After work done by a thread other than the progress thread (which re-arms its timer before
  // it sleeps): make sure the progress thread carries on when there is more to send, and that
  // its timer covers the earliest deadline. Needs the mutex.
  void hand_over(bool more);
  std::unique_lock<std::mutex> lock_for_progress(bool spins);
  // Marks the inbox before the progress thread sleeps (ShmInbox::prepare_sleep, under the
  // mutex); false when a slot arrived, and the thread must not sleep.
  bool inbox_will_sleep(bool spins);
  static constexpr int kLockSpins = 128;
  void take_kicks();
  // Returns how many datagrams it received (dropped ones included). `socket`: read the UDP
  // socket too (always on the UDP wire; on the shared-memory wire only the progress thread
  // does, woken by epoll, so that a polling program thread makes no system call).
  size_t receive_pass(bool* more_waiting, bool socket);
  // What arrived, from the inbox (VROCE_WIRE=shm) and the socket, into rx_; doorbells left out.
  size_t receive_datagrams(bool socket);
  bool more_datagrams() const noexcept;
  // Sends the datagrams: into the inboxes of peers on the shared-memory wire, the rest by UDP
  // (moved to the front of `datagrams`, in their order), then the doorbells of sleeping peers.
  // What a socket refused or a full ring lost counts as wire loss (PortXmitDiscards).
  void send_datagrams(packet_io::OutDatagram* datagrams, size_t count);
  void dispatch(uint8_t* data, size_t length, const sockaddr_storage& src,
                const sockaddr_storage& dst, uint8_t traffic_class);
  void transmit_pass();
  void flush_tx();
  void send_with_faults(size_t count);
  void send_held();
  void timer_pass(bool timeouts);
  Clock::time_point next_deadline(bool* any) const;
  // Makes sure the timerfd fires by `deadline` (when `any`), with as few timerfd_settime calls
  // as that takes; arm_timerfd arms it for exactly `deadline`.
  void cover_deadline(Clock::time_point deadline, bool any);
  void arm_timerfd(Clock::time_point deadline);
  uint8_t traffic_class_for(const TxSlot& slot) const noexcept;
  // A received packet carried ECN CE: count it and answer the sender's QP with a CNP, at most
  // one per QP every kCnpMinInterval (ConnectX's np_min_time_between_cnps).
  void on_congestion_experienced(Qp& qp);
  static constexpr std::chrono::microseconds kCnpMinInterval{4};
  // IP and UDP header octets of every datagram, for the port's data counters.
  size_t ip_udp_overhead() const noexcept;
  // The progress thread publishes the port counters once due (VROCE_SYSFS_ROOT).
  void publish_counters_if_due();

  DeviceState& device_;
  packet_io::PortCounters& port_counters_;
  packet_io::UdpPort port_;
  // VROCE_WIRE=shm: this device's inbox and the inboxes of the peers it sends to.
  std::unique_ptr<packet_io::ShmInbox> inbox_;
  packet_io::ShmPeers shm_peers_;
  packet_io::FaultInjector faults_;
  int epoll_fd_ = -1;
  packet_io::WakeFd wake_fd_;
  int timer_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  // While an ACK timer runs, the progress thread wakes at least this often; a gap between two
  // of its observations of the clock beyond kStallGap (when it was not asleep on purpose) is
  // time it was not scheduled, and does not count towards any ACK timeout.
  static constexpr std::chrono::milliseconds kHeartbeat{5};
  static constexpr std::chrono::microseconds kStallGap{1000};
  // At most this many ACK periods of scheduling delay are added to one ACK deadline, so a dead
  // peer fails after at most (retry_cnt + 1) x timeout x (1 + kMaxStallCredit).
  static constexpr int kMaxStallCredit = 8;
  // A spin iteration that took this long was preempted: no CPU is idle, stop spinning a while.
  static constexpr std::chrono::microseconds kSpinPreempted{200};
  static constexpr std::chrono::milliseconds kSpinBackoff{100};
  Clock::time_point spin_backoff_until_{};  // progress thread only

  // Kicks from threads that found the engine busy.
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> kick_pending_{false};
  // How long the progress thread spins after activity (VROCE_SPIN_US, or the default for the
  // CPUs this process may use; 0: it does not spin). Read once, here: it also decides whether
  // posting threads wait for the engine (below).
  const std::chrono::microseconds spin_;
  // Where the progress thread spins (spare CPUs), a posting thread that finds the engine taken
  // waits up to kKickWait for it (wait_for_engine) rather than leave its QP on the list, and the
  // progress thread lets such a waiter in before it takes the engine for another round
  // (let_kick_in). A program that spins on memory (ib_write_lat, NCCL's proxy) posts its reply
  // while the progress thread is still finishing the round that placed the WRITE it saw; handed
  // over through the list, the reply waited for that thread's next round, about 1 us more per
  // hop on 16 cores (docs/benchmarks-log.md, "A posting thread waits for the engine"). Without
  // spare CPUs (no spin) a holder may be off the CPU, and waiting would only burn the slice.
  static constexpr std::chrono::nanoseconds kKickWait{2000};
  std::atomic<int> kick_waiting_{0};  // posting threads in wait_for_engine
  // The progress thread sleeps with no port counter publication pending (VROCE_SYSFS_ROOT).
  std::atomic<bool> counters_unwatched_{false};
  std::mutex inbox_mutex_;
  std::vector<Qp*> kicked_;  // guarded by inbox_mutex_
  // What take_kicks swapped out of kicked_, kept so that neither vector gives its capacity
  // away: a kick then never allocates. Engine mutex.
  std::vector<Qp*> kicks_taken_;

  // Everything below is guarded by mutex_.
  std::mutex mutex_;
  Clock::time_point now_{};
  std::unordered_map<uint32_t, Qp*> qps_;  // by QPN
  std::vector<Qp*> all_qps_;
  std::vector<Qp*> active_;
  std::vector<TxSlot> tx_;  // kMaxBatch slots
  size_t tx_count_ = 0;
  std::vector<packet_io::TxPacket> tx_packets_;  // the batch as flush_tx hands it to gso_bursts_
  packet_io::GsoBursts gso_bursts_;
  std::vector<packet_io::OutDatagram> out_;
  std::deque<Delayed> delayed_;
  std::unique_ptr<Delayed> held_;          // a packet reordered behind the next one
  std::vector<packet_io::InDatagram> rx_;  // point into port_'s buffers
  std::vector<uint8_t> bounce_;
  // The ICRC header states of the flows sent and received on (wire/icrc.h).
  wire::IcrcHeaderCache icrc_cache_;
  Clock::time_point armed_deadline_{};
  bool timer_armed_ = false;
};

}  // namespace vroce::core
