// The plugin's process-wide state: configuration, libibverbs, and the devices, set up by the
// first init and shared by every later one (NCCL's v8..v10 shims call init once; v11 calls it per
// communicator, and finalize as many times). The last finalize releases the devices; comms still
// open keep theirs alive. NCCL may dlclose and reload the library: a static destructor releases
// whatever is left, so async-event threads never outlive the code they run.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "core/device/device_runtime.h"
#include "ibv/library.h"
#include "nccl_net/types.h"

namespace roce {

class Plugin {
 public:
  static Plugin& instance();

  // The first call loads the configuration and libibverbs, discovers devices, checks GPUDirect
  // and traffic-class overrides, starts the async-event threads and prints the banner; a failure
  // is logged as one WARN line and leaves the plugin uninitialised. Later calls take a reference.
  ncclResult_t init(ncclDebugLogger_t logger);
  // Drops one reference; the last releases the devices and returns true.
  bool finalize() noexcept;

  bool initialized() const;
  int device_count() const;
  // nullptr when not initialised or out of range.
  std::shared_ptr<DeviceRuntime> device(int dev) const;

  ~Plugin();

 private:
  Plugin() = default;
  ncclResult_t start_locked();

  mutable std::mutex mutex_;
  int refs_ = 0;
  std::shared_ptr<const ibv::Library> library_;
  std::vector<std::shared_ptr<DeviceRuntime>> devices_;
};

}  // namespace roce
