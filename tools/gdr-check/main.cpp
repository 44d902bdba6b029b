// gdr-check: which GPUDirect RDMA modes work on this node, verified with data, and how fast.
// For each mode (registration by pointer, by dma-buf) it registers a GPU source and a GPU
// destination buffer on two connected queue pairs, RDMA WRITEs a pattern from one to the other
// and RDMA READs it back into the cleared source, checks both against the pattern, then times
// repeated WRITEs and READs.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cuda_memory.h"
#include "options.h"
#include "report.h"
#include "verbs_loopback.h"

namespace gdr {
namespace {

constexpr int kExitNoMode = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoGpu = 3;
constexpr int kExitNoRdma = 4;

std::vector<uint8_t> pattern(size_t length, uint8_t seed) {
  std::vector<uint8_t> p(length);
  for (size_t i = 0; i < length; ++i)
    p[i] = static_cast<uint8_t>((i * 131u + (i >> 12) + seed) & 0xffu);
  return p;
}

// The first byte offset where `got` differs from `want`, or -1.
long first_mismatch(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i] != want[i])
      return static_cast<long>(i);
  }
  return -1;
}

using RegisterFn = MrPtr (*)(Loopback&, int, GpuBuffer&, std::string*);

MrPtr register_by_pointer(Loopback& lb, int side, GpuBuffer& buf, std::string* error) {
  return lb.register_pointer(side, buf.data(), buf.size(), error);
}

MrPtr register_by_dmabuf(Loopback& lb, int side, GpuBuffer& buf, std::string* error) {
  int fd = export_dmabuf(buf, error);
  if (fd < 0)
    return nullptr;
  MrPtr mr =
      lb.register_dmabuf(side, fd, reinterpret_cast<uint64_t>(buf.data()), buf.size(), error);
  close(fd);  // the MR holds its own reference to the dma-buf
  return mr;
}

// Both registrations use the buffer's device address as the IOVA (ibv_reg_mr implicitly, and
// ibv_reg_dmabuf_mr as its iova argument), so work requests address the buffers by it.
uint64_t iova_of(const GpuBuffer& buf) {
  return reinterpret_cast<uint64_t>(buf.data());
}

double timed_gbps(Loopback& lb, ibv_wr_opcode op, const ibv_mr& local, uint64_t local_iova,
                  const ibv_mr& remote, uint64_t remote_iova, size_t length, int iterations,
                  std::string* error) {
  auto start = std::chrono::steady_clock::now();
  if (!lb.transfer(op, local, local_iova, remote, remote_iova, length, iterations, error))
    return -1;
  std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
  return static_cast<double>(length) * iterations / seconds.count() / 1e9;
}

ModeResult run_mode(const char* name, RegisterFn reg, Loopback& lb, GpuBuffer& src, GpuBuffer& dst,
                    const Options& o, uint8_t seed) {
  ModeResult m;
  m.mode = name;
  m.bytes = o.size;
  std::string err;
  MrPtr local = reg(lb, 0, src, &err);
  MrPtr remote = local ? reg(lb, 1, dst, &err) : nullptr;
  if (!local || !remote) {
    m.reason = err;
    return m;
  }
  const auto want = pattern(o.size, seed);
  std::vector<uint8_t> got;
  if (!src.upload(want, &err) || !dst.clear(&err) ||
      !lb.transfer(IBV_WR_RDMA_WRITE, *local, iova_of(src), *remote, iova_of(dst), o.size, 1,
                   &err) ||
      !dst.download(&got, o.size, &err)) {
    m.reason = err;
    return m;
  }
  if (long at = first_mismatch(got, want); at >= 0) {
    m.reason =
        "RDMA WRITE completed but the destination GPU buffer differs at byte " + std::to_string(at);
    return m;
  }
  if (!src.clear(&err) ||
      !lb.transfer(IBV_WR_RDMA_READ, *local, iova_of(src), *remote, iova_of(dst), o.size, 1,
                   &err) ||
      !src.download(&got, o.size, &err)) {
    m.reason = err;
    return m;
  }
  if (long at = first_mismatch(got, want); at >= 0) {
    m.reason =
        "RDMA READ completed but the source GPU buffer differs at byte " + std::to_string(at);
    return m;
  }
  m.write_gbps = timed_gbps(lb, IBV_WR_RDMA_WRITE, *local, iova_of(src), *remote, iova_of(dst),
                            o.size, o.iterations, &err);
  m.read_gbps = m.write_gbps < 0 ? -1
                                 : timed_gbps(lb, IBV_WR_RDMA_READ, *local, iova_of(src), *remote,
                                              iova_of(dst), o.size, o.iterations, &err);
  if (m.write_gbps < 0 || m.read_gbps < 0) {
    m.reason = "timed transfers failed after the verified ones: " + err;
    m.write_gbps = m.read_gbps = 0;
    return m;
  }
  m.ok = true;
  return m;
}

int run(const Options& o) {
  Report r;
  std::string err;
  auto gpu = open_gpu(o.gpu, &err);
  if (!gpu) {
    r.exit_status = kExitNoGpu;
    r.error = "no usable CUDA GPU (" + err + "): GPUDirect RDMA cannot be checked on this machine";
    print_report(r, o.format);
    return r.exit_status;
  }
  r.gpu = "GPU " + std::to_string(gpu->ordinal) + " " + gpu->name + " (" + gpu->pci_bus_id + ")";
  Loopback::Error kind{};
  auto lb = Loopback::open(o, &err, &kind);
  if (!lb) {
    r.exit_status = kind == Loopback::Error::NoDevice ? kExitNoRdma : kExitNoMode;
    r.error = err;
    print_report(r, o.format);
    return r.exit_status;
  }
  r.path = lb->describe();
  auto src = GpuBuffer::allocate(o.size, &err);
  auto dst = src ? GpuBuffer::allocate(o.size, &err) : nullptr;
  if (!src || !dst) {
    r.exit_status = kExitNoMode;
    r.error = err;
    print_report(r, o.format);
    return r.exit_status;
  }
  r.modes.push_back(run_mode("pointer", register_by_pointer, *lb, *src, *dst, o, 0x5a));
  r.modes.push_back(run_mode("dmabuf", register_by_dmabuf, *lb, *src, *dst, o, 0xa5));
  r.exit_status = (r.modes[0].ok || r.modes[1].ok) ? 0 : kExitNoMode;
  print_report(r, o.format);
  return r.exit_status;
}

}  // namespace
}  // namespace gdr

int main(int argc, char** argv) {
  std::string error;
  bool help = false;
  auto options = gdr::parse_options(argc, argv, &error, &help);
  if (help) {
    std::fputs(gdr::usage_text(), stdout);
    return 0;
  }
  if (!options) {
    std::fprintf(stderr, "gdr-check: %s\n\n%s", error.c_str(), gdr::usage_text());
    return gdr::kExitUsage;
  }
  return gdr::run(*options);
}
