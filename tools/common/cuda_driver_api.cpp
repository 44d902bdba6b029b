// The tools' CUDA driver API loader: see cuda_driver_api.h.
#include "cuda_driver_api.h"

#include <dlfcn.h>

#include <cstring>

namespace roce::tools {
namespace {

template <typename Fn>
void bind(void* library, Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
}

CudaDriverApi load() {
  CudaDriverApi api;
  api.library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (api.library == nullptr) {
    const char* why = dlerror();
    api.load_error = std::string("cannot load libcuda.so.1: ") + (why != nullptr ? why : "?");
    return api;
  }
  void* lib = api.library;
  bind(lib, api.cuInit, "cuInit");
  bind(lib, api.cuDeviceGetCount, "cuDeviceGetCount");
  bind(lib, api.cuDeviceGet, "cuDeviceGet");
  bind(lib, api.cuDeviceGetName, "cuDeviceGetName");
  bind(lib, api.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  bind(lib, api.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  bind(lib, api.cuCtxSetCurrent, "cuCtxSetCurrent");
  bind(lib, api.cuCtxSynchronize, "cuCtxSynchronize");
  bind(lib, api.cuMemAlloc, "cuMemAlloc_v2");
  bind(lib, api.cuMemFree, "cuMemFree_v2");
  bind(lib, api.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  bind(lib, api.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  bind(lib, api.cuMemsetD8, "cuMemsetD8_v2");
  bind(lib, api.cuPointerSetAttribute, "cuPointerSetAttribute");
  bind(lib, api.cuMemGetHandleForAddressRange, "cuMemGetHandleForAddressRange");
  bind(lib, api.cuModuleLoadData, "cuModuleLoadData");
  bind(lib, api.cuModuleGetFunction, "cuModuleGetFunction");
  bind(lib, api.cuLaunchKernel, "cuLaunchKernel");
  bind(lib, api.cuGetErrorString, "cuGetErrorString");
  return api;
}

}  // namespace

const char* CudaDriverApi::first_missing(std::initializer_list<const char*> names) const {
  for (const char* name : names) {
    if (library == nullptr || dlsym(library, name) == nullptr) {
      return name;
    }
  }
  return nullptr;
}

std::string CudaDriverApi::error_text(CUresult result) const {
  const char* text = nullptr;
  if (cuGetErrorString != nullptr) {
    cuGetErrorString(result, &text);
  }
  return "error " + std::to_string(result) +
         (text != nullptr ? std::string(" (") + text + ")" : std::string());
}

const CudaDriverApi& cuda_driver_api() {
  static const CudaDriverApi api = load();
  return api;
}

}  // namespace roce::tools
