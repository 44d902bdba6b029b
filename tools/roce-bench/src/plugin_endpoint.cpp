// Point-to-point messages through the plugin.
#include "plugin_endpoint.h"

#include <cstdio>

#include "errors.h"
#include "rendezvous.h"

namespace roce::bench {

PluginEndpoint::PluginEndpoint(NetPlugin& plugin, Rendezvous& rendezvous, const Options& options,
                               const NetProperties& props, std::size_t capacity)
    : plugin_(plugin), rank_(rendezvous.rank()), peer_(1 - rendezvous.rank()), capacity_(capacity) {
  send_buffer_ = options.cuda ? Buffer::cuda(capacity) : Buffer::host(capacity);
  recv_buffer_ = options.cuda ? Buffer::cuda(capacity) : Buffer::host(capacity);
  comms_ = connect_ring(plugin, rendezvous, options.dev, peer_, peer_, options.timeout_s);
  try {
    std::string how_send;
    std::string how_recv;
    send_mhandle_ =
        register_buffer(plugin, comms_.send_comm, send_buffer_, props, options.dmabuf, &how_send);
    recv_mhandle_ =
        register_buffer(plugin, comms_.recv_comm, recv_buffer_, props, options.dmabuf, &how_recv);
    registration_ = how_send;
    flush_ = flush_needed(recv_buffer_, props, options.flush);
  } catch (...) {
    if (send_mhandle_ != nullptr) {
      plugin.dereg_mr(comms_.send_comm, send_mhandle_);
    }
    close_comms(plugin, comms_);
    throw;
  }
}

PluginEndpoint::~PluginEndpoint() {
  try {
    if (send_mhandle_ != nullptr) {
      plugin_.dereg_mr(comms_.send_comm, send_mhandle_);
    }
    if (recv_mhandle_ != nullptr) {
      plugin_.dereg_mr(comms_.recv_comm, recv_mhandle_);
    }
    close_comms(plugin_, comms_);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "roce-bench: rank %d: closing the plugin endpoint: %s\n", rank_, e.what());
  }
}

bool PluginEndpoint::post_send(int slot, std::size_t bytes, Ticket& ticket) {
  void* data = send_buffer_.bytes() + slot_offset(slot, bytes);
  void* request = plugin_.isend(comms_.send_comm, data, bytes, rank_, send_mhandle_);
  if (request == nullptr) {
    return false;
  }
  ticket = Ticket{Ticket::State::Pending, request, nullptr, slot, bytes, false};
  return true;
}

bool PluginEndpoint::post_recv(int slot, std::size_t bytes, Ticket& ticket) {
  void* data = recv_buffer_.bytes() + slot_offset(slot, bytes);
  const bool ll_hint = (irecv_calls_++ & 1U) == 1U;
  void* request = plugin_.irecv(comms_.recv_comm, data, bytes, peer_, recv_mhandle_, ll_hint);
  if (request == nullptr) {
    return false;
  }
  ticket = Ticket{Ticket::State::Pending, request, nullptr, slot, bytes, true};
  return true;
}

bool PluginEndpoint::test(Ticket& ticket) {
  const auto test_flush = [&] {
    if (!plugin_.test(ticket.flush, nullptr)) {
      return false;
    }
    ticket.flush = nullptr;
    ticket.state = Ticket::State::Done;
    return true;
  };
  switch (ticket.state) {
    case Ticket::State::Done:
      return true;
    case Ticket::State::Idle:
      throw BenchError("internal: test of a ticket that was never posted");
    case Ticket::State::Pending: {
      int size = -1;
      if (!plugin_.test(ticket.handle, &size)) {
        return false;
      }
      ticket.handle = nullptr;
      if (ticket.recv) {
        if (size < 0 || static_cast<std::size_t>(size) != ticket.bytes) {
          throw BenchError("plugin test reported " + std::to_string(size) +
                           " bytes received into slot " + std::to_string(ticket.slot) +
                           "; the peer sent " + std::to_string(ticket.bytes));
        }
        if (flush_ && ticket.bytes > 0) {
          void* data = recv_buffer_.bytes() + slot_offset(ticket.slot, ticket.bytes);
          ticket.flush = plugin_.iflush(comms_.recv_comm, data, size, recv_mhandle_);
          if (ticket.flush != nullptr) {
            ticket.state = Ticket::State::Flushing;
            return test_flush();
          }
        }
      }
      ticket.state = Ticket::State::Done;
      return true;
    }
    case Ticket::State::Flushing:
      return test_flush();
  }
  return false;
}

}  // namespace roce::bench
