// The point-to-point Endpoint over the plugin: isend/irecv/test/iflush through the ncclNet table,
// tags as NCCL sets them (isend: own rank, irecv: the peer's rank), and NCCL's LL hint pre-set in
// *request on every other irecv so a plugin that fails to overwrite it is caught.
#pragma once

#include <string>

#include "endpoint.h"
#include "net_plugin.h"
#include "options.h"
#include "plugin_comms.h"

namespace roce::bench {

class Rendezvous;

class PluginEndpoint final : public Endpoint {
 public:
  // Collective: both ranks construct it together. Registers `capacity` bytes in each direction.
  PluginEndpoint(NetPlugin& plugin, Rendezvous& rendezvous, const Options& options,
                 const NetProperties& props, std::size_t capacity);
  ~PluginEndpoint() override;

  std::string_view label() const override { return "plugin"; }
  std::size_t capacity() const override { return capacity_; }
  Buffer& send_buffer() override { return send_buffer_; }
  Buffer& recv_buffer() override { return recv_buffer_; }
  bool post_send(int slot, std::size_t bytes, Ticket& ticket) override;
  bool post_recv(int slot, std::size_t bytes, Ticket& ticket) override;
  bool test(Ticket& ticket) override;
  void timed_region(bool begin) override { plugin_.timed_region(begin); }

  const PluginComms& comms() const { return comms_; }
  const std::string& registration() const { return registration_; }
  bool flushes() const { return flush_; }

 private:
  NetPlugin& plugin_;
  int rank_;
  int peer_;
  std::size_t capacity_;
  Buffer send_buffer_;
  Buffer recv_buffer_;
  PluginComms comms_;
  void* send_mhandle_ = nullptr;
  void* recv_mhandle_ = nullptr;
  std::string registration_;
  bool flush_ = false;
  unsigned irecv_calls_ = 0;
};

}  // namespace roce::bench
