// Binding the loaded CUDA driver: see cuda_driver.h.
#include "core/memory/cuda_driver.h"

#include <dlfcn.h>
#include <fmt/format.h>

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

}  // namespace roce::cuda
