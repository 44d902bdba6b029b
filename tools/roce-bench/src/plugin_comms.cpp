// Plugin connection setup and memory registration.
#include "plugin_comms.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "cuda_driver.h"
#include "errors.h"
#include "poller.h"
#include "rendezvous.h"

namespace roce::bench {
namespace {

// Calls connect and accept alternately until both comms exist.
void progress_pair(NetPlugin& plugin, int dev, NetHandle& remote, void* listen_comm,
                   PluginComms& comms, Poller& poller, const std::string& what) {
  while (comms.send_comm == nullptr || comms.recv_comm == nullptr) {
    bool advanced = false;
    if (comms.send_comm == nullptr) {
      ++comms.connect_calls;
      comms.send_comm = plugin.connect(dev, remote);
      advanced |= comms.send_comm != nullptr;
    }
    if (comms.recv_comm == nullptr) {
      ++comms.accept_calls;
      comms.recv_comm = plugin.accept(listen_comm);
      advanced |= comms.recv_comm != nullptr;
    }
    if (advanced) {
      poller.progress();
    } else {
      poller.idle(what.c_str());
    }
  }
}

}  // namespace

PluginComms connect_ring(NetPlugin& plugin, Rendezvous& rendezvous, int dev, int send_to,
                         int recv_from, double timeout_s) {
  NetHandle own{};
  void* listen_comm = plugin.listen(dev, own);
  std::vector<std::string> handles;
  try {
    handles = rendezvous.allgather(std::string_view(own.data(), own.size()));
  } catch (...) {
    plugin.close_listen(listen_comm);
    throw;
  }
  NetHandle remote{};
  std::memcpy(remote.data(), handles[static_cast<std::size_t>(send_to)].data(), remote.size());
  PluginComms comms;
  Poller poller(timeout_s, 0, &rendezvous, PollPolicy::Yield);
  try {
    progress_pair(plugin, dev, remote, listen_comm, comms, poller,
                  "connecting to rank " + std::to_string(send_to) + " and accepting rank " +
                      std::to_string(recv_from));
  } catch (...) {
    close_comms(plugin, comms);
    plugin.close_listen(listen_comm);
    throw;
  }
  plugin.close_listen(listen_comm);
  return comms;
}

PluginComms connect_loopback(NetPlugin& plugin, int dev, double timeout_s) {
  NetHandle handle{};
  void* listen_comm = plugin.listen(dev, handle);
  NetHandle remote = handle;
  PluginComms comms;
  Poller poller(timeout_s, 0, nullptr, PollPolicy::Yield);
  try {
    progress_pair(plugin, dev, remote, listen_comm, comms, poller,
                  "loopback connect/accept on one thread");
  } catch (...) {
    close_comms(plugin, comms);
    plugin.close_listen(listen_comm);
    throw;
  }
  plugin.close_listen(listen_comm);
  return comms;
}

void close_comms(NetPlugin& plugin, PluginComms& comms) {
  if (comms.send_comm != nullptr) {
    plugin.close_send(comms.send_comm);
    comms.send_comm = nullptr;
  }
  if (comms.recv_comm != nullptr) {
    plugin.close_recv(comms.recv_comm);
    comms.recv_comm = nullptr;
  }
}

void* register_buffer(NetPlugin& plugin, void* comm, const Buffer& buffer,
                      const NetProperties& props, DmabufPolicy policy, std::string* how) {
  if (!buffer.is_cuda()) {
    if ((props.ptr_support & NCCL_PTR_HOST) == 0) {
      throw BenchError("plugin device " + props.name + " reports ptrSupport " +
                       ptr_support_text(props.ptr_support) + " without HOST: it cannot take " +
                       "host memory; run with --cuda");
    }
    *how = "regMr HOST";
    return plugin.reg_mr(comm, buffer.data(), buffer.allocated(), NCCL_PTR_HOST);
  }
  const bool plugin_dmabuf =
      (props.ptr_support & NCCL_PTR_DMABUF) != 0 && plugin.has_reg_mr_dmabuf();
  const char* env = std::getenv("NCCL_DMABUF_ENABLE");
  const bool env_allows = env == nullptr || std::strcmp(env, "0") != 0;
  bool use_dmabuf = false;
  if (policy == DmabufPolicy::On) {
    if (!plugin_dmabuf) {
      throw BenchError("--dmabuf on: plugin device " + props.name + " does not offer dma-buf " +
                       "(ptrSupport " + ptr_support_text(props.ptr_support) + ")");
    }
    if (!CudaDriver::instance().dmabuf_supported()) {
      throw BenchError(
          "--dmabuf on: this GPU or driver cannot export dma-buf "
          "(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 0)");
    }
    use_dmabuf = true;
  } else if (policy == DmabufPolicy::Auto) {
    use_dmabuf = plugin_dmabuf && env_allows && CudaDriver::instance().dmabuf_supported();
  }
  if (use_dmabuf) {
    const int fd = CudaDriver::instance().export_dmabuf(
        reinterpret_cast<std::uintptr_t>(buffer.data()), buffer.allocated());
    void* mhandle = nullptr;
    try {
      mhandle = plugin.reg_mr_dmabuf(comm, buffer.data(), buffer.allocated(), NCCL_PTR_CUDA, 0, fd);
    } catch (...) {
      close(fd);
      throw;
    }
    // As NCCL does: the fd is closed right after registration; the plugin must not keep it.
    close(fd);
    *how = "regMrDmaBuf CUDA";
    return mhandle;
  }
  if ((props.ptr_support & NCCL_PTR_CUDA) == 0) {
    throw BenchError("plugin device " + props.name + " reports ptrSupport " +
                     ptr_support_text(props.ptr_support) +
                     ": no GPUDirect RDMA for GPU memory by pointer" +
                     (plugin_dmabuf ? " (dma-buf is offered: use --dmabuf auto|on)"
                                    : " (load nvidia-peermem or enable dma-buf)"));
  }
  *how = "regMr CUDA";
  return plugin.reg_mr(comm, buffer.data(), buffer.allocated(), NCCL_PTR_CUDA);
}

bool flush_needed(const Buffer& buffer, const NetProperties& props, FlushPolicy policy) {
  switch (policy) {
    case FlushPolicy::Always:
      return true;
    case FlushPolicy::Never:
      return false;
    case FlushPolicy::Auto:
      break;
  }
  if (!buffer.is_cuda()) {
    return false;
  }
  const char* force = std::getenv("NCCL_NET_FORCE_FLUSH");
  if (props.force_flush == 1 || (force != nullptr && std::strcmp(force, "1") == 0)) {
    return true;
  }
  return CudaDriver::instance().compute_capability_major() < 9;
}

}  // namespace roce::bench
