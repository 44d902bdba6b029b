// The list of verbs devices, owned: ibv_get_device_list on construction, ibv_free_device_list on
// destruction. Contexts opened from its entries stay valid after the list is freed (rdma-core
// keeps a reference per open device).
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <span>

#include "ibv/library.h"

namespace roce::verbs {

class DeviceList {
 public:
  // Throws VerbsError when the library cannot list devices (errno named).
  explicit DeviceList(std::shared_ptr<const ibv::Library> lib);
  ~DeviceList();
  DeviceList(const DeviceList&) = delete;
  DeviceList& operator=(const DeviceList&) = delete;

  std::span<ibv_device* const> devices() const noexcept {
    return {list_, static_cast<size_t>(count_)};
  }

 private:
  std::shared_ptr<const ibv::Library> lib_;
  ibv_device** list_ = nullptr;
  int count_ = 0;
};

}  // namespace roce::verbs
