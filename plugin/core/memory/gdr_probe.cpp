// GPUDirect probes: see gdr_probe.h.
#include "core/memory/gdr_probe.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>

#include "core/memory/cuda_driver.h"
#include "core/memory/gdr_staging.h"
#include "util/log.h"
#include "verbs/error.h"
#include "verbs/memory_region.h"
#include "verbs/protection_domain.h"

namespace roce {
namespace {

constexpr size_t kProbeBytes = size_t{64} * 1024;  // one GPU page

bool exists(const std::string& path) noexcept {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

}  // namespace

PeermemCheck check_peermem(const std::string& sysfs_root) {
  PeermemCheck check;
  for (const char* relative :
       {"/kernel/mm/memory_peers/nv_mem/version", "/kernel/mm/memory_peers/nv_mem_nc/version",
        "/module/nvidia_peermem/version"}) {
    std::string path = sysfs_root + relative;
    if (!check.present && exists(path)) {
      check.present = true;
      check.found = path;
    }
    check.checked.push_back(std::move(path));
  }
  return check;
}

DmabufCheck probe_dmabuf(const std::shared_ptr<verbs::Context>& context) {
  const auto reg = context->lib().fn().reg_dmabuf_mr;
  if (reg == nullptr) {
    return {DmabufStatus::NoSymbol, fmt::format("{} has no ibv_reg_dmabuf_mr (IBVERBS_1.12)",
                                                context->lib().resolved_path())};
  }
  std::shared_ptr<verbs::ProtectionDomain> pd;
  try {
    pd = verbs::ProtectionDomain::create(context);
  } catch (const verbs::VerbsError& e) {
    return {DmabufStatus::Unexpected, fmt::format("cannot allocate a PD to probe: {}", e.what())};
  }
  errno = 0;
  ibv_mr* mr = reg(pd->get(), 0, 0, 0, -1, 0);
  const int err = mr == nullptr ? (errno != 0 ? errno : EIO) : 0;
  if (mr != nullptr) {
    context->lib().fn().dereg_mr(mr);
  }
  return classify_dmabuf_probe(err);
}

CudaRegistrationProbe probe_cuda_registration(const std::shared_ptr<verbs::Context>& context) {
  const auto attached = cuda::Driver::attach();
  if (!attached) {
    return {CudaProbeStatus::NoCuda, attached.error()};
  }
  const std::unique_ptr<cuda::Driver>& driver = *attached;
  cuda::Context current = nullptr;
  const cuda::Result ctx_result = driver->ctx_get_current(&current);
  if (ctx_result != 0 || current == nullptr) {
    return {CudaProbeStatus::NoContext,
            ctx_result != 0 ? fmt::format("cuCtxGetCurrent: {}", driver->error_name(ctx_result))
                            : std::string("the calling thread has no current CUDA context")};
  }
  cuda::DevicePtr buffer = 0;
  if (const cuda::Result r = driver->mem_alloc(&buffer, kProbeBytes); r != 0) {
    return {CudaProbeStatus::CudaError,
            fmt::format("cuMemAlloc of {} bytes: {}", kProbeBytes, driver->error_name(r))};
  }
  CudaRegistrationProbe probe;
  try {
    auto pd = verbs::ProtectionDomain::create(context);
    auto mr = verbs::MemoryRegion::register_memory(
        pd, reinterpret_cast<void*>(static_cast<uintptr_t>(buffer)), kProbeBytes,
        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    probe = {CudaProbeStatus::Registered,
             fmt::format("ibv_reg_mr took a {} KiB cuMemAlloc buffer", kProbeBytes / 1024)};
  } catch (const verbs::VerbsError& e) {
    probe = {CudaProbeStatus::Refused, e.what()};
  }
  if (const cuda::Result r = driver->mem_free(buffer); r != 0) {
    ROCE_WARN(NCCL_INIT, "cuMemFree of the GPUDirect probe buffer failed: {}",
              driver->error_name(r));
  }
  return probe;
}

GdrSupport detect_gdr(const std::shared_ptr<verbs::Context>& context, const std::string& sysfs_root,
                      bool dmabuf_enabled) {
  const PeermemCheck peermem = check_peermem(sysfs_root);
  const DmabufCheck dmabuf = dmabuf_enabled
                                 ? probe_dmabuf(context)
                                 : DmabufCheck{DmabufStatus::Disabled, "NCCL_ROCE_DMABUF=0"};
  const CudaRegistrationProbe registration = probe_cuda_registration(context);
  GdrSupport support = decide_gdr(peermem, dmabuf, registration);
  if (support.dmabuf) {
    const GpuDmabufCheck gpu = check_gpu_dmabuf();
    support.dmabuf_gpu_proven = gpu.proven;
    support.dmabuf_gpu = gpu.detail;
    support.checked += fmt::format("; dma-buf on the GPU side: {}", gpu.detail);
  }
  ROCE_INFO(NCCL_INIT, "dev {}: GPUDirect {}: {}", context->name(), support.banner_mode(),
            support.checked);
  return support;
}

}  // namespace roce
