// Binding the loaded CUDA driver: see cuda_driver.h.
#include "core/memory/cuda_driver.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cstring>

namespace roce::cuda {
namespace {

template <typename Fn>
bool bind(void* handle, const char* name, Fn& slot) noexcept {
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) {
    return false;
  }
  static_assert(sizeof(Fn) == sizeof(void*));
  std::memcpy(&slot, &symbol, sizeof(slot));
  return true;
}

}  // namespace

roce::Result<std::unique_ptr<Driver>> Driver::attach() {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (handle == nullptr) {
    return failure("libcuda.so.1 is not loaded in this process");
  }
  std::unique_ptr<Driver> driver(new Driver());
  driver->handle_ = handle;
  // The _v2 names are the 64-bit entry points that cuda.h maps cuMemAlloc/cuMemFree to.
  if (!bind(handle, "cuCtxGetCurrent", driver->ctx_get_current_) ||
      !bind(handle, "cuMemAlloc_v2", driver->mem_alloc_) ||
      !bind(handle, "cuMemFree_v2", driver->mem_free_)) {
    return failure("the loaded libcuda.so.1 lacks cuCtxGetCurrent, cuMemAlloc_v2 or cuMemFree_v2");
  }
  bind(handle, "cuGetErrorName", driver->get_error_name_);
  bind(handle, "cuCtxGetDevice", driver->ctx_get_device_);
  bind(handle, "cuDeviceGetCount", driver->device_get_count_);
  bind(handle, "cuDeviceGet", driver->device_get_);
  bind(handle, "cuDeviceGetAttribute", driver->device_get_attribute_);
  bind(handle, "cuDeviceGetPCIBusId", driver->device_get_pci_bus_id_);
  return roce::Result<std::unique_ptr<Driver>>(std::move(driver));
}

Driver::~Driver() {
  if (handle_ != nullptr) {
    dlclose(handle_);  // drops only the reference RTLD_NOLOAD took
  }
}

std::string Driver::error_name(Result result) const {
  const char* name = nullptr;
  if (get_error_name_ != nullptr && get_error_name_(result, &name) == 0 && name != nullptr) {
    return name;
  }
  return fmt::format("CUresult {}", result);
}

std::optional<std::string> Driver::pci_bus_id(Device device) const {
  if (device_get_pci_bus_id_ == nullptr) {
    return std::nullopt;
  }
  std::array<char, 32> id{};  // "0000:17:00.0" and its terminator, with room
  if (device_get_pci_bus_id_(id.data(), static_cast<int>(id.size()), device) != 0) {
    return std::nullopt;
  }
  std::string text(id.data());
  for (char& c : text) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return text;
}

}  // namespace roce::cuda
