// An open verbs device (ibv_context), shared by everything created on it: protection domains,
// completion queues and, through them, queue pairs and memory regions keep their Context alive,
// and the Context keeps the loaded libibverbs alive, so destruction always runs children first.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <memory>
#include <string>

#include "ibv/library.h"
#include "ibv/port_query.h"

namespace roce::verbs {

class Context {
 public:
  // Opens `device` and reads its attributes. Throws VerbsError naming the device and errno.
  static std::shared_ptr<Context> open(std::shared_ptr<const ibv::Library> lib, ibv_device* device);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  ibv_context* get() const noexcept { return context_; }
  const std::string& name() const noexcept { return name_; }
  const ibv::Library& lib() const noexcept { return *lib_; }
  const std::shared_ptr<const ibv::Library>& library() const noexcept { return lib_; }
  // ibv_query_device's answer at open time (limits, sys_image_guid, phys_port_cnt).
  const ibv_device_attr& device_attr() const noexcept { return device_attr_; }

  // Port attributes now (state changes over time). Throws VerbsError naming device and port.
  ibv::PortAttributes query_port(uint8_t port) const;

  // The device reported IBV_EVENT_DEVICE_FATAL (set by the async-event thread). A lost device
  // flushes nothing, so QPs are then destroyed without the drain (which would wait out its
  // timeout on every QP), as NCCL's IB transport destroys them.
  void mark_lost() noexcept { lost_.store(true, std::memory_order_release); }
  bool lost() const noexcept { return lost_.load(std::memory_order_acquire); }

 private:
  Context(std::shared_ptr<const ibv::Library> lib, ibv_context* context, std::string name);

  std::shared_ptr<const ibv::Library> lib_;
  ibv_context* context_;
  std::string name_;
  ibv_device_attr device_attr_{};
  std::atomic<bool> lost_{false};
};

}  // namespace roce::verbs
