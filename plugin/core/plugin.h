// The plugin's process-wide state: configuration, libibverbs, and the devices, set up by the
// first init and shared by every later one (NCCL's v8..v10 shims call init once; v11 calls it per
// communicator, and finalize as many times). The last finalize releases the devices; comms still
// open keep theirs alive. NCCL may dlclose and reload the library: a static destructor releases
// whatever is left, so async-event threads never outlive the code they run.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "core/device/device_runtime.h"
#include "ibv/library.h"
#include "nccl_net/types.h"
#include "roce/result.h"

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
  // The physical devices (ports); virtual NICs are numbered after them.
  int physical_device_count() const;
  // What devices() reports: the physical devices and the virtual NICs made so far. NCCL asks it
  // once before fusing (the physical count) and again after its makeVDevice calls, and adds to
  // its topology only the devices numbered between the two answers (net_ib counts alike).
  int device_count() const;
  // nullptr when not initialised or out of range. For a virtual NIC, its first member: the
  // device whose GID, address and class a connection's handshake uses.
  std::shared_ptr<DeviceRuntime> device(int dev) const;

  // makeVDevice with two or more members: a virtual NIC, numbered after the physical devices
  // and the virtual NICs made before it. The same member list gives the same number again (NCCL
  // fuses once per communicator), so the table stays bounded. Fails with the reason: a member
  // that is not a physical device, a member named twice, more than kMaxVirtualMembers.
  Result<int> add_virtual_device(std::span<const int> members);
  // The physical members of dev in order: {dev} for a physical device, the fused devices for a
  // virtual NIC, empty when dev does not exist.
  std::vector<int> members_of(int dev) const;

  ~Plugin();

 private:
  Plugin() = default;
  ncclResult_t start_locked();

  mutable std::mutex mutex_;
  int refs_ = 0;
  std::shared_ptr<const ibv::Library> library_;
  std::vector<std::shared_ptr<DeviceRuntime>> devices_;
  std::vector<std::vector<int>> virtual_devices_;  // members, by number - physical_device_count()
};

// The most members a virtual NIC can have: NCCL_NET_MAX_DEVS_PER_NIC of ncclNet v12 (v9..v11
// tables hold 4; abi/ checks each table's capacity).
inline constexpr int kMaxVirtualMembers = 8;

}  // namespace roce
