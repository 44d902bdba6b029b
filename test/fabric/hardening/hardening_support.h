// Shared by the hardening tests: vroce's counters read through its exported hook, the process's
// resident memory, the retry budget of a QP, and many comm pairs between two in-process devices
// driven by the fabric suite's traffic helpers (one thread per side and comm). Test support only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "child_process.h"
#include "plugin_driver.h"
#include "traffic.h"

namespace roce::test {

// vroce_stats_json() of the libibverbs.so.1 the plugin loaded (NCCL_IBVERBS_LIB); throws when
// it is not loaded or not vroce.
std::string vroce_stats();
// A counter of that JSON by dotted path ("retransmitted_packets", "faults_injected.drop",
// "live.qps"); throws when absent, so a renamed counter fails the test instead of reading 0.
int64_t vroce_stat(const std::string& json, const std::string& path);

// vroce_inject_port_event (VROCE_PRIVATE_1.0) of the libibverbs.so.1 the plugin loaded: raises
// `event_type` (IBV_EVENT_PORT_ERR, _PORT_ACTIVE, _DEVICE_FATAL, ...) on every open context of
// `device`; returns how many received it. Throws when vroce is not loaded.
int inject_port_event(const char* device, int event_type);

// Whether a WARN line logged since reset_warn_count() contains `a` (and `b`, when given).
bool warned(const std::string& a, const std::string& b = {});

// The whole content of a file ("" when it cannot be read).
std::string read_text_file(const std::string& path);

// VmRSS of this process in KiB.
long rss_kib();

// The memory a bound on this process's growth should measure, in KiB: VmRSS, except in a
// sanitizer build, whose allocator keeps freed blocks resident on purpose (AddressSanitizer's
// quarantine holds up to 256 MiB of them), so that RSS grows with everything ever allocated;
// there the allocator's count of the bytes still allocated.
long memory_in_use_kib();

// Worst-case time before a QP with nothing coming back reports IBV_WC_RETRY_EXC_ERR: the first
// transmission and retry_cnt retries each wait one local ACK timeout of
// 4.096 us * 2^timeout * VROCE_TIME_SCALE.
double retry_budget_ms(int ib_timeout, int retry_cnt, double time_scale);

// The index of the plugin's device named `name`; fails the running test case when there is none.
int require_device(PluginDriver& plugin, const char* name);

// The listen handle a fabric_peer receiver prints ("HANDLE <hex>"), waiting at most the hang
// bound; fails the running test case, showing the peer's output, when none comes.
Handle handle_printed_by(ChildProcess& peer);

// The first message of a fabric_peer receiver's plan (`seed`, `groups` groups of one receive
// each, as --max-recvs 1 runs it), and a buffer of its send size (at least 1 byte) registered on
// `send_comm`: the send that peer has cleared first.
struct FirstSend {
  PlannedMessage message;
  std::vector<uint8_t> buffer;
  void* mh = nullptr;
};
FirstSend register_first_send(PluginDriver& plugin, void* send_comm, uint64_t seed, int groups);

// Tests `request` until it fails or completes, at most the hang bound. Returns the last result;
// *done says whether the request completed.
ncclResult_t test_until_settled(PluginDriver& plugin, void* request, int* done);

struct CommPair {
  void* send = nullptr;
  void* recv = nullptr;
};

// Opens `count` connections from device `from` to device `to` (one listener each, connect and
// accept on two threads). Fails the running test case on any error.
std::vector<CommPair> open_pairs(PluginDriver& plugin, int from, int to, int count);

struct PairRun {
  TrafficResult sent;
  TrafficResult received;
};

// Runs the traffic plan on every pair at once (seed base + index), a sender and a receiver
// thread per pair; each side closes its comm when done, as run_sender/run_receiver do, the
// receiver only once its sender is closing (NCCL's ranks barrier before they close).
std::vector<PairRun> run_pairs(PluginDriver& plugin, const std::vector<CommPair>& pairs,
                               uint64_t seed_base, const PlanShape& shape,
                               const TrafficOptions& options);

// A short sleep: the idle hook for many comm threads on few cores.
void nap();
// Traffic options whose idle hook is nap().
TrafficOptions napping();

}  // namespace roce::test
