// Adapters for memory registration: regMr, regMrDmaBuf, deregMr, getDeviceMr.
#include "abi/adapters.h"
#include "abi/guard.h"
#include "core/api.h"

namespace roce::abi {
namespace {

bool known_pointer_type(int type) noexcept {
  return type == NCCL_PTR_HOST || type == NCCL_PTR_CUDA || type == NCCL_PTR_DMABUF;
}

}  // namespace

ncclResult_t reg_mr_v8(void* comm, void* data, size_t size, int type, void** mhandle) noexcept {
  clear(mhandle);
  if (comm == nullptr || mhandle == nullptr) {
    return invalid_argument("regMr", "{} is NULL", comm == nullptr ? "comm" : "mhandle");
  }
  if (data == nullptr && size > 0) {
    return invalid_argument("regMr", "data is NULL with size {}", size);
  }
  if (type != NCCL_PTR_HOST && type != NCCL_PTR_CUDA) {
    return invalid_argument("regMr",
                            "pointer type {} is neither NCCL_PTR_HOST (1) nor "
                            "NCCL_PTR_CUDA (2); dma-buf memory goes through regMrDmaBuf",
                            type);
  }
  return guarded("regMr", [&] { return api::reg_mr(comm, data, size, type, mhandle); });
}

ncclResult_t reg_mr_v6(void* comm, void* data, int size, int type, void** mhandle) noexcept {
  if (size < 0) {
    clear(mhandle);
    return invalid_argument("regMr", "size {} is negative", size);
  }
  return reg_mr_v8(comm, data, static_cast<size_t>(size), type, mhandle);
}

ncclResult_t reg_mr_dmabuf_v8(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle) noexcept {
  clear(mhandle);
  if (comm == nullptr || mhandle == nullptr) {
    return invalid_argument("regMrDmaBuf", "{} is NULL", comm == nullptr ? "comm" : "mhandle");
  }
  if (data == nullptr && size > 0) {
    return invalid_argument("regMrDmaBuf", "data is NULL with size {}", size);
  }
  if (!known_pointer_type(type)) {
    return invalid_argument("regMrDmaBuf", "unknown pointer type {}", type);
  }
  if (fd < 0) {
    return invalid_argument("regMrDmaBuf", "dma-buf fd {} is not a file descriptor", fd);
  }
  return guarded("regMrDmaBuf",
                 [&] { return api::reg_mr_dmabuf(comm, data, size, type, offset, fd, mhandle); });
}

ncclResult_t dereg_mr_v8(void* comm, void* mhandle) noexcept {
  if (comm == nullptr || mhandle == nullptr) {
    return invalid_argument("deregMr", "{} is NULL", comm == nullptr ? "comm" : "mhandle");
  }
  return guarded("deregMr", [&] { return api::dereg_mr(comm, mhandle); });
}

ncclResult_t get_device_mr_v8(void* comm, void* mhandle, void** dptr_mhandle) noexcept {
  if (comm == nullptr || dptr_mhandle == nullptr) {
    return invalid_argument("getDeviceMr", "{} is NULL", comm == nullptr ? "comm" : "dptr_mhandle");
  }
  *dptr_mhandle = nullptr;
  return guarded("getDeviceMr", [&] { return api::get_device_mr(comm, mhandle, dptr_mhandle); });
}

}  // namespace roce::abi
