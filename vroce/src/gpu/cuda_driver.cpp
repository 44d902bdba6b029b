// Run-time loading of the CUDA driver; see cuda_driver.h.
#include "gpu/cuda_driver.h"

#include <dlfcn.h>

#include "util/log.h"

namespace vroce::gpu {
namespace {

struct Loaded {
  CudaDriver driver;
  bool available = false;
  std::string reason;
};

template <typename Fn>
bool bind_symbol(void* library, const char* name, Fn* target, std::string* reason) {
  void* symbol = dlsym(library, name);
  if (symbol == nullptr) {
    *reason = std::string("libcuda.so.1 lacks ") + name + " (driver too old?)";
    return false;
  }
  *target = reinterpret_cast<Fn>(symbol);
  return true;
}

// The same for an entry point that only an optional feature needs: left nullptr when absent.
template <typename Fn>
void bind_optional(void* library, const char* name, Fn* target) {
  *target = reinterpret_cast<Fn>(dlsym(library, name));
}

Loaded load() {
  Loaded loaded;
  // Never dlclose'd: other threads may be inside the driver at process exit.
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* error = dlerror();
    loaded.reason = std::string("libcuda.so.1 is not loadable (") +
                    (error != nullptr ? error : "unknown error") + "): all memory is host memory";
    return loaded;
  }
  cuda::cuInit_t init = nullptr;
  CudaDriver& d = loaded.driver;
  if (!bind_symbol(library, "cuInit", &init, &loaded.reason) ||
      !bind_symbol(library, "cuGetErrorName", &d.get_error_name, &loaded.reason) ||
      !bind_symbol(library, "cuPointerGetAttributes", &d.pointer_get_attributes, &loaded.reason) ||
      !bind_symbol(library, "cuDeviceGet", &d.device_get, &loaded.reason) ||
      !bind_symbol(library, "cuDevicePrimaryCtxRetain", &d.primary_ctx_retain, &loaded.reason) ||
      !bind_symbol(library, "cuCtxGetCurrent", &d.ctx_get_current, &loaded.reason) ||
      !bind_symbol(library, "cuCtxSetCurrent", &d.ctx_set_current, &loaded.reason) ||
      !bind_symbol(library, "cuStreamCreate", &d.stream_create, &loaded.reason) ||
      !bind_symbol(library, "cuStreamSynchronize", &d.stream_synchronize, &loaded.reason) ||
      // cuda.h maps cuMemcpy*Async to these _v2 entry points (64-bit device pointers).
      !bind_symbol(library, "cuMemcpyHtoDAsync_v2", &d.memcpy_htod_async, &loaded.reason) ||
      !bind_symbol(library, "cuMemcpyDtoHAsync_v2", &d.memcpy_dtoh_async, &loaded.reason) ||
      !bind_symbol(library, "cuMemAllocHost_v2", &d.mem_alloc_host, &loaded.reason) ||
      !bind_symbol(library, "cuIpcGetMemHandle", &d.ipc_get_mem_handle, &loaded.reason) ||
      // cuda.h maps cuIpcOpenMemHandle and cuMemHostRegister to their _v2 entry points.
      !bind_symbol(library, "cuIpcOpenMemHandle_v2", &d.ipc_open_mem_handle, &loaded.reason) ||
      !bind_symbol(library, "cuIpcCloseMemHandle", &d.ipc_close_mem_handle, &loaded.reason) ||
      !bind_symbol(library, "cuMemHostRegister_v2", &d.mem_host_register, &loaded.reason)) {
    return loaded;
  }
  bind_optional(library, "cuDeviceGetAttribute", &d.device_get_attribute);
  // cuda.h maps cuMemHostGetDevicePointer to its _v2 entry point.
  bind_optional(library, "cuMemHostGetDevicePointer_v2", &d.mem_host_get_device_pointer);
  bind_optional(library, "cuModuleLoadData", &d.module_load_data);
  bind_optional(library, "cuModuleGetFunction", &d.module_get_function);
  bind_optional(library, "cuLaunchKernel", &d.launch_kernel);
  bind_optional(library, "cuStreamQuery", &d.stream_query);
  cuda::CUresult rc = init(0);
  if (rc != cuda::kSuccess) {
    loaded.reason = "cuInit failed with " + d.error_text(rc) + ": all memory is host memory";
    return loaded;
  }
  loaded.available = true;
  return loaded;
}

const Loaded& loaded() noexcept {
  static const Loaded instance = [] {
    Loaded result = load();
    if (result.available) {
      VROCE_LOG(Info, "CUDA driver loaded: device memory is reached through the driver API");
    } else {
      VROCE_LOG(Info, "%s", result.reason.c_str());
    }
    return result;
  }();
  return instance;
}

}  // namespace

std::string CudaDriver::error_text(cuda::CUresult result) const {
  const char* name = nullptr;
  if (get_error_name == nullptr || get_error_name(result, &name) != cuda::kSuccess ||
      name == nullptr) {
    name = "CUDA error";
  }
  return std::string(name) + " (" + std::to_string(result) + ")";
}

const CudaDriver* cuda_driver() noexcept {
  const Loaded& state = loaded();
  return state.available ? &state.driver : nullptr;
}

const std::string& cuda_unavailable_reason() noexcept {
  return loaded().reason;
}

}  // namespace vroce::gpu
