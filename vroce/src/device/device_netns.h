// The network namespace vroce's devices live in. A real RDMA device belongs to the namespace of
// its netdev, whatever namespace the process calling it is in (Kubernetes pods in rdma "shared"
// mode use the host's device from the pod's namespace). vroce's devices are UDP sockets bound to
// addresses of the namespace the process had when it first listed them; a thread that has since
// moved to another namespace (setns) must still open those sockets in the devices' namespace, so
// the few places that create sockets for a device enter it for the call.
#pragma once

#include <string>

namespace vroce::device {

// Records the calling thread's network namespace as the devices' one. Called once, when the
// device registry is built; later calls do nothing.
void remember_device_netns() noexcept;

// While alive, the calling thread is in the devices' namespace. A no-op when it already is
// (the common case: one fstat of /proc/thread-self/ns/net). ok() is false, with error() saying
// why, when the thread is elsewhere and cannot enter it (setns needs CAP_SYS_ADMIN).
class InDeviceNetns {
 public:
  InDeviceNetns() noexcept;
  ~InDeviceNetns();
  InDeviceNetns(const InDeviceNetns&) = delete;
  InDeviceNetns& operator=(const InDeviceNetns&) = delete;

  bool ok() const noexcept { return ok_; }
  const std::string& error() const noexcept { return error_; }

 private:
  int return_fd_ = -1;  // the namespace to go back to, when we left it
  bool ok_ = true;
  std::string error_;
};

}  // namespace vroce::device
