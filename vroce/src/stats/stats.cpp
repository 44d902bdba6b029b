#include "stats/stats.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "config/config.h"
#include "util/log.h"

namespace vroce {
namespace {

constexpr const char* kPacketClassNames[] = {"send",          "write", "read_request",
                                             "read_response", "ack",   "other"};
static_assert(std::size(kPacketClassNames) == static_cast<size_t>(PacketClass::kCount));

constexpr const char* kNakNames[] = {"psn_sequence", "invalid_request", "remote_access",
                                     "remote_operational"};
static_assert(std::size(kNakNames) == static_cast<size_t>(NakKind::kCount));

constexpr const char* kDropNames[] = {
    "truncated",         "bad_icrc",        "bad_transport_version", "unknown_opcode",
    "bad_pad_count",     "length_mismatch", "payload_too_large",     "bad_aeth_syndrome",
    "oversize_datagram", "bad_source",      "unknown_qpn",           "qp_not_ready",
    "wrong_peer",        "psn_gap_repeat",  "unexpected_response",   "unsupported_opcode",
    "tx_socket_error",   "link_down"};
static_assert(std::size(kDropNames) == static_cast<size_t>(DropReason::kCount));

constexpr const char* kFaultNames[] = {"drop",  "duplicate", "corrupt",    "reorder",
                                       "delay", "ecn_mark",  "ecn_not_ect"};
static_assert(std::size(kFaultNames) == static_cast<size_t>(FaultKind::kCount));

// ibv_wc_status values in order; names follow the enum (lower case, without IBV_WC_).
constexpr const char* kWcNames[] = {"success",
                                    "loc_len_err",
                                    "loc_qp_op_err",
                                    "loc_eec_op_err",
                                    "loc_prot_err",
                                    "wr_flush_err",
                                    "mw_bind_err",
                                    "bad_resp_err",
                                    "loc_access_err",
                                    "rem_inv_req_err",
                                    "rem_access_err",
                                    "rem_op_err",
                                    "retry_exc_err",
                                    "rnr_retry_exc_err",
                                    "loc_rdd_viol_err",
                                    "rem_inv_rd_req_err",
                                    "rem_abort_err",
                                    "inv_eecn_err",
                                    "inv_eec_state_err",
                                    "fatal_err",
                                    "resp_timeout_err",
                                    "general_err",
                                    "tm_err",
                                    "tm_rndv_incomplete"};
static_assert(std::size(kWcNames) == kWcStatusCount);

template <size_t N>
void append_group(std::string& out, const char* name, const Counter (&counters)[N],
                  const char* const (&names)[N]) {
  out += '"';
  out += name;
  out += "\":{";
  for (size_t i = 0; i < N; ++i) {
    char buf[96];
    std::snprintf(buf, sizeof(buf), "%s\"%s\":%" PRIu64, i == 0 ? "" : ",", names[i],
                  counters[i].get());
    out += buf;
  }
  out += "},";
}

void append_value(std::string& out, const char* name, uint64_t value) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "\"%s\":%" PRIu64 ",", name, value);
  out += buf;
}

void append_gauge(std::string& out, const char* name, int64_t value) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "\"%s\":%" PRId64 ",", name, value);
  out += buf;
}

// Writes VROCE_STATS_FILE when the process exits, so a test can read the counters of a program
// it did not write (ibv_rc_pingpong, NCCL).
struct ExitWriter {
  ~ExitWriter() {
    const auto& file = config().stats_file;
    if (!file) {
      return;
    }
    std::FILE* f = std::fopen(file->c_str(), "w");
    if (f == nullptr) {
      VROCE_LOG(Error, "VROCE_STATS_FILE=%s: cannot open for writing: %s", file->c_str(),
                std::strerror(errno));
      return;
    }
    std::string json = stats_json();
    std::fputs(json.c_str(), f);
    std::fputc('\n', f);
    std::fclose(f);
  }
};

}  // namespace

Stats& stats() noexcept {
  static Stats instance;
  // Constructed after `instance`, so destroyed before it: the file is written while the
  // counters still exist.
  static ExitWriter writer;
  return instance;
}

std::string stats_json() {
  const Stats& s = stats();
  std::string out = "{";
  append_group(out, "tx_packets", s.tx_packets, kPacketClassNames);
  append_group(out, "rx_packets", s.rx_packets, kPacketClassNames);
  append_value(out, "tx_payload_bytes", s.tx_payload_bytes.get());
  append_value(out, "rx_payload_bytes", s.rx_payload_bytes.get());
  append_value(out, "retransmitted_packets", s.retransmitted_packets.get());
  append_value(out, "ack_timeouts", s.ack_timeouts.get());
  append_value(out, "scheduling_stalls", s.scheduling_stalls.get());
  append_value(out, "spin_backoffs", s.spin_backoffs.get());
  append_value(out, "kick_waits", s.kick_waits.get());
  append_value(out, "kick_waits_expired", s.kick_waits_expired.get());
  append_value(out, "progress_thread_cpu_us", s.progress_thread_cpu_us.get());
  append_value(out, "gso_sends", s.gso_sends.get());
  append_value(out, "gso_segments", s.gso_segments.get());
  append_value(out, "gro_buffers", s.gro_buffers.get());
  append_value(out, "gro_segments", s.gro_segments.get());
  append_value(out, "shm_sent", s.shm_sent.get());
  append_value(out, "shm_received", s.shm_received.get());
  append_value(out, "shm_ring_full", s.shm_ring_full.get());
  append_value(out, "shm_abandoned", s.shm_abandoned.get());
  append_value(out, "shm_doorbells", s.shm_doorbells.get());
  append_value(out, "cuda_copies_to_device", s.cuda_copies_to_device.get());
  append_value(out, "cuda_copies_from_device", s.cuda_copies_from_device.get());
  append_value(out, "cuda_copy_bytes", s.cuda_copy_bytes.get());
  append_value(out, "cuda_copies_by_kernel", s.cuda_copies_by_kernel.get());
  append_value(out, "implied_naks", s.implied_naks.get());
  append_group(out, "naks_sent", s.naks_sent, kNakNames);
  append_group(out, "naks_received", s.naks_received, kNakNames);
  append_value(out, "rnr_naks_sent", s.rnr_naks_sent.get());
  append_value(out, "rnr_naks_received", s.rnr_naks_received.get());
  append_value(out, "duplicate_requests", s.duplicate_requests.get());
  append_value(out, "ecn_marked_received", s.ecn_marked_received.get());
  append_value(out, "cnps_sent", s.cnps_sent.get());
  append_value(out, "cnps_received", s.cnps_received.get());
  append_group(out, "drops", s.drops, kDropNames);
  append_group(out, "faults_injected", s.faults, kFaultNames);
  append_group(out, "completions", s.completions, kWcNames);
  append_value(out, "cq_overruns", s.cq_overruns.get());
  out += "\"live\":{";
  append_gauge(out, "pds", s.live_pds.get());
  append_gauge(out, "mrs", s.live_mrs.get());
  append_gauge(out, "cqs", s.live_cqs.get());
  append_gauge(out, "qps", s.live_qps.get());
  append_gauge(out, "comp_channels", s.live_comp_channels.get());
  append_gauge(out, "engines", s.live_engines.get());
  out.back() = '}';
  out += '}';
  return out;
}

void stats_reset() noexcept {
  Stats& s = stats();
  for (auto& c : s.tx_packets)
    c.reset();
  for (auto& c : s.rx_packets)
    c.reset();
  s.tx_payload_bytes.reset();
  s.rx_payload_bytes.reset();
  s.retransmitted_packets.reset();
  s.ack_timeouts.reset();
  s.scheduling_stalls.reset();
  s.spin_backoffs.reset();
  s.kick_waits.reset();
  s.kick_waits_expired.reset();
  s.progress_thread_cpu_us.reset();
  s.gso_sends.reset();
  s.gso_segments.reset();
  s.gro_buffers.reset();
  s.gro_segments.reset();
  s.shm_sent.reset();
  s.shm_received.reset();
  s.shm_ring_full.reset();
  s.shm_abandoned.reset();
  s.shm_doorbells.reset();
  s.cuda_copies_to_device.reset();
  s.cuda_copies_from_device.reset();
  s.cuda_copy_bytes.reset();
  s.cuda_copies_by_kernel.reset();
  s.implied_naks.reset();
  for (auto& c : s.naks_sent)
    c.reset();
  for (auto& c : s.naks_received)
    c.reset();
  s.rnr_naks_sent.reset();
  s.rnr_naks_received.reset();
  s.duplicate_requests.reset();
  s.ecn_marked_received.reset();
  s.cnps_sent.reset();
  s.cnps_received.reset();
  for (auto& c : s.drops)
    c.reset();
  for (auto& c : s.faults)
    c.reset();
  for (auto& c : s.completions)
    c.reset();
  s.cq_overruns.reset();
}

}  // namespace vroce
