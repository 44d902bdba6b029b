// Setting up plugin connections as NCCL does: listen, exchange the opaque handles out of band,
// then call connect and accept alternately on one thread, non-blocking, until both return a comm.
// Also memory registration the way NCCL picks it (regMrDmaBuf for GPU memory when possible) and
// NCCL's rule for when a GPU receive needs iflush.
#pragma once

#include <string>

#include "buffer.h"
#include "net_plugin.h"
#include "options.h"

namespace roce::bench {

class Rendezvous;

struct PluginComms {
  void* send_comm = nullptr;
  void* recv_comm = nullptr;
  int connect_calls = 0;  // how many times connect/accept were called before they finished
  int accept_calls = 0;
};

// Every rank calls this together (it runs an allgather). Sends go to rank `send_to`, receives come
// from rank `recv_from`.
PluginComms connect_ring(NetPlugin& plugin, Rendezvous& rendezvous, int dev, int send_to,
                         int recv_from, double timeout_s);
void close_comms(NetPlugin& plugin, PluginComms& comms);

// Connects a listen comm to itself on one thread: NCCL's GDR-probe pattern.
PluginComms connect_loopback(NetPlugin& plugin, int dev, double timeout_s);

// Registers `buffer` on `comm`; *how says which call was used ("regMr HOST", "regMrDmaBuf").
void* register_buffer(NetPlugin& plugin, void* comm, const Buffer& buffer,
                      const NetProperties& props, DmabufPolicy policy, std::string* how);

// NCCL's rule: flush a GPU receive when the plugin sets forceFlush, NCCL_NET_FORCE_FLUSH=1 or
// the GPU is older than Hopper (compute capability < 9). Host memory is never flushed.
bool flush_needed(const Buffer& buffer, const NetProperties& props, FlushPolicy policy);

}  // namespace roce::bench
