// vroce's CUDA memory path on a machine without a GPU: regions over "device memory" of a
// stand-in libcuda.so.1 (fake_cuda/) that the CPU cannot touch (PROT_NONE), so every byte vroce
// moves in or out of them must go through gpu/memory.h's driver copies; a direct access would
// crash the test. Two devices in one process (vrC1, vrC2).
//
// The suite is built twice: with copies made inside this process (VROCE_GPU_COPIES=in-process)
// and, with ROCE_TEST_HELPER_COPIES, by vroce's copy helper process (the default), whose stand-in
// driver is its own: there, this process's driver must see none of vroce's copies.
#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "fake_cuda/fake_cuda.h"
#include "hang_bound.h"
#include "harness.h"

using namespace vroce_test;
using namespace std::chrono_literals;

namespace {

#ifdef ROCE_TEST_HELPER_COPIES
constexpr bool kHelperCopies = true;
#else
constexpr bool kHelperCopies = false;
#endif

constexpr unsigned kRemote =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

struct DeviceMemory {
  unsigned long long ptr = 0;
  size_t size = 0;
  explicit DeviceMemory(size_t bytes) : size(bytes) { REQUIRE(cuMemAlloc_v2(&ptr, bytes) == 0); }
  ~DeviceMemory() { cuMemFree_v2(ptr); }
  void* addr() const { return reinterpret_cast<void*>(ptr); }
  void fill(uint64_t seed) const {
    std::vector<uint8_t> host(size);
    fill_pattern(host.data(), size, seed);
    REQUIRE(cuMemcpyHtoD_v2(ptr, host.data(), size) == 0);
  }
  int64_t mismatch(uint64_t seed, size_t at = 0, size_t length = 0) const {
    std::vector<uint8_t> host(size);
    REQUIRE(cuMemcpyDtoH_v2(host.data(), ptr, size) == 0);
    return find_mismatch(host.data() + at, length == 0 ? size - at : length, seed);
  }
};

struct Fixture {
  Fixture() {
    REQUIRE(cuInit(0) == 0);
    FakeContext* ctx = nullptr;
    REQUIRE(cuDevicePrimaryCtxRetain(&ctx, 0) == 0);
    REQUIRE(cuCtxSetCurrent(ctx) == 0);  // this thread's copies; vroce manages its own
  }
};

// The suite's two devices with one RC connection between them.
struct ConnectedPair {
  Fixture cuda;
  Device a{"vrC1"};
  Device b{"vrC2"};
  Endpoint ea;
  Endpoint eb;
  explicit ConnectedPair(const QpOptions& options = {}) : ea(a, options), eb(b, options) {
    ea.connect(eb.info());
    eb.connect(ea.info());
  }
};

int post(Endpoint& e, ibv_wr_opcode op, ibv_sge sge, uint64_t raddr = 0, uint32_t rkey = 0) {
  ibv_send_wr wr{};
  wr.opcode = op;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(e.qp, &wr, &bad);
}

ibv_wc one(ibv_cq* cq) {
  auto wcs = wait_completions(cq, 1, roce::test::kHangBound);
  REQUIRE(wcs.size() == 1);
  return wcs[0];
}

// Everything written to stderr (where vroce logs) while it lives.
class StderrCapture {
 public:
  StderrCapture() : file_(::memfd_create("stderr-capture", MFD_CLOEXEC)), saved_(::dup(2)) {
    REQUIRE(file_ >= 0);
    REQUIRE(saved_ >= 0);
    REQUIRE(::dup2(file_, 2) == 2);
  }
  ~StderrCapture() {
    ::dup2(saved_, 2);
    ::close(saved_);
    ::close(file_);
  }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  std::string text() const {
    std::string all;
    char chunk[4096];
    for (off_t at = 0;;) {
      ssize_t n = ::pread(file_, chunk, sizeof chunk, at);
      if (n <= 0) {
        return all;
      }
      all.append(chunk, static_cast<size_t>(n));
      at += n;
    }
  }
  bool wait_for(const std::string& needle, std::chrono::milliseconds limit) const {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (text().find(needle) == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline) {
        return false;
      }
      std::this_thread::sleep_for(10ms);
    }
    return true;
  }

 private:
  int file_;
  int saved_;
};

}  // namespace

namespace {

// vroce's own CUDA copies since `before` (stats_json()).
struct CopyCount {
  uint64_t to_device = 0;
  uint64_t from_device = 0;
  uint64_t bytes = 0;
};
CopyCount copies_since(const std::string& before) {
  const std::string now = stats_json();
  return {stat(now, "cuda_copies_to_device") - stat(before, "cuda_copies_to_device"),
          stat(now, "cuda_copies_from_device") - stat(before, "cuda_copies_from_device"),
          stat(now, "cuda_copy_bytes") - stat(before, "cuda_copy_bytes")};
}

}  // namespace

TEST_CASE("WRITE, READ and SEND between CUDA regions go through the driver's copies", "[cuda]") {
  ConnectedPair p;
  constexpr size_t kSize = (1 << 20) + 123;  // 257 packets of 4 KiB
  constexpr uint64_t kPackets = 257;
  DeviceMemory da(kSize);
  DeviceMemory db(kSize);
  da.fill(41);
  ibv_mr* ma = ibv_reg_mr(p.a.pd, da.addr(), kSize, kRemote);
  ibv_mr* mb = ibv_reg_mr(p.b.pd, db.addr(), kSize, kRemote);
  REQUIRE(ma != nullptr);
  REQUIRE(mb != nullptr);
  auto stream_copies_before = fake_cuda_stream_copies();
  const std::string at_start = stats_json();

  // Device -> device WRITE. The sender reads a transmit call's worth of packets (64) per copy;
  // the receiver combines the packets of each receive pass (how many that is depends on
  // scheduling, so only "every byte, at least once" is checked for that side).
  std::string before = stats_json();
  REQUIRE(post(p.ea, IBV_WR_RDMA_WRITE, ibv_sge{da.ptr, kSize, ma->lkey}, db.ptr, mb->rkey) == 0);
  CHECK(one(p.ea.send_cq).status == IBV_WC_SUCCESS);
  CHECK(db.mismatch(41) == -1);
  CopyCount write = copies_since(before);
  INFO("WRITE: " << write.from_device << " copies out, " << write.to_device << " copies in");
  CHECK(write.from_device >= 1);
  CHECK(write.from_device <= kPackets / 8);
  CHECK(write.to_device >= 1);
  CHECK(write.to_device <= kPackets);
  CHECK(write.bytes >= 2 * kSize);
  // Device -> host READ (the responder reads ahead too), host -> device READ.
  before = stats_json();
  Buffer host(p.a.pd, kSize, kRemote);
  REQUIRE(post(p.ea, IBV_WR_RDMA_READ, host.sge(0, kSize), db.ptr, mb->rkey) == 0);
  CHECK(one(p.ea.send_cq).status == IBV_WC_SUCCESS);
  CHECK(find_mismatch(host.data, kSize, 41) == -1);
  CopyCount read = copies_since(before);
  CHECK(read.from_device >= 1);
  CHECK(read.from_device <= kPackets / 8);
  CHECK(read.to_device == 0);
  Buffer remote_host(p.b.pd, kSize, kRemote);
  fill_pattern(remote_host.data, kSize, 42);
  REQUIRE(post(p.ea, IBV_WR_RDMA_READ, ibv_sge{da.ptr, kSize, ma->lkey}, remote_host.addr(),
               remote_host.mr->rkey) == 0);
  CHECK(one(p.ea.send_cq).status == IBV_WC_SUCCESS);
  CHECK(da.mismatch(42) == -1);
  // Host SEND into a receive buffer in device memory.
  ibv_sge rsge{db.ptr, 70000, mb->lkey};
  ibv_recv_wr rwr{};
  rwr.sg_list = &rsge;
  rwr.num_sge = 1;
  ibv_recv_wr* rbad = nullptr;
  REQUIRE(ibv_post_recv(p.eb.qp, &rwr, &rbad) == 0);
  fill_pattern(host.data, 70000, 43);
  REQUIRE(post(p.ea, IBV_WR_SEND, host.sge(0, 70000)) == 0);
  CHECK(one(p.ea.send_cq).status == IBV_WC_SUCCESS);
  ibv_wc r = one(p.eb.recv_cq);
  CHECK(r.status == IBV_WC_SUCCESS);
  CHECK(r.byte_len == 70000);
  CHECK(db.mismatch(43, 0, 70000) == -1);
  // Every byte crossed the driver, and only on vroce's non-blocking stream from page-locked
  // staging (the test's own checks use the synchronous copies): a copy on the legacy default
  // stream, or through the driver's pageable staging, can wait behind application work that
  // itself waits for this very data.
  // With the helper, none of them was made in this process: the application's driver (and any
  // lock an application thread holds in it) never sees them.
  const CopyCount all = copies_since(at_start);
  CHECK(fake_cuda_stream_copies() - stream_copies_before ==
        (kHelperCopies ? 0 : all.to_device + all.from_device));
  CHECK(ibv_dereg_mr(ma) == 0);
  CHECK(ibv_dereg_mr(mb) == 0);
}

TEST_CASE(
    "a SEND into a CUDA buffer followed by a host buffer lands whole, completed once both are in "
    "place",
    "[cuda]") {
  // Two regions back to back in one SEND's SGE list: the device part is combined, the host part
  // is not, and the completion comes only once both are in place.
  ConnectedPair p;
  constexpr size_t kDevice = 3 * 4096 + 100;
  constexpr size_t kHost = 2 * 4096 + 7;
  DeviceMemory dev(kDevice);
  ibv_mr* md = ibv_reg_mr(p.b.pd, dev.addr(), kDevice, kRemote);
  REQUIRE(md != nullptr);
  Buffer tail(p.b.pd, kHost, kRemote);
  ibv_sge rsges[2] = {{dev.ptr, static_cast<uint32_t>(kDevice), md->lkey}, tail.sge(0, kHost)};
  ibv_recv_wr rwr{};
  rwr.sg_list = rsges;
  rwr.num_sge = 2;
  ibv_recv_wr* rbad = nullptr;
  REQUIRE(ibv_post_recv(p.eb.qp, &rwr, &rbad) == 0);
  Buffer src(p.a.pd, kDevice + kHost, kRemote);
  fill_pattern(src.data, kDevice + kHost, 44);
  REQUIRE(post(p.ea, IBV_WR_SEND, src.sge(0, kDevice + kHost)) == 0);
  CHECK(one(p.ea.send_cq).status == IBV_WC_SUCCESS);
  ibv_wc r = one(p.eb.recv_cq);
  CHECK(r.status == IBV_WC_SUCCESS);
  CHECK(r.byte_len == kDevice + kHost);
  CHECK(dev.mismatch(44) == -1);
  CHECK(find_mismatch(tail.data, kHost, 44, kDevice) == -1);
  CHECK(ibv_dereg_mr(md) == 0);
}

TEST_CASE("dma-buf registration with a device address as iova reaches CUDA memory", "[cuda]") {
  ConnectedPair p;
  DeviceMemory da(8192);
  da.fill(44);
  // NCCL passes the dma-buf fd of the allocation and its device address as iova; vroce reaches
  // the memory by that address and never maps the fd (a memfd stands in for it here).
  int fd = memfd_create("dmabuf", MFD_CLOEXEC);
  REQUIRE(fd >= 0);
  ibv_mr* ma = ibv_reg_dmabuf_mr(p.a.pd, 0, 8192, da.ptr, fd, static_cast<int>(kRemote));
  REQUIRE(ma != nullptr);
  close(fd);
  // rdma-core sets a dma-buf region's addr to the offset into the dma-buf; work requests use the
  // iova (gdr-check once took addr for the address and got LOC_PROT_ERR).
  CHECK(ma->addr == nullptr);
  CHECK(ma->length == 8192);
  Buffer dst(p.b.pd, 8192, kRemote);
  REQUIRE(post(p.ea, IBV_WR_RDMA_WRITE, ibv_sge{da.ptr, 8192, ma->lkey}, dst.addr(),
               dst.mr->rkey) == 0);
  CHECK(one(p.ea.send_cq).status == IBV_WC_SUCCESS);
  CHECK(find_mismatch(dst.data, 8192, 44) == -1);
  CHECK(ibv_dereg_mr(ma) == 0);
}

TEST_CASE("a range that starts in device memory and runs past its allocation is EFAULT", "[cuda]") {
  Fixture cuda;
  Device a("vrC1");
  DeviceMemory d(4096);
  errno = 0;
  CHECK(ibv_reg_mr(a.pd, d.addr(), 8192, IBV_ACCESS_LOCAL_WRITE) == nullptr);
  CHECK(errno == EFAULT);
  ibv_mr* ok = ibv_reg_mr(a.pd, d.addr(), 4096, IBV_ACCESS_LOCAL_WRITE);
  REQUIRE(ok != nullptr);
  CHECK(ibv_dereg_mr(ok) == 0);
}

#ifndef ROCE_TEST_HELPER_COPIES
TEST_CASE("a copy into device memory blocked in the driver is reported with its cause", "[cuda]") {
  QpOptions patient;
  patient.timeout = 18;  // about 1 s per try: the held copy must not exhaust the retries
  ConnectedPair p(patient);
  constexpr size_t kSize = 64 * 1024;
  DeviceMemory db(kSize);
  ibv_mr* mb = ibv_reg_mr(p.b.pd, db.addr(), kSize, kRemote);
  REQUIRE(mb != nullptr);
  Buffer host(p.a.pd, kSize, kRemote);
  fill_pattern(host.data, kSize, 44);

  StderrCapture log;
  // The driver stops completing copies, as it does while the application holds its lock; the
  // WRITE's data reaches vroce, whose copy into db then blocks (VROCE_GPU_STALL_WARN_MS=300).
  fake_cuda_hold_stream_syncs(1);
  REQUIRE(post(p.ea, IBV_WR_RDMA_WRITE, host.sge(0, kSize), db.ptr, mb->rkey) == 0);
  bool reported = log.wait_for("blocked inside the CUDA driver", roce::test::kHangBound);
  fake_cuda_hold_stream_syncs(0);
  REQUIRE(reported);
  std::string text = log.text();
  CHECK(text.find("CUDA copy into device memory has been blocked") != std::string::npos);
  CHECK(text.find("CUDA_MODULE_LOADING=EAGER") != std::string::npos);
  CHECK(text.find("NCCL_NET_GDR_LEVEL=LOC") != std::string::npos);
  // Once the driver moves again the data lands and the end of the stall is reported too.
  CHECK(one(p.ea.send_cq).status == IBV_WC_SUCCESS);
  CHECK(db.mismatch(44) == -1);
  CHECK(log.wait_for("reported blocked has completed after", roce::test::kHangBound));
  CHECK(ibv_dereg_mr(mb) == 0);
}

TEST_CASE("copies with CUDA_MODULE_LOADING lazy warn once about the driver-lock deadlock",
          "[cuda]") {
  unsetenv("CUDA_MODULE_LOADING");
  ConnectedPair p;
  constexpr size_t kSize = 8192;
  DeviceMemory db(kSize);
  ibv_mr* mb = ibv_reg_mr(p.b.pd, db.addr(), kSize, kRemote);
  REQUIRE(mb != nullptr);
  Buffer host(p.a.pd, kSize, kRemote);
  StderrCapture log;
  for (int i = 0; i < 3; ++i) {
    REQUIRE(post(p.ea, IBV_WR_RDMA_WRITE, host.sge(0, kSize), db.ptr, mb->rkey) == 0);
    CHECK(one(p.ea.send_cq).status == IBV_WC_SUCCESS);
  }
  std::string text = log.text();
  const std::string warning = "while CUDA_MODULE_LOADING is unset (LAZY)";
  auto first = text.find(warning);
  CHECK(first != std::string::npos);
  CHECK(text.find(warning, first + 1) == std::string::npos);
  CHECK(ibv_dereg_mr(mb) == 0);
}
#endif  // !ROCE_TEST_HELPER_COPIES

#ifdef ROCE_TEST_HELPER_COPIES
namespace {

// vroce's copy helper: the child of this process running vroce-gpu-copier (0 if none).
pid_t copy_helper_pid() {
  DIR* proc = opendir("/proc");
  REQUIRE(proc != nullptr);
  pid_t found = 0;
  while (dirent* entry = readdir(proc)) {
    std::ifstream status(std::string("/proc/") + entry->d_name + "/stat");
    std::string pid, comm, state;
    long parent = 0;
    if (status >> pid >> comm >> state >> parent && parent == getpid() &&
        comm.find("vroce-gpu-cop") != std::string::npos) {
      found = static_cast<pid_t>(std::stol(pid));
    }
  }
  closedir(proc);
  return found;
}

}  // namespace

TEST_CASE("with the application's driver blocked, the copy helper still moves the data", "[cuda]") {
  // What ends the driver-lock deadlock: this process's driver stops completing stream
  // synchronisations, as it does while an application thread holds the driver's lock and waits
  // for the GPU; the copies, made by the helper in its own process, are not held by it.
  unsetenv("CUDA_MODULE_LOADING");
  ConnectedPair p;
  constexpr size_t kSize = 64 * 1024;
  DeviceMemory da(kSize);
  DeviceMemory db(kSize);
  da.fill(45);
  ibv_mr* ma = ibv_reg_mr(p.a.pd, da.addr(), kSize, kRemote);
  ibv_mr* mb = ibv_reg_mr(p.b.pd, db.addr(), kSize, kRemote);
  REQUIRE(ma != nullptr);
  REQUIRE(mb != nullptr);
  CHECK(copy_helper_pid() != 0);
  StderrCapture log;
  fake_cuda_hold_stream_syncs(1);
  REQUIRE(post(p.ea, IBV_WR_RDMA_WRITE, ibv_sge{da.ptr, kSize, ma->lkey}, db.ptr, mb->rkey) == 0);
  ibv_wc wc = one(p.ea.send_cq);
  fake_cuda_hold_stream_syncs(0);
  CHECK(wc.status == IBV_WC_SUCCESS);
  CHECK(db.mismatch(45) == -1);
  // Nothing to warn about: neither the stall report nor the lazy-loading warning of in-process
  // copies.
  std::string text = log.text();
  CHECK(text.find("blocked inside the CUDA driver") == std::string::npos);
  CHECK(text.find("CUDA_MODULE_LOADING") == std::string::npos);
  CHECK(ibv_dereg_mr(ma) == 0);
  CHECK(ibv_dereg_mr(mb) == 0);
}

TEST_CASE("a copy the helper's driver does not complete is reported, and lands when it moves",
          "[cuda]") {
  char hold[] = "/tmp/vroce-helper-hold-XXXXXX";
  int fd = mkstemp(hold);
  REQUIRE(fd >= 0);
  close(fd);
  unlink(hold);
  setenv("FAKE_CUDA_HOLD_WHILE", hold, 1);  // read by the helper's stand-in driver
  QpOptions patient;
  patient.timeout = 18;  // about 1 s per try: the held copy must not exhaust the retries
  ConnectedPair p(patient);
  constexpr size_t kSize = 16 * 1024;
  DeviceMemory db(kSize);
  ibv_mr* mb = ibv_reg_mr(p.b.pd, db.addr(), kSize, kRemote);  // starts the helper
  REQUIRE(mb != nullptr);
  Buffer host(p.a.pd, kSize, kRemote);
  fill_pattern(host.data, kSize, 48);
  StderrCapture log;
  REQUIRE(std::ofstream(hold).put('x').good());
  REQUIRE(post(p.ea, IBV_WR_RDMA_WRITE, host.sge(0, kSize), db.ptr, mb->rkey) == 0);
  bool reported = log.wait_for("has been unanswered for", roce::test::kHangBound);
  unlink(hold);
  INFO("vroce's log: " << log.text());
  REQUIRE(reported);
  CHECK(log.text().find("copy helper (pid " + std::to_string(copy_helper_pid()) + ")") !=
        std::string::npos);
  CHECK(one(p.ea.send_cq).status == IBV_WC_SUCCESS);
  CHECK(db.mismatch(48) == -1);
  CHECK(log.wait_for("reported unanswered has completed", roce::test::kHangBound));
  CHECK(ibv_dereg_mr(mb) == 0);
}

TEST_CASE("a copy helper that dies fails the copies loudly, and host traffic goes on", "[cuda]") {
  ConnectedPair p;
  constexpr size_t kSize = 16 * 1024;
  DeviceMemory da(kSize);
  ibv_mr* ma = ibv_reg_mr(p.a.pd, da.addr(), kSize, kRemote);
  REQUIRE(ma != nullptr);
  Buffer remote(p.b.pd, kSize, kRemote);
  fill_pattern(remote.data, kSize, 46);
  REQUIRE(post(p.ea, IBV_WR_RDMA_READ, ibv_sge{da.ptr, kSize, ma->lkey}, remote.addr(),
               remote.mr->rkey) == 0);
  REQUIRE(one(p.ea.send_cq).status == IBV_WC_SUCCESS);
  CHECK(da.mismatch(46) == -1);

  pid_t helper = copy_helper_pid();
  REQUIRE(helper != 0);
  StderrCapture log;
  REQUIRE(kill(helper, SIGKILL) == 0);
  // The READ's response cannot be placed: the QP moves to the error state, as on a DMA error
  // (IBV_EVENT_QP_FATAL), the READ completes with an error, and vroce says why.
  REQUIRE(post(p.ea, IBV_WR_RDMA_READ, ibv_sge{da.ptr, kSize, ma->lkey}, remote.addr(),
               remote.mr->rkey) == 0);
  auto deadline = std::chrono::steady_clock::now() + roce::test::kHangBound;
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  while (ibv_query_qp(p.ea.qp, &attr, IBV_QP_STATE, &init) == 0 && attr.qp_state != IBV_QPS_ERR &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  CHECK(attr.qp_state == IBV_QPS_ERR);
  CHECK(one(p.ea.send_cq).status != IBV_WC_SUCCESS);
  std::string text = log.text();
  INFO("vroce's log: " << text);
  CHECK(text.find("the copy helper (pid " + std::to_string(helper) + ") was killed by signal 9") !=
        std::string::npos);
  CHECK(text.find("VROCE_GPU_COPIES=in-process") != std::string::npos);
  // New CUDA registrations fail from now on; host memory and other connections are untouched.
  DeviceMemory more(4096);
  errno = 0;
  CHECK(ibv_reg_mr(p.a.pd, more.addr(), 4096, kRemote) == nullptr);
  CHECK(errno == EIO);
  Endpoint ea2(p.a, QpOptions{});
  Endpoint eb2(p.b, QpOptions{});
  ea2.connect(eb2.info());
  eb2.connect(ea2.info());
  Buffer local(p.a.pd, kSize, kRemote);
  fill_pattern(local.data, kSize, 47);
  REQUIRE(post(ea2, IBV_WR_RDMA_WRITE, local.sge(0, kSize), remote.addr(), remote.mr->rkey) == 0);
  CHECK(one(ea2.send_cq).status == IBV_WC_SUCCESS);
  CHECK(find_mismatch(remote.data, kSize, 47) == -1);
  CHECK(ibv_dereg_mr(ma) == 0);
}

TEST_CASE("without its copy helper, registering CUDA memory fails and names the fix", "[cuda]") {
  setenv("VROCE_GPU_COPIER", "/nonexistent/vroce-gpu-copier", 1);
  Fixture cuda;
  Device a("vrC1");
  DeviceMemory d(4096);
  StderrCapture log;
  errno = 0;
  CHECK(ibv_reg_mr(a.pd, d.addr(), 4096, IBV_ACCESS_LOCAL_WRITE) == nullptr);
  CHECK(errno == EIO);
  std::string text = log.text();
  CHECK(text.find("/nonexistent/vroce-gpu-copier cannot be run") != std::string::npos);
  CHECK(text.find("VROCE_GPU_COPIER") != std::string::npos);
  Buffer host(a.pd, 4096, IBV_ACCESS_LOCAL_WRITE);  // host memory registers as before
  CHECK(host.mr != nullptr);
}

// The helper's copy kernel (gpu/copy_kernel_mailbox.h), which the stand-in driver runs as a
// thread of the helper.
namespace {

// WRITEs `size` bytes from device memory at src + src_offset to dst + dst_offset and checks every
// byte that landed. Returns how many of vroce's copies for it the kernel made.
uint64_t kernel_copies_of_write(ConnectedPair& p, const DeviceMemory& src, ibv_mr* src_mr,
                                size_t src_offset, const DeviceMemory& dst, ibv_mr* dst_mr,
                                size_t dst_offset, size_t size, uint64_t seed) {
  const std::string before = stats_json();
  REQUIRE(post(p.ea, IBV_WR_RDMA_WRITE,
               ibv_sge{src.ptr + src_offset, static_cast<uint32_t>(size), src_mr->lkey},
               dst.ptr + dst_offset, dst_mr->rkey) == 0);
  REQUIRE(one(p.ea.send_cq).status == IBV_WC_SUCCESS);
  std::vector<uint8_t> landed(dst.size);
  REQUIRE(cuMemcpyDtoH_v2(landed.data(), dst.ptr, dst.size) == 0);
  INFO(size << " bytes from offset " << src_offset << " to offset " << dst_offset);
  CHECK(find_mismatch(landed.data() + dst_offset, size, seed, src_offset) == -1);
  return stat(stats_json(), "cuda_copies_by_kernel") - stat(before, "cuda_copies_by_kernel");
}

struct KernelPair {
  static constexpr size_t kSize = 64 * 1024;
  ConnectedPair p;
  DeviceMemory da{kSize};
  DeviceMemory db{kSize};
  ibv_mr* ma = nullptr;
  ibv_mr* mb = nullptr;
  explicit KernelPair(uint64_t seed) {
    da.fill(seed);
    ma = ibv_reg_mr(p.a.pd, da.addr(), kSize, kRemote);
    mb = ibv_reg_mr(p.b.pd, db.addr(), kSize, kRemote);
    REQUIRE(ma != nullptr);
    REQUIRE(mb != nullptr);
  }
  ~KernelPair() {
    ibv_dereg_mr(ma);
    ibv_dereg_mr(mb);
  }
  uint64_t write(size_t src_offset, size_t dst_offset, size_t size, uint64_t seed) {
    return kernel_copies_of_write(p, da, ma, src_offset, db, mb, dst_offset, size, seed);
  }
  // Kernel copies of `writes` small WRITEs.
  uint64_t kernel_copies_of_small_writes(int writes, uint64_t seed) {
    uint64_t by_kernel = 0;
    for (int i = 0; i < writes; ++i) {
      by_kernel += write(0, 0, 8, seed);
    }
    return by_kernel;
  }
  // Small WRITEs until one has a copy made by the kernel (the first small copy goes through the
  // helper's thread, which starts the kernel after it); false if none within the hang bound.
  bool until_kernel_copies(uint64_t seed) {
    const auto deadline = std::chrono::steady_clock::now() + roce::test::kHangBound;
    while (std::chrono::steady_clock::now() < deadline) {
      if (write(0, 0, 8, seed) > 0) {
        return true;
      }
    }
    return false;
  }
};

}  // namespace

#if ROCE_TEST_COPY_KERNEL_BUILT
TEST_CASE("under MPS, small copies go to the helper's copy kernel, and every byte lands",
          "[cuda]") {
  setenv("FAKE_CUDA_MPS", "1", 1);  // read by the helper's stand-in driver
  // The kernel stays up between these WRITEs however slowly a loaded machine runs them: only a
  // registration stops it here.
  setenv("VROCE_GPU_COPY_KERNEL_IDLE_MS", "600000", 1);
  constexpr uint64_t kSeed = 60;
  KernelPair k(kSeed);
  REQUIRE(k.until_kernel_copies(kSeed));
  // Inside the request line (up to 72 bytes), through the staging buffer (up to
  // VROCE_GPU_COPY_KERNEL_MAX, 4096), above it (the copy engine); at odd offsets on either side.
  uint64_t by_kernel = 0;
  const std::string before = stats_json();
  for (size_t size : {1UL, 8UL, 12UL, 13UL, 72UL, 73UL, 1000UL, 4096UL, 4097UL, 20000UL}) {
    by_kernel += k.write(0, 0, size, kSeed);
    by_kernel += k.write(3, 0, size, kSeed);
    by_kernel += k.write(0, 5, size, kSeed);
  }
  const CopyCount all = copies_since(before);
  INFO(by_kernel << " of " << all.to_device + all.from_device << " copies made by the kernel");
  // Both copies of each WRITE up to 4096 bytes (8 sizes, 3 WRITEs each) went to the kernel:
  // it runs for as long as copies keep coming.
  CHECK(by_kernel >= 2 * 8 * 3);
  CHECK(by_kernel < all.to_device + all.from_device);  // the larger ones did not

  // A registration while the kernel runs: the helper stops it to open the memory (the driver's
  // IPC calls would wait for it forever), and the next small copies start it again.
  DeviceMemory dc(4096);
  ibv_mr* mc = ibv_reg_mr(k.p.b.pd, dc.addr(), 4096, kRemote);
  REQUIRE(mc != nullptr);
  kernel_copies_of_write(k.p, k.da, k.ma, 0, dc, mc, 0, 64, kSeed);
  CHECK(k.until_kernel_copies(kSeed));
  CHECK(ibv_dereg_mr(mc) == 0);
  // The close stopped it too: the WRITE's first copy goes through the helper's thread (its second
  // may find the kernel started again).
  CHECK(k.write(0, 7, 40, kSeed) < 2);
}

// (vroce reads its environment once per process, so each setting is a test case of its own.)
TEST_CASE("without MPS the copy kernel stays off", "[cuda]") {
  unsetenv("FAKE_CUDA_MPS");
  constexpr uint64_t kSeed = 61;
  KernelPair k(kSeed);
  CHECK(k.kernel_copies_of_small_writes(20, kSeed) == 0);
}

TEST_CASE("VROCE_GPU_COPY_KERNEL=on starts the copy kernel without MPS", "[cuda]") {
  unsetenv("FAKE_CUDA_MPS");
  setenv("VROCE_GPU_COPY_KERNEL", "on", 1);
  constexpr uint64_t kSeed = 63;
  KernelPair k(kSeed);
  CHECK(k.until_kernel_copies(kSeed));
}

TEST_CASE("an idle copy kernel is stopped, and the next small copy starts it again", "[cuda]") {
  setenv("FAKE_CUDA_MPS", "1", 1);
  constexpr uint64_t kSeed = 62;
  KernelPair k(kSeed);
  REQUIRE(k.until_kernel_copies(kSeed));
  // The helper stops a kernel that had no request for 20 ms; a WRITE after a pause then goes
  // through the helper's thread (none of its copies by the kernel) and starts it again.
  bool stopped = false;
  const auto deadline = std::chrono::steady_clock::now() + roce::test::kHangBound;
  while (!stopped && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
    stopped = k.write(0, 0, 8, kSeed) == 0;
  }
  CHECK(stopped);
  CHECK(k.until_kernel_copies(kSeed));
}

TEST_CASE("a copy kernel that faults fails its copy loudly, and the QP with it", "[cuda]") {
  setenv("FAKE_CUDA_MPS", "1", 1);
  setenv("FAKE_CUDA_KERNEL_FAULT", "1", 1);  // the kernel faults at its first request
  constexpr uint64_t kSeed = 64;
  KernelPair k(kSeed);
  StderrCapture log;
  // The first WRITE's copies go through the helper's thread, which starts the kernel; a later
  // one is handed to it and never answered: the helper sees the kernel end with an error, and the
  // copy fails as a DMA error does, moving the QP to the error state.
  ibv_wc wc{};
  const auto deadline = std::chrono::steady_clock::now() + roce::test::kHangBound;
  do {
    REQUIRE(post(k.p.ea, IBV_WR_RDMA_WRITE, ibv_sge{k.da.ptr, 8, k.ma->lkey}, k.db.ptr,
                 k.mb->rkey) == 0);
    wc = one(k.p.ea.send_cq);
  } while (wc.status == IBV_WC_SUCCESS && std::chrono::steady_clock::now() < deadline);
  CHECK(wc.status != IBV_WC_SUCCESS);
  const std::string text = log.text();
  INFO("vroce's log: " << text);
  CHECK(text.find("the copy kernel of the helper (pid " + std::to_string(copy_helper_pid()) +
                  ") ended with CUresult 719") != std::string::npos);
  CHECK(text.find("VROCE_GPU_COPY_KERNEL=off") != std::string::npos);
  errno = 0;
  DeviceMemory more(4096);
  CHECK(ibv_reg_mr(k.p.a.pd, more.addr(), 4096, kRemote) == nullptr);  // the helper is failed
  CHECK(errno == EIO);
}
#else   // a helper built where nvcc was missing
TEST_CASE("a copy helper built without its copy kernel says so, and copies as before", "[cuda]") {
  setenv("FAKE_CUDA_MPS", "1", 1);
  setenv("VROCE_LOG", "info", 1);
  StderrCapture log;  // before the helper starts, so that its log lands here too
  constexpr uint64_t kSeed = 65;
  KernelPair k(kSeed);
  CHECK(k.kernel_copies_of_small_writes(20, kSeed) == 0);
  CHECK(log.text().find("vroce-gpu-copier was built without it") != std::string::npos);
}
#endif  // ROCE_TEST_COPY_KERNEL_BUILT
#endif  // ROCE_TEST_HELPER_COPIES
