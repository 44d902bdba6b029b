// RAII device list: see device_list.h.
#include "verbs/device_list.h"

#include <cerrno>

#include "util/log.h"
#include "verbs/error.h"

namespace roce::verbs {

DeviceList::DeviceList(std::shared_ptr<const ibv::Library> lib) : lib_(std::move(lib)) {
  errno = 0;
  list_ = lib_->fn().get_device_list(&count_);
  if (list_ == nullptr) {
    const int err = errno != 0 ? errno : EIO;
    // ENOSYS is rdma-core's way of saying the kernel has no RDMA support at all.
    throw VerbsError(fmt::format("ibv_get_device_list failed: {}; {}", errno_text(err),
                                 err == ENOSYS ? "the kernel has no RDMA (ib_uverbs) support"
                                               : "check that the RDMA drivers are loaded"),
                     err);
  }
  if (count_ < 0) {
    count_ = 0;
  }
}

DeviceList::~DeviceList() {
  if (list_ != nullptr) {
    lib_->fn().free_device_list(list_);
  }
}

}  // namespace roce::verbs
