// GPUDirect decisions over probe results, and the peermem check over fixture trees.
#include "core/memory/gdr.h"

#include <catch2/catch.hpp>
#include <cerrno>

#include "core/memory/gdr_probe.h"
#include "fake_verbs.h"
#include "fixture_tree.h"
#include "nccl_net/types.h"
#include "verbs/device_list.h"

using namespace roce;
using roce::test::FixtureTree;

namespace {

PeermemCheck peermem(bool present) {
  PeermemCheck check;
  check.checked = {"/sys/kernel/mm/memory_peers/nv_mem/version",
                   "/sys/kernel/mm/memory_peers/nv_mem_nc/version",
                   "/sys/module/nvidia_peermem/version"};
  if (present) {
    check.present = true;
    check.found = check.checked[2];
  }
  return check;
}

const CudaRegistrationProbe kNoContext{CudaProbeStatus::NoContext, "no context"};
const CudaRegistrationProbe kRegistered{CudaProbeStatus::Registered, "took it"};

}  // namespace

TEST_CASE("the dma-buf probe is supported only when the kernel answers EBADF", "[gdr]") {
  CHECK(classify_dmabuf_probe(EBADF).status == DmabufStatus::Supported);
  CHECK(classify_dmabuf_probe(EOPNOTSUPP).status == DmabufStatus::Unsupported);
  CHECK(classify_dmabuf_probe(EPROTONOSUPPORT).status == DmabufStatus::Unsupported);
  CHECK(classify_dmabuf_probe(ENOSYS).status == DmabufStatus::Unsupported);
  CHECK(classify_dmabuf_probe(EINVAL).status == DmabufStatus::Unexpected);
  CHECK(classify_dmabuf_probe(0).status == DmabufStatus::Unexpected);
  CHECK(classify_dmabuf_probe(EINVAL).detail.find("EINVAL") != std::string::npos);
}

TEST_CASE("ptrSupport follows what was established", "[gdr]") {
  const DmabufCheck no_dmabuf{DmabufStatus::Unsupported, "EOPNOTSUPP"};
  const DmabufCheck dmabuf{DmabufStatus::Supported, "EBADF"};
  SECTION("nothing: host memory only") {
    const GdrSupport s = decide_gdr(peermem(false), no_dmabuf, kNoContext);
    CHECK(s.ptr_support() == NCCL_PTR_HOST);
    CHECK(s.mode == "none");
    CHECK_FALSE(s.usable());
  }
  SECTION("peermem: CUDA pointers") {
    const GdrSupport s = decide_gdr(peermem(true), no_dmabuf, kNoContext);
    CHECK(s.ptr_support() == (NCCL_PTR_HOST | NCCL_PTR_CUDA));
    CHECK(s.mode == "peermem");
  }
  SECTION("dma-buf only") {
    const GdrSupport s = decide_gdr(peermem(false), dmabuf, kNoContext);
    CHECK(s.ptr_support() == (NCCL_PTR_HOST | NCCL_PTR_DMABUF));
    CHECK(s.mode == "dma-buf");
    CHECK(s.usable());
  }
  SECTION("both") {
    const GdrSupport s = decide_gdr(peermem(true), dmabuf, kNoContext);
    CHECK(s.ptr_support() == (NCCL_PTR_HOST | NCCL_PTR_CUDA | NCCL_PTR_DMABUF));
    CHECK(s.mode == "peermem+dma-buf");
  }
  SECTION("a NIC that takes CUDA pointers without peermem") {
    const GdrSupport s = decide_gdr(peermem(false), no_dmabuf, kRegistered);
    CHECK(s.ptr_support() == (NCCL_PTR_HOST | NCCL_PTR_CUDA));
    CHECK(s.mode == "cuda-registration");
  }
  SECTION("dma-buf disabled by setting is not offered") {
    const GdrSupport s = decide_gdr(
        peermem(false), DmabufCheck{DmabufStatus::Disabled, "NCCL_ROCE_DMABUF=0"}, kNoContext);
    CHECK((s.ptr_support() & NCCL_PTR_DMABUF) == 0);
    CHECK(s.checked.find("NCCL_ROCE_DMABUF=0") != std::string::npos);
  }
}

TEST_CASE("the checked line names every check and its answer", "[gdr]") {
  const GdrSupport s =
      decide_gdr(peermem(false), DmabufCheck{DmabufStatus::NoSymbol, "no sym"}, kNoContext);
  CHECK(s.checked.find("/sys/module/nvidia_peermem/version") != std::string::npos);
  CHECK(s.checked.find("dma-buf: unavailable (no sym)") != std::string::npos);
  CHECK(s.checked.find("no current CUDA context") != std::string::npos);
}

TEST_CASE("NCCL_ROCE_REQUIRE_GDR=1 fails only when nothing is usable, saying how to fix it",
          "[gdr]") {
  const GdrSupport none =
      decide_gdr(peermem(false), DmabufCheck{DmabufStatus::Unsupported, "EOPNOTSUPP"}, kNoContext);
  CHECK(check_gdr_requirement(none, false).has_value());
  const roce::Status refused = check_gdr_requirement(none, true);
  REQUIRE_FALSE(refused.has_value());
  const std::string& error = refused.error();
  CHECK(error.find("NCCL_ROCE_REQUIRE_GDR=1") != std::string::npos);
  CHECK(error.find("nvidia-peermem") != std::string::npos);
  CHECK(error.find("dma-buf") != std::string::npos);
  CHECK(error.find("EOPNOTSUPP") != std::string::npos);
  const GdrSupport peer = decide_gdr(peermem(true), DmabufCheck{}, kNoContext);
  CHECK(check_gdr_requirement(peer, true).has_value());
}

TEST_CASE("relaxed ordering needs ibv_reg_mr_iova2 and is off when set to 0", "[gdr]") {
  CHECK_FALSE(decide_relaxed_ordering(0, true).enabled);
  CHECK(decide_relaxed_ordering(1, true).enabled);
  CHECK(decide_relaxed_ordering(2, true).enabled);
  CHECK_FALSE(decide_relaxed_ordering(2, false).enabled);
  const RelaxedOrdering forced = decide_relaxed_ordering(1, false);
  CHECK_FALSE(forced.enabled);
  CHECK(forced.note.find("NCCL_IB_PCI_RELAXED_ORDERING=1") != std::string::npos);
}

TEST_CASE("each relaxed-ordering note, logged on its own line, names its subject", "[gdr]") {
  for (const int setting : {0, 1, 2}) {
    for (const bool have : {false, true}) {
      const std::string note = decide_relaxed_ordering(setting, have).note;
      INFO(note);
      CHECK(note.rfind("PCIe relaxed ordering ", 0) == 0);
    }
  }
}

TEST_CASE("peermem is found through any of the three sysfs paths under the root", "[gdr]") {
  FixtureTree tree;
  SECTION("none") {
    const PeermemCheck check = check_peermem(tree.root());
    CHECK_FALSE(check.present);
    CHECK(check.checked.size() == 3);
  }
  SECTION("nv_mem") {
    tree.write("kernel/mm/memory_peers/nv_mem/version", "1.3\n");
    CHECK(check_peermem(tree.root()).present);
  }
  SECTION("nv_mem_nc") {
    tree.write("kernel/mm/memory_peers/nv_mem_nc/version", "1.3\n");
    CHECK(check_peermem(tree.root()).present);
  }
  SECTION("nvidia_peermem module") {
    tree.write("module/nvidia_peermem/version", "550.54\n");
    const PeermemCheck check = check_peermem(tree.root());
    CHECK(check.present);
    CHECK(check.found == tree.path("module/nvidia_peermem/version"));
  }
}

TEST_CASE("detection on a device: peermem from sysfs, no dma-buf symbol, no CUDA in process",
          "[gdr]") {
  roce::test::FakeVerbs fake;  // its library has no ibv_reg_dmabuf_mr
  auto lib = fake.library();
  verbs::DeviceList list(lib);
  const auto context = verbs::Context::open(lib, list.devices()[0]);
  FixtureTree tree;
  tree.write("module/nvidia_peermem/version", "550.54\n");
  const GdrSupport support = detect_gdr(context, tree.root(), true);
  CHECK(support.peermem);
  CHECK_FALSE(support.dmabuf);
  // This test process never loads libcuda, so the registration probe must not run.
  CHECK(support.registration_probe.status == CudaProbeStatus::NoCuda);
  CHECK(support.mode == "peermem");
  CHECK(support.ptr_support() == (NCCL_PTR_HOST | NCCL_PTR_CUDA));
  CHECK(fake.live_pds == 0);  // probes leave nothing behind
  const GdrSupport disabled = detect_gdr(context, tree.root(), false);
  CHECK(disabled.checked.find("disabled (NCCL_ROCE_DMABUF=0)") != std::string::npos);
}
