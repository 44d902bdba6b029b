#include "core/engine.h"

#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "config/config.h"
#include "core/device_copies.h"
#include "core/device_state.h"
#include "core/protocol.h"
#include "core/qp.h"
#include "device/device.h"
#include "device/device_netns.h"
#include "packet_io/socket_address.h"
#include "util/log.h"
#include "wire/ecn.h"
#include "wire/ip_udp.h"

namespace vroce::core {
namespace {

// The largest datagram accepted; larger ones are dropped as oversize_datagram.
constexpr size_t kRxBufferSize = wire::kMaxPacketSize + 256;
// One receive batch per round: the ACKs a batch owes go out before the next batch is read, so a
// requester's window keeps moving while a long stream is received.
constexpr size_t kRxBatchesPerPass = 1;
constexpr size_t kTxBudgetPerQp = 64;
// Receive batches the progress thread reads at most before it declares an ACK timeout.
constexpr size_t kDrainBatches = 64;

// A spin-wait hint: lets the sibling hyperthread run, and costs nothing elsewhere.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

DropReason drop_reason(wire::ParseError error) {
  switch (error) {
    case wire::ParseError::Truncated:
      return DropReason::Truncated;
    case wire::ParseError::BadIcrc:
      return DropReason::BadIcrc;
    case wire::ParseError::BadTransportVersion:
      return DropReason::BadTransportVersion;
    case wire::ParseError::UnknownOpcode:
      return DropReason::UnknownOpcode;
    case wire::ParseError::BadPadCount:
      return DropReason::BadPadCount;
    case wire::ParseError::LengthMismatch:
      return DropReason::LengthMismatch;
    case wire::ParseError::PayloadTooLarge:
      return DropReason::PayloadTooLarge;
    case wire::ParseError::BadAethSyndrome:
    case wire::ParseError::Ok:
      break;
  }
  return DropReason::BadAethSyndrome;
}

PacketClass packet_class(const wire::OpcodeTraits& traits) {
  switch (traits.kind) {
    case wire::OpKind::Send:
      return PacketClass::Send;
    case wire::OpKind::Write:
      return PacketClass::Write;
    case wire::OpKind::ReadRequest:
      return PacketClass::ReadRequest;
    case wire::OpKind::ReadResponse:
      return PacketClass::ReadResponse;
    case wire::OpKind::Acknowledge:
      return PacketClass::Ack;
    default:
      return PacketClass::Other;
  }
}

timespec to_timespec(Clock::time_point t) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  if (ns < 1) {
    ns = 1;  // 0 would disarm the timer
  }
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(ns / 1000000000);
  ts.tv_nsec = static_cast<long>(ns % 1000000000);
  return ts;
}

}  // namespace

std::unique_ptr<Engine> Engine::start(DeviceState& device, int* error) {
  auto engine = std::make_unique<Engine>(device, config().faults);
  std::string message;
  int rc = engine->open(&message);
  if (rc != 0) {
    VROCE_LOG(Error, "%s", message.c_str());
    *error = rc;
    return nullptr;
  }
  // The address is ours now: no other process counts for this port until the engine stops.
  device.port_counters_engine_started();
  Engine* raw = engine.get();
  engine->thread_ = std::thread([raw] { raw->run(); });
  std::string name = "vroce-" + device.device().name();
  name.resize(std::min<size_t>(name.size(), 15));
  pthread_setname_np(engine->thread_.native_handle(), name.c_str());
  stats().live_engines.inc();
  return engine;
}

Engine::Engine(DeviceState& device, const FaultSpec& faults)
    : device_(device),
      port_counters_(device.port_counters()),
      faults_(faults),
      spin_(spin_after_activity_us()) {
  tx_.resize(packet_io::UdpPort::kMaxBatch);
  tx_packets_.resize(packet_io::UdpPort::kMaxBatch);
  out_.resize(packet_io::UdpPort::kMaxBatch * 3);
  rx_.resize(
      packet_io::UdpPort::kMaxBatch);  // datagrams per receive round, whether coalesced or not
  bounce_.resize(wire::kMaxPayload);
}

int Engine::open(std::string* message) {
  device::Device& dev = device_.device();
  int rc = 0;
  {
    const device::InDeviceNetns in_netns;  // the device's address is in the devices' namespace
    if (!in_netns.ok()) {
      *message = dev.name() + ": " + in_netns.error();
      return EPERM;
    }
    // GSO sends are formed only without fault injection (flush_tx); GRO works either way.
    rc = port_.open(dev.address(), dev.name(),
                    packet_io::UdpPort::Options{kRxBufferSize, config().gso}, message);
    if (rc == 0 && config().shm_wire) {
      rc = open_shm_wire(message);
    }
  }
  if (rc != 0) {
    return rc;
  }
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  int wake_rc = wake_fd_.open();
  timer_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (epoll_fd_ < 0 || wake_rc != 0 || timer_fd_ < 0) {
    int err = errno;
    *message = "device " + dev.name() +
               ": cannot create the progress thread's descriptors: " + std::strerror(err);
    return err;
  }
  for (int fd : {port_.fd(), wake_fd_.fd(), timer_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      int err = errno;
      *message = "epoll_ctl: " + std::string(std::strerror(err));
      return err;
    }
  }
  if (faults_.enabled()) {
    VROCE_LOG(Info, "device %s: fault injection active (VROCE_FAULTS)", dev.name().c_str());
  }
  return 0;
}

int Engine::open_shm_wire(std::string* message) {
  device::Device& dev = device_.device();
  std::string prefix = packet_io::shm_inbox_prefix(message);
  if (prefix.empty()) {
    *message = "device " + dev.name() + " (VROCE_WIRE=shm): " + *message;
    return EPERM;
  }
  auto inbox = std::make_unique<packet_io::ShmInbox>();
  int rc = inbox->open(prefix, dev.address(), message);
  if (rc != 0) {
    *message = "device " + dev.name() + " (VROCE_WIRE=shm): " + *message +
               "; or leave VROCE_WIRE unset to use UDP alone";
    return rc;
  }
  VROCE_LOG(Debug, "device %s: inbox %s", dev.name().c_str(), inbox->path().c_str());
  inbox_ = std::move(inbox);
  shm_peers_.open(std::move(prefix), dev.address(), dev.name());
  return 0;
}

Engine::~Engine() {
  if (thread_.joinable()) {
    stop_.store(true, std::memory_order_seq_cst);
    kick_pending_.store(true, std::memory_order_seq_cst);
    wake_fd_.wake();
    thread_.join();
    stats().live_engines.dec();
    device_.publish_port_counters(true);
  }
  for (int fd : {epoll_fd_, timer_fd_}) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
}

// ---- any thread --------------------------------------------------------------------------

int Engine::call(const std::function<int()>& fn) {
  std::lock_guard lock(mutex_);
  now_ = Clock::now();
  int rc = fn();
  flush_tx();
  hand_over(!active_.empty());
  return rc;
}

void Engine::add_qp(Qp* qp) {
  call([this, qp] {
    qps_[qp->ibv.qp_num] = qp;
    all_qps_.push_back(qp);
    qp->tp.registered = true;
    return 0;
  });
}

void Engine::remove_qp(Qp* qp) {
  call([this, qp] {
    qps_.erase(qp->ibv.qp_num);
    std::erase(all_qps_, qp);
    std::erase(active_, qp);
    qp->tp.active = false;
    qp->tp.registered = false;
    std::lock_guard lock(inbox_mutex_);
    std::erase(kicked_, qp);
    qp->kick_queued.store(false, std::memory_order_relaxed);
    return 0;
  });
  device_.publish_port_counters();
}

void Engine::kick(Qp* qp) noexcept {
  if (mutex_.try_lock() || (spin_.count() > 0 && wait_for_engine())) {
    // The engine is idle (or came free within the wait): transmit now from this thread, as a
    // doorbell would start the NIC.
    std::lock_guard lock(mutex_, std::adopt_lock);
    now_ = Clock::now();
    activate(qp);
    if (kick_pending_.exchange(false, std::memory_order_seq_cst)) {
      take_kicks();
    }
    transmit_pass();
    flush_tx();
    hand_over(!active_.empty());
    return;
  }
  // Someone holds the engine (for longer than the wait): leave the QP for them, and wake the
  // thread if it sleeps.
  if (!qp->kick_queued.exchange(true, std::memory_order_seq_cst)) {
    std::lock_guard lock(inbox_mutex_);
    kicked_.push_back(qp);
  }
  kick_pending_.store(true, std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_seq_cst)) {
    wake();
  }
}

bool Engine::wait_for_engine() noexcept {
  kick_waiting_.fetch_add(1, std::memory_order_seq_cst);
  const Clock::time_point until = Clock::now() + kKickWait;
  bool got = false;
  for (int i = 1; !got; ++i) {
    cpu_relax();
    got = mutex_.try_lock();
    if (!got && i % 8 == 0 && Clock::now() >= until) {
      break;
    }
  }
  kick_waiting_.fetch_sub(1, std::memory_order_seq_cst);
  (got ? stats().kick_waits : stats().kick_waits_expired).add();
  return got;
}

void Engine::let_kick_in() noexcept {
  if (kick_waiting_.load(std::memory_order_relaxed) == 0) [[likely]] {
    return;
  }
  // At most twice the poster's own bound, so that a poster preempted in the middle of its wait
  // holds this thread no longer than that.
  const Clock::time_point until = Clock::now() + 2 * kKickWait;
  while (kick_waiting_.load(std::memory_order_relaxed) > 0 && Clock::now() < until) {
    cpu_relax();
  }
}

void Engine::try_progress() noexcept {
  if (!mutex_.try_lock()) {
    return;  // another thread is making progress right now
  }
  std::lock_guard lock(mutex_, std::adopt_lock);
  // ACK timeouts are left to the progress thread, which knows whether it was scheduled.
  hand_over(pump(true, false));
}

void Engine::wake() noexcept {
  wake_fd_.wake();
}

void Engine::hand_over(bool more) {
  if (counters_unwatched_.load(std::memory_order_relaxed) &&
      counters_unwatched_.exchange(false, std::memory_order_seq_cst)) [[unlikely]] {
    wake();  // the sleeping progress thread publishes the port counters this work changed
  }
  if (more) {
    wake();  // more to send than one round: the progress thread carries on
    return;
  }
  bool any = false;
  Clock::time_point deadline = next_deadline(&any);
  cover_deadline(deadline, any);
}

// ---- the progress thread ---------------------------------------------------------------------

// What the progress thread carries from one pass of its loop to the next.
struct Engine::ProgressLoop {
  bool timer_fired = false;  // the timerfd was read: the next round clears timer_armed_
  Clock::time_point observed = Clock::now();  // the thread's last look at the clock
  // When to wake at the latest, and whether an ACK timer bounds the sleep: set by the last round
  // that held the engine (a round that found it taken leaves them as they were).
  Clock::time_point wake_by;
  bool bounded = false;
  // The spin saw the socket readable: the next round only takes a free engine.
  bool spun_into_arrival = false;
};

// What ended the wait between two runs of rounds: epoll's events, from the spin or the sleep.
struct Engine::Wait {
  epoll_event events[4];
  int n = 0;
  bool slept = false;     // the events came from the sleep, not from the spin
  bool in_inbox = false;  // a slot of the shared-memory wire was found filled
};

void Engine::run() {
  request_short_slice();
  ProgressLoop loop;
  while (!stop_.load(std::memory_order_relaxed)) {
    // Whether this pass ends in a spin (decided now: only the spin starts a backoff).
    const bool may_spin = spin_.count() > 0 && Clock::now() >= spin_backoff_until_;
    work_until_idle(loop, may_spin);
    publish_counters_if_due();
    Wait wait;
    spin_for_arrival(loop, wait, may_spin);
    if (wait.n == 0 && !wait.in_inbox && !kick_pending_.load(std::memory_order_seq_cst) &&
        !stop_.load(std::memory_order_relaxed)) {
      sleep_until_woken(loop, wait, may_spin);
    }
    take_wakeups(loop, wait);
  }
  count_progress_thread_cpu();
}

void Engine::work_until_idle(ProgressLoop& loop, bool may_spin) {
  bool more = true;
  while (more && !stop_.load(std::memory_order_relaxed)) {
    // The lock is given up between rounds, so posting and polling threads can get in.
    std::unique_lock<std::mutex> lock;
    if (loop.spun_into_arrival) {
      // An arrival found by spinning is taken at once if the engine is free: a program that
      // spins on memory (ib_write_lat) sees its WRITE without this thread first sleeping on
      // the mutex behind the program's own poll (perftest polls its send CQ until the ACK,
      // which is when the peer's WRITE follows). If a program thread holds the engine, it is
      // receiving what arrived: spin on instead of sleeping on the mutex, which would also
      // cost that thread a futex wake-up on its way out. docs/benchmarks-log.md, "An arrival
      // found by spinning".
      loop.spun_into_arrival = false;
      lock = std::unique_lock(mutex_, std::try_to_lock);
      if (!lock.owns_lock()) {
        return;
      }
    } else {
      let_kick_in();
      lock = lock_for_progress(may_spin);
    }
    if (loop.timer_fired) {
      timer_armed_ = false;
      loop.timer_fired = false;
    }
    Clock::time_point t = Clock::now();
    if (t - loop.observed > kStallGap) {
      account_stall(t - loop.observed);  // preempted between two rounds
    }
    loop.observed = t;
    more = pump(true, true);
    if (more) {
      continue;
    }
    // The last round prepares the wait, under the same lock.
    send_held();
    bool any = false;
    Clock::time_point deadline = next_deadline(&any);
    cover_deadline(deadline, any);
    // While an ACK timer runs the thread wakes at least every kHeartbeat, so that time it
    // spent runnable but not running is measured and not charged to the peer.
    loop.bounded = any_ack_timer();
    loop.wake_by = Clock::now() + kHeartbeat;
    if (any && deadline < loop.wake_by) {
      loop.wake_by = deadline;
    }
  }
}

// Spin: an arrival right after activity (the next packet of a ping-pong, a WRITE a program
// polls memory for) is handled within microseconds, without a wake-up. Only while a CPU is
// free for it: a spin that finds itself preempted means the machine has no idle core, where
// spinning only takes the CPU from the program (and a woken thread preempts a spinning one
// anyway), so spinning then stays off for kSpinBackoff.
void Engine::spin_for_arrival(ProgressLoop& loop, Wait& wait, bool may_spin) {
  Clock::time_point spin_end = Clock::now() + spin_;
  while (may_spin && !stop_.load(std::memory_order_relaxed) &&
         !kick_pending_.load(std::memory_order_seq_cst)) {
    if (inbox_ && inbox_->arrival()) {
      wait.in_inbox = true;  // one memory read, no system call
      break;
    }
    wait.n = ::epoll_wait(epoll_fd_, wait.events, 4, 0);
    Clock::time_point t = Clock::now();
    if (t - loop.observed > kStallGap) {
      std::unique_lock lock = lock_for_progress(may_spin);
      account_stall(t - loop.observed);
    }
    bool preempted = t - loop.observed > kSpinPreempted;
    loop.observed = t;
    if (preempted) {
      spin_backoff_until_ = t + kSpinBackoff;
      stats().spin_backoffs.add();
      break;
    }
    if (wait.n != 0 || t >= spin_end) {
      break;
    }
  }
}

void Engine::sleep_until_woken(ProgressLoop& loop, Wait& wait, bool may_spin) {
  wait.slept = true;
  sleeping_.store(true, std::memory_order_seq_cst);
  // On the shared-memory wire, senders ring the doorbell only once the inbox says this
  // thread sleeps; a slot filled before the mark is seen here instead (under the engine
  // mutex, which the inbox's reading end needs).
  if (inbox_ && !inbox_will_sleep(may_spin)) {
    wait.in_inbox = true;
  } else if (!kick_pending_.load(std::memory_order_seq_cst) &&
             !stop_.load(std::memory_order_seq_cst)) {
    wait.n = ::epoll_wait(epoll_fd_, wait.events, 4, sleep_timeout_ms(loop));
  }
  if (inbox_) {
    inbox_->end_sleep();
  }
  sleeping_.store(false, std::memory_order_seq_cst);
  Clock::time_point t = Clock::now();
  // Woken later than the ACK deadline or the heartbeat asked: the thread was runnable and
  // did not run (an earlier socket or eventfd wake-up only makes this an underestimate).
  if (loop.bounded && t - loop.wake_by > kStallGap) {
    std::unique_lock lock = lock_for_progress(may_spin);
    account_stall(t - loop.wake_by);
  }
  loop.observed = t;
}

int Engine::sleep_timeout_ms(const ProgressLoop& loop) {
  int timeout_ms = -1;
  if (loop.bounded) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(loop.wake_by - Clock::now());
    timeout_ms = static_cast<int>(std::max<int64_t>(left.count(), 0));
  }
  // Counts changed since they were last published: wake in time to publish them. With
  // nothing pending, the next thread that works in the engine wakes this one (hand_over),
  // since posting and polling threads change the counts too. The mark is set before the
  // check, so a change after the check always finds it.
  if (device_.publishes_port_counters()) {
    counters_unwatched_.store(true, std::memory_order_seq_cst);
    if (auto due = device_.port_counters_due()) {
      counters_unwatched_.store(false, std::memory_order_relaxed);
      auto left = std::chrono::ceil<std::chrono::milliseconds>(*due - Clock::now());
      int counters_ms = static_cast<int>(std::max<int64_t>(left.count(), 0));
      timeout_ms = timeout_ms < 0 ? counters_ms : std::min(timeout_ms, counters_ms);
    }
  }
  return timeout_ms;
}

void Engine::take_wakeups(ProgressLoop& loop, const Wait& wait) {
  bool arrival = wait.in_inbox;
  bool woken = false;
  for (int i = 0; i < wait.n; ++i) {
    uint64_t value;
    if (wait.events[i].data.fd == port_.fd()) {
      arrival = true;
    } else if (wait.events[i].data.fd == wake_fd_.fd()) {
      wake_fd_.consume();
      woken = true;
    } else if (wait.events[i].data.fd == timer_fd_) {
      [[maybe_unused]] ssize_t r = ::read(timer_fd_, &value, sizeof(value));
      loop.timer_fired = true;
    }
  }
  // Only a bare arrival may be left to a program thread that holds the engine: that thread
  // receives it. A wake-up (work handed over, hand_over) or a fired timer is this thread's
  // alone, and its eventfd or timerfd has just been read, so the next round must run.
  loop.spun_into_arrival = !wait.slept && arrival && !woken && !loop.timer_fired;
}

// What the progress thread cost, for the counters (the CPU price of spinning).
void Engine::count_progress_thread_cpu() {
  timespec cpu{};
  if (::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0) {
    stats().progress_thread_cpu_us.add(static_cast<uint64_t>(cpu.tv_sec) * 1'000'000 +
                                       static_cast<uint64_t>(cpu.tv_nsec) / 1000);
  }
}

std::unique_lock<std::mutex> Engine::lock_for_progress(bool spins) {
  // Without a spin (fewer than 4 CPUs), the progress thread does not sleep on the mutex while a
  // posting or polling thread holds it: that thread would pay a futex wake-up on its way out, in
  // the middle of its ping-pong (strace -c of ib_send_lat: 0.77 per message). Holders never
  // block inside, so the wait is short: a few pauses, then yields (which give the CPU to the
  // holder), and only then the blocking lock. Where it spins, a CPU is free for the wake-up, and
  // the sleeping waiter stays out of the way of the program thread that is making progress:
  // taking the lock the moment it is free moved the receive from the polling program to this
  // thread and cost ib_send_lat 3 us on 16 cores.
  if (spins) {
    return std::unique_lock(mutex_);
  }
  std::unique_lock lock(mutex_, std::try_to_lock);
  for (int i = 0; !lock.owns_lock() && i < kLockSpins; ++i) {
    if (i < kLockSpins / 2) {
      cpu_relax();
    } else {
      sched_yield();
    }
    lock.try_lock();
  }
  if (!lock.owns_lock()) {
    lock.lock();
  }
  return lock;
}

void Engine::publish_counters_if_due() {
  if (auto due = device_.port_counters_due(); due && Clock::now() >= *due) {
    device_.publish_port_counters();
  }
}

size_t Engine::ip_udp_overhead() const noexcept {
  return port_.family() == AF_INET ? 20 + 8 : 40 + 8;
}

void Engine::request_short_slice() {
  // A NIC works beside the host's threads, not behind them. Under EEVDF (Linux 6.6+) a woken
  // thread preempts the running one only if its virtual deadline is earlier, and the deadline
  // is one time slice away: asking for the shortest slice (sched_attr.sched_runtime, honoured for
  // SCHED_OTHER since Linux 6.12, no privilege needed) lets the progress thread, woken by an
  // arrival, run at once instead of after the slice of a thread that spins on memory. Its CPU
  // share is unchanged. Older kernels ignore or refuse it, which changes nothing else.
  struct {
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime;
    uint64_t sched_deadline;
    uint64_t sched_period;
  } attr{};
  attr.size = sizeof(attr);
  attr.sched_policy = SCHED_OTHER;
  errno = 0;
  attr.sched_nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
  attr.sched_runtime = kSchedSliceNs;
  if (errno != 0 || ::syscall(SYS_sched_setattr, 0, &attr, 0) != 0) {
    VROCE_LOG(Debug, "progress thread of %s keeps the default time slice: %s",
              device_.device().name().c_str(), std::strerror(errno));
  }
}

bool Engine::inbox_will_sleep(bool spins) {
  std::unique_lock lock = lock_for_progress(spins);
  return inbox_->prepare_sleep();
}

bool Engine::any_ack_timer() const {
  for (const Qp* qp : all_qps_) {
    if (qp->tp.req.ack_timer_armed) {
      return true;
    }
  }
  return false;
}

void Engine::account_stall(std::chrono::nanoseconds stolen) {
  // ACK deadlines move by the time the engine could not run: a NIC's timers and ACK generation
  // never stop, so neither may vroce charge the peer for its own scheduling delays. The credit
  // of one ACK period is capped at kMaxStallCredit periods: on a host so loaded that nearly every
  // step of the engine comes late, uncapped credit would move the deadline as fast as the clock
  // and a dead peer would never fail.
  stats().scheduling_stalls.add();
  for (Qp* qp : all_qps_) {
    Requester& r = qp->tp.req;
    if (!r.ack_timer_armed) {
      continue;
    }
    const std::chrono::nanoseconds cap = r.ack_period * kMaxStallCredit;
    const std::chrono::nanoseconds credit = std::min<std::chrono::nanoseconds>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(stolen), cap - r.ack_stall_credit);
    if (credit.count() > 0) {
      r.ack_deadline += credit;
      r.ack_stall_credit += credit;
    }
  }
}

bool Engine::pump(bool receive, bool timeouts) {
  now_ = Clock::now();
  if (kick_pending_.exchange(false, std::memory_order_seq_cst)) {
    take_kicks();
  }
  bool more_waiting = false;
  if (receive) {
    // Only the progress thread (the one that declares timeouts) reads the socket on the
    // shared-memory wire.
    const bool socket = timeouts || !inbox_;
    size_t received = receive_pass(&more_waiting, socket);
    // An ACK timeout is declared only with the socket drained: what arrived while this thread
    // waited to run is not lost.
    for (size_t batch = 0; timeouts && more_waiting && batch < kDrainBatches && ack_expired();
         ++batch) {
      more_waiting = false;
      received += receive_pass(&more_waiting, socket);
    }
    // Work on what arrived took time; a poll that found nothing did not (it is most polls of a
    // busy-polling program, and a clock read is a good part of what it costs).
    if (received > 0) {
      now_ = Clock::now();
    }
  }
  timer_pass(timeouts);
  transmit_pass();
  flush_tx();
  // Only work left right now counts: waking the progress thread for a drained socket would
  // cost a context switch per packet while a program busy-polls.
  return more_waiting || !active_.empty();
}

void Engine::take_kicks() {
  {
    std::lock_guard lock(inbox_mutex_);
    kicks_taken_.swap(kicked_);
  }
  for (Qp* qp : kicks_taken_) {
    qp->kick_queued.store(false, std::memory_order_seq_cst);
    activate(qp);
  }
  kicks_taken_.clear();
}

void Engine::send_held() {
  if (!held_) {
    return;
  }
  // A packet held back for reordering goes out when nothing follows it.
  packet_io::OutDatagram d{held_->data.data(), held_->data.size(),   &held_->dst,
                           held_->dst_len,     held_->traffic_class, held_->hop_limit};
  send_datagrams(&d, 1);
  held_.reset();
}

void Engine::activate(Qp* qp) noexcept {
  if (!qp->tp.active && qp->tp.registered) {
    qp->tp.active = true;
    active_.push_back(qp);
  }
}

size_t Engine::receive_pass(bool* more_waiting, bool socket) {
  size_t received = 0;
  for (size_t pass = 0; pass < kRxBatchesPerPass; ++pass) {
    size_t n = receive_datagrams(socket);
    if (n == 0) {
      return received;
    }
    received += n;
    // A full batch may have left more in the socket, or a coalesced one more datagrams.
    *more_waiting = more_datagrams();
    // A port taken DOWN by an injected PORT_ERR has no link: nothing reaches it until
    // PORT_ACTIVE (the peer's requester retransmits, as over a real link flap).
    if (device_.device().port_state() == IBV_PORT_DOWN) [[unlikely]] {
      stats().drops[static_cast<size_t>(DropReason::LinkDown)].add(n);
      n = 0;
    }
    for (size_t i = 0; i < n; ++i) {
      packet_io::InDatagram& d = rx_[i];
      port_counters_.add(packet_io::PortCounter::PortRcvPackets);
      port_counters_.add(packet_io::PortCounter::PortRcvData, d.length + ip_udp_overhead());
      if (d.truncated) {
        stats().count_drop(DropReason::OversizeDatagram);
        port_counters_.add(packet_io::PortCounter::PortRcvErrors);
        continue;
      }
      if (!d.dst_known) {
        stats().count_drop(DropReason::BadSource);
        continue;
      }
      dispatch(d.data, d.length, *d.src, *d.dst, d.traffic_class);
    }
    if (!more_datagrams()) {
      return received;
    }
  }
  return received;
}

size_t Engine::receive_datagrams(bool socket) {
  if (!inbox_) {
    return port_.receive(rx_);
  }
  size_t n = inbox_->receive(rx_);
  if (n == rx_.size() || !socket) {
    return n;
  }
  const size_t end = n + port_.receive(std::span(rx_).subspan(n));
  // Empty datagrams are the doorbells of senders on the shared-memory wire: their only job was
  // to wake this thread. Never a RoCE packet, so nothing is lost by leaving them out.
  for (size_t i = n; i < end; ++i) {
    if (rx_[i].length == 0 && !rx_[i].truncated) {
      continue;
    }
    rx_[n++] = rx_[i];
  }
  return n;
}

bool Engine::more_datagrams() const noexcept {
  return port_.more_waiting() || (inbox_ && inbox_->arrival());
}

void Engine::send_datagrams(packet_io::OutDatagram* datagrams, size_t count) {
  size_t lost = 0;
  size_t by_udp = count;
  if (inbox_) {
    by_udp = 0;
    for (size_t i = 0; i < count; ++i) {
      if (!shm_peers_.deliver(datagrams[i], &lost)) {
        datagrams[by_udp++] = datagrams[i];
      }
    }
  }
  size_t refused = 0;
  if (by_udp > 0) {
    port_.send(datagrams, by_udp, &refused);
  }
  if (inbox_) {
    shm_peers_.ring_doorbells([this](const sockaddr_storage& address, socklen_t length) {
      packet_io::OutDatagram bell{nullptr, 0, &address, length, 0, 64};
      size_t ignored = 0;
      port_.send(&bell, 1, &ignored);
      stats().shm_doorbells.add();
    });
  }
  stats().drops[static_cast<size_t>(DropReason::TxSocketError)].add(refused);
  port_counters_.add(packet_io::PortCounter::PortXmitDiscards, refused + lost);
}

void Engine::dispatch(uint8_t* data, size_t length, const sockaddr_storage& src,
                      const sockaddr_storage& dst, uint8_t traffic_class) {
  auto flow = wire::flow_from_sockaddrs(reinterpret_cast<const sockaddr&>(src),
                                        reinterpret_cast<const sockaddr&>(dst));
  if (!flow) {
    stats().count_drop(DropReason::BadSource);
    return;
  }
  wire::ParseOptions options;
  options.flow = *flow;
  options.icrc_cache = &icrc_cache_;
  wire::ParseResult parsed = wire::parse_packet(wire::ByteSpan(data, length), options);
  if (!parsed.ok()) {
    stats().count_drop(drop_reason(parsed.error));
    port_counters_.add(packet_io::PortCounter::PortRcvErrors);
    VROCE_LOG(Debug, "dropped a packet: %.*s (%.*s)",
              static_cast<int>(wire::parse_error_name(parsed.error).size()),
              wire::parse_error_name(parsed.error).data(),
              static_cast<int>(wire::parse_error_hint(parsed.error).size()),
              wire::parse_error_hint(parsed.error).data());
    return;
  }
  const wire::PacketView& view = parsed.view;
  const wire::OpcodeTraits& traits = *view.traits;
  stats().rx_packets[static_cast<size_t>(packet_class(traits))].add();
  bool congestion_experienced = wire::ecn_bits(traffic_class) == wire::kEcnCe;
  if (congestion_experienced) {
    stats().ecn_marked_received.add();
    port_counters_.add(packet_io::PortCounter::NpEcnMarkedRocePackets);
  }
  auto it = qps_.find(view.headers.bth.dest_qp);
  if (it == qps_.end()) {
    stats().count_drop(DropReason::UnknownQpn);
    return;
  }
  Qp& qp = *it->second;
  if (traits.kind == wire::OpKind::Cnp) {
    // The reaction point: counted, no rate reduction (vroce has no DCQCN; docs/vroce.md).
    stats().cnps_received.add();
    port_counters_.add(packet_io::PortCounter::RpCnpHandled);
    return;
  }
  ibv_qp_state state = qp.state.load(std::memory_order_relaxed);
  bool request = traits.direction == wire::Direction::Request;
  bool ready = request ? (state == IBV_QPS_RTR || state == IBV_QPS_RTS || state == IBV_QPS_SQD)
                       : (state == IBV_QPS_RTS || state == IBV_QPS_SQD);
  if (!ready) {
    stats().count_drop(DropReason::QpNotReady);
    return;
  }
  if (!packet_io::same_ip(src, qp.tp.path.addr)) {
    stats().count_drop(DropReason::WrongPeer);
    return;
  }
  stats().rx_payload_bytes.add(view.payload.size());
  if (congestion_experienced) {
    on_congestion_experienced(qp);
  }
  if (request) {
    responder_on_request(*this, qp, view);
  } else {
    requester_on_response(*this, qp, view);
  }
  activate(&qp);
}

void Engine::transmit_pass() {
  // Visit each QP once; QPs that still have work stay on the list for the next pass.
  size_t count = active_.size();
  size_t kept = 0;
  for (size_t i = 0; i < count; ++i) {
    Qp* qp = active_[i];
    size_t budget = kTxBudgetPerQp;
    bool more = false;
    ibv_qp_state state = qp->state.load(std::memory_order_relaxed);
    if (state == IBV_QPS_ERR) {
      flush_queues(*qp);
    } else {
      if (state == IBV_QPS_RTR || state == IBV_QPS_RTS || state == IBV_QPS_SQD) {
        more |= responder_transmit(*this, *qp, &budget);
      }
      if (state == IBV_QPS_RTS || state == IBV_QPS_SQD) {
        more |= requester_transmit(*this, *qp, &budget);
      }
    }
    if (more) {
      active_[kept++] = qp;
    } else {
      qp->tp.active = false;
    }
  }
  // QPs activated during the pass (by completions of others) were appended after `count`.
  for (size_t i = count; i < active_.size(); ++i) {
    active_[kept++] = active_[i];
  }
  active_.resize(kept);
}

bool Engine::emit(const Qp& qp, const wire::PacketHeaders& headers,
                  std::span<const wire::ByteSpan> payload, const TxMeta& meta) {
  if (tx_count_ == tx_.size()) {
    flush_tx();
  }
  TxSlot& slot = tx_[tx_count_];
  wire::BuildResult built =
      wire::build_packet(headers, payload, qp.tp.path.flow, slot.data, &icrc_cache_);
  if (!built.ok()) {
    auto name = wire::build_error_name(built.error);
    VROCE_LOG(Error, "qp 0x%x: cannot build opcode 0x%02x: %.*s (a vroce bug)", qp.ibv.qp_num,
              headers.bth.opcode, static_cast<int>(name.size()), name.data());
    return false;
  }
  slot.length = built.size;
  slot.path = &qp.tp.path;
  slot.meta = meta;
  ++tx_count_;
  Stats& s = stats();
  s.tx_packets[static_cast<size_t>(meta.cls)].add();
  s.tx_payload_bytes.add(meta.payload);
  port_counters_.add(packet_io::PortCounter::PortXmitPackets);
  port_counters_.add(packet_io::PortCounter::PortXmitData, built.size + ip_udp_overhead());
  if (meta.retransmission) {
    s.retransmitted_packets.add();
  }
  return true;
}

uint8_t Engine::traffic_class_for(const TxSlot& slot) const noexcept {
  const auto& override_tc = config().tc_override;
  uint8_t tclass = override_tc ? *override_tc : slot.path->traffic_class;
  // A CNP is sent not ECN-capable, so no switch marks (or drops it for) congestion.
  return slot.meta.cnp ? static_cast<uint8_t>(tclass & ~wire::kEcnMask) : tclass;
}

void Engine::on_congestion_experienced(Qp& qp) {
  Responder& s = qp.tp.resp;
  if (s.cnp_sent && now_ - s.last_cnp < kCnpMinInterval) {
    return;
  }
  s.cnp_sent = true;
  s.last_cnp = now_;
  TxMeta meta;
  meta.dest_qpn = qp.tp.path.dest_qpn;
  meta.cnp = true;
  if (emit(qp, wire::make_cnp_headers(qp.tp.path.dest_qpn), {}, meta)) {
    stats().cnps_sent.add();
    port_counters_.add(packet_io::PortCounter::NpCnpSent);
  }
}

void Engine::flush_tx() {
  // No packet leaves, an ACK above all, before the bytes received so far are in device memory.
  flush_device_writes();
  if (tx_count_ == 0) {
    return;
  }
  if (device_.device().port_state() == IBV_PORT_DOWN) [[unlikely]] {  // no link: see receive_pass
    stats().drops[static_cast<size_t>(DropReason::LinkDown)].add(tx_count_);
    port_counters_.add(packet_io::PortCounter::PortXmitDiscards, tx_count_);
  } else if (faults_.enabled()) {
    send_with_faults(tx_count_);
  } else {
    for (size_t i = 0; i < tx_count_; ++i) {
      TxSlot& slot = tx_[i];
      tx_packets_[i] = packet_io::TxPacket{slot.data,
                                           slot.length,
                                           &slot.path->addr,
                                           slot.path->addr_len,
                                           traffic_class_for(slot),
                                           slot.path->hop_limit};
    }
    // Runs of packets become UDP GSO sends (packet_io/gso_burst.h), the rest single datagrams.
    size_t messages =
        gso_bursts_.form(std::span(tx_packets_.data(), tx_count_), port_.gso(), out_.data());
    send_datagrams(out_.data(), messages);
  }
  tx_count_ = 0;
}

void Engine::send_with_faults(size_t count) {
  size_t n = 0;
  Stats& s = stats();
  auto push_held = [&] {
    if (held_) {
      out_[n++] =
          packet_io::OutDatagram{held_->data.data(), held_->data.size(),   &held_->dst,
                                 held_->dst_len,     held_->traffic_class, held_->hop_limit};
    }
  };
  std::vector<std::unique_ptr<Delayed>> released;  // held packets queued in out_, kept alive
  for (size_t i = 0; i < count; ++i) {
    TxSlot& slot = tx_[i];
    packet_io::FaultVerdict verdict =
        faults_.decide(slot.meta.dest_qpn, slot.meta.psn,
                       slot.meta.cls != PacketClass::Ack && !slot.meta.cnp, slot.meta.request);
    if (verdict.drop) {
      s.count_fault(FaultKind::Drop);
      continue;
    }
    if (verdict.corrupt) {
      s.count_fault(FaultKind::Corrupt);
      slot.data[packet_io::FaultInjector::corrupt_offset(slot.length)] ^= 0x5A;
    }
    uint8_t tclass = traffic_class_for(slot);
    if (verdict.ecn_mark) {
      // A congested queue marks ECN-capable packets CE and leaves the others alone (it would
      // drop them instead, which the drop faults model).
      if (wire::ecn_bits(tclass) == wire::kEcnNotEct) {
        s.count_fault(FaultKind::EcnNotEct);
      } else {
        s.count_fault(FaultKind::EcnMark);
        tclass = static_cast<uint8_t>(tclass | wire::kEcnCe);
      }
    }
    if (faults_.delay_us() > 0 || (verdict.reorder && !held_)) {
      auto copy = std::make_unique<Delayed>();
      copy->data.assign(slot.data, slot.data + slot.length);
      std::memcpy(&copy->dst, &slot.path->addr, sizeof(sockaddr_storage));
      copy->dst_len = slot.path->addr_len;
      copy->traffic_class = tclass;
      copy->hop_limit = slot.path->hop_limit;
      if (verdict.reorder && !held_) {
        s.count_fault(FaultKind::Reorder);
        held_ = std::move(copy);
        continue;
      }
      s.count_fault(FaultKind::Delay);
      copy->due = now_ + std::chrono::microseconds(faults_.delay_us());
      int copies = verdict.duplicate ? 2 : 1;
      if (verdict.duplicate) {
        s.count_fault(FaultKind::Duplicate);
      }
      for (int c = 0; c < copies; ++c) {
        delayed_.push_back(*copy);
      }
      continue;
    }
    packet_io::OutDatagram out{slot.data,           slot.length, &slot.path->addr,
                               slot.path->addr_len, tclass,      slot.path->hop_limit};
    out_[n++] = out;
    if (verdict.duplicate) {
      s.count_fault(FaultKind::Duplicate);
      out_[n++] = out;
    }
    if (held_) {
      push_held();
      released.push_back(std::move(held_));
    }
  }
  send_datagrams(out_.data(), n);
}

bool Engine::ack_expired() const {
  auto t = Clock::now();
  for (const Qp* qp : all_qps_) {
    if (qp->tp.req.ack_timer_armed && t >= qp->tp.req.ack_deadline) {
      return true;
    }
  }
  return false;
}

void Engine::timer_pass(bool timeouts) {
  for (Qp* qp : all_qps_) {
    requester_on_timer(*this, *qp, timeouts);
  }
  size_t due = 0;
  while (!delayed_.empty() && delayed_.front().due <= now_) {
    const Delayed& d = delayed_.front();
    packet_io::OutDatagram out{d.data.data(), d.data.size(),   &d.dst,
                               d.dst_len,     d.traffic_class, d.hop_limit};
    send_datagrams(&out, 1);
    delayed_.pop_front();
    ++due;
  }
}

Clock::time_point Engine::next_deadline(bool* any) const {
  Clock::time_point best{};
  *any = false;
  auto consider = [&](Clock::time_point t) {
    if (!*any || t < best) {
      best = t;
      *any = true;
    }
  };
  for (const Qp* qp : all_qps_) {
    Clock::time_point t;
    if (requester_deadline(*qp, &t)) {
      consider(t);
    }
  }
  if (!delayed_.empty()) {
    consider(delayed_.front().due);
  }
  return best;
}

void Engine::cover_deadline(Clock::time_point deadline, bool any) {
  // A timer that fires no later than the deadline is enough: one armed for an earlier deadline
  // is left alone (its wake-up finds the deadline not due yet and arms for it then), and one
  // left armed with no deadline at all costs one spare wake-up. So a ping-pong, whose every
  // message arms an ACK timer that its ACK stops again, pays no timerfd_settime per message
  // (it paid two: one to arm, one to disarm before each sleep), only one wake-up per ACK period.
  if (any && (!timer_armed_ || deadline < armed_deadline_)) {
    arm_timerfd(deadline);
  }
}

void Engine::arm_timerfd(Clock::time_point deadline) {
  itimerspec spec{};
  spec.it_value = to_timespec(deadline);
  ::timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr);
  armed_deadline_ = deadline;
  timer_armed_ = true;
}

}  // namespace vroce::core
