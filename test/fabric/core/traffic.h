// Deterministic traffic for the fabric tests: both sides derive the same plan (multi-receives of
// 1..8 entries with tags, send and receive sizes, the order in which the sends of a group are
// posted) from a seed, the sender fills each message with a pattern derived from (seed, group,
// entry, offset), and the receiver checks every reported size, every byte, and that nothing was
// written past the sent size. Requests are kept in flight up to a window, as NCCL's proxy does.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "plugin_driver.h"

namespace roce::test {

struct PlanShape {
  int groups = 200;              // multi-receives (irecv calls)
  int window = 8;                // groups in flight per side (<= 32)
  int max_recvs = 8;             // n drawn from 1..max_recvs (multi-receives with tags)
  size_t max_single = 4 << 20;   // largest message when n == 1
  size_t max_multi = 256 << 10;  // largest entry when n > 1
  int tail_in_flight = 3;        // matched sends/receives left untested when the comms close
  int unmatched_recvs = 2;       // receives the sender never matches, open when recvComm closes
};

struct PlannedMessage {
  int tag = 0;
  size_t send_size = 0;
  size_t recv_size = 0;  // >= send_size: a receive may be larger than its send
};

struct PlannedGroup {
  std::vector<PlannedMessage> entries;
  std::vector<int> send_order;  // the sender posts entries in this (shuffled) order
};

std::vector<PlannedGroup> make_plan(uint64_t seed, const PlanShape& shape);

// Bytes each side must register: one slot per window position, each large enough for a group.
size_t arena_bytes(const PlanShape& shape);

struct TrafficResult {
  bool ok = false;
  std::string error;                  // first failure, with group/entry/offset
  ncclResult_t result = ncclSuccess;  // the plugin's error, if that is what failed
  uint64_t bytes = 0;
  int flushes = 0;                          // iflush calls that returned a request
  ncclResult_t close_result = ncclSuccess;  // deregMr + close*, run on success and on failure
};

struct TrafficOptions {
  int mr_type = NCCL_PTR_HOST;  // what regMr is told the arena is
  bool flush = true;            // call iflush after each receive, as NCCL does for GPU buffers
  bool close_with_requests_in_flight = true;
  // Called before the comm is closed (e.g. to wait until the peer has posted its tail).
  std::function<void()> before_close;
  // In-process runs: set when the other side failed, so this side stops waiting for it.
  std::atomic<bool>* peer_failed = nullptr;
  // In-process runs: this side sets it as soon as it has failed, before before_close, so a peer
  // that before_close waits for stops waiting for this side.
  std::atomic<bool>* failed = nullptr;
  // Called whenever a poll or a post finds nothing to do (e.g. a short sleep), so many comms
  // driven by their own threads on few cores leave the NIC's progress threads room to run.
  std::function<void()> idle;
  // The watchdog: a side that has not finished by then fails with "timed out ...".
  std::chrono::seconds deadline{120};
};

// Runs one side over an established comm. Registers its arena, runs the plan, leaves
// `tail_in_flight` requests unfinished, deregisters and closes the comm (also after a failure,
// as NCCL does when it aborts; close_result says how that went).
TrafficResult run_sender(PluginDriver& plugin, void* send_comm, uint64_t seed,
                         const PlanShape& shape, const TrafficOptions& options);
TrafficResult run_receiver(PluginDriver& plugin, void* recv_comm, uint64_t seed,
                           const PlanShape& shape, const TrafficOptions& options);

// Connects and accepts on one thread, alternating calls as NCCL's GDR probe does for a loopback
// pair. Returns false (with *error) on an error or when `timeout_ms` passes.
bool connect_accept_alternating(PluginDriver& plugin, int send_dev, void* listen_comm,
                                Handle* handle, void** send_comm, void** recv_comm, int timeout_ms,
                                std::string* error);

// Polls connect (or accept) until the comm is non-NULL, an error, or the timeout.
ncclResult_t connect_until_ready(PluginDriver& plugin, int dev, Handle* handle, void** send_comm,
                                 int timeout_ms);
ncclResult_t accept_until_ready(PluginDriver& plugin, void* listen_comm, void** recv_comm,
                                int timeout_ms);

std::string handle_to_hex(const Handle& handle);
bool handle_from_hex(const std::string& text, Handle* handle);

}  // namespace roce::test
