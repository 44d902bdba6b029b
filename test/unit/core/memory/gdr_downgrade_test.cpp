// The GPUDirect downgrade decision (gdr_downgrade.h): which registrations before a receive
// comm's first irecv mean that NCCL staged it through host memory, NCCL's PCI distance from
// sysfs paths, NCCL_NET_GDR_LEVEL as NCCL reads it, the message, and the banner's dma-buf claim.
#include "core/memory/gdr_downgrade.h"

#include <catch2/catch.hpp>
#include <cerrno>

#include "core/memory/gdr.h"

using namespace roce;

namespace {

// NCCL's non-shared receive connection downgraded (net.cc recvProxyConnect): LL, LL128 and
// SIMPLE buffers all in host memory, then a receive of one slice into SIMPLE.
StagingInputs host_staged() {
  StagingInputs in;
  in.gdr_offered = true;
  in.gpu_in_play = true;
  in.evidence.host_registrations = 3;
  in.evidence.last_host_addr = 0x10000000;
  in.evidence.last_host_size = 4 << 20;
  in.first_recv_addr = 0x10000000;
  in.first_recv_size = 512 << 10;
  return in;
}

}  // namespace

TEST_CASE(
    "a receive comm with only host staging buffers while GPUDirect is offered is a "
    "downgrade",
    "[gdr_downgrade]") {
  CHECK(judge_staging(host_staged()) == StagingVerdict::HostStaged);
  SECTION("shared p2p buffers: one host SIMPLE pool is enough") {
    StagingInputs in = host_staged();
    in.evidence.host_registrations = 1;
    CHECK(judge_staging(in) == StagingVerdict::HostStaged);
  }
}

TEST_CASE("GPU buffers next to host LL buffers are GPUDirect, not a downgrade", "[gdr_downgrade]") {
  // Shared p2p receive with NCCL_ALLOC_P2P_NET_LL_BUFFERS: SIMPLE in GPU memory, LL on the host.
  StagingInputs in = host_staged();
  in.evidence.host_registrations = 1;
  in.evidence.device_registrations = 1;
  CHECK(judge_staging(in) == StagingVerdict::GpuMemory);
  SECTION("dma-buf registrations count as GPU memory too, even alone") {
    in.evidence.host_registrations = 0;
    CHECK(judge_staging(in) == StagingVerdict::GpuMemory);
  }
}

TEST_CASE("host memory is normal where NCCL could not have used the GPU", "[gdr_downgrade]") {
  SECTION("the device offers no GPUDirect (ptrSupport host only)") {
    StagingInputs in = host_staged();
    in.gdr_offered = false;
    CHECK(judge_staging(in) == StagingVerdict::NotOffered);
  }
  SECTION("no CUDA context on the registering thread: an application's host buffers") {
    StagingInputs in = host_staged();
    in.gpu_in_play = false;
    CHECK(judge_staging(in) == StagingVerdict::NoGpu);
  }
  SECTION("NCCL_NET_GDR_LEVEL=LOC: the operator turned GPUDirect off") {
    StagingInputs in = host_staged();
    in.gdr_turned_off = true;
    CHECK(judge_staging(in) == StagingVerdict::TurnedOff);
  }
  SECTION("nothing registered: empty receives only") {
    StagingInputs in = host_staged();
    in.evidence.host_registrations = 0;
    CHECK(judge_staging(in) == StagingVerdict::NoRegistration);
  }
  SECTION("a receive into the whole registered buffer: bootstrap over the plugin or an app") {
    StagingInputs in = host_staged();
    in.first_recv_size = in.evidence.last_host_size;
    CHECK(judge_staging(in) == StagingVerdict::WholeHostBuffer);
  }
}

TEST_CASE("send comms are not judged: GDR read off stages sends through host memory",
          "[gdr_downgrade]") {
  // net.cc sendProxyConnect: LL always on the host, LL128 and SIMPLE on the host when GDR read
  // is off (NCCL_NET_GDR_READ=0, or pre-Ampere without NVLink peers), which is by design.
  StagingInputs in = host_staged();
  in.receive_comm = false;
  CHECK(judge_staging(in) == StagingVerdict::SendComm);
}

TEST_CASE("PCI distance from sysfs paths, as NCCL's path types", "[gdr_downgrade]") {
  const std::string root = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0";
  SECTION("one switch: PIX") {
    const PciDistance d = pci_distance(root + "/0000:02:00.0/0000:03:00.0",
                                       root + "/0000:02:01.0/0000:04:00.0", 0, 0);
    CHECK(d.level == PciLevel::PIX);
  }
  SECTION("two switches below one root port: PXB") {
    const PciDistance d =
        pci_distance(root + "/0000:02:00.0/0000:03:00.0/0000:04:00.0/0000:05:00.0",
                     root + "/0000:02:01.0/0000:06:00.0", 0, 0);
    CHECK(d.level == PciLevel::PXB);
  }
  SECTION("different root ports of one host bridge: PHB") {
    const PciDistance d = pci_distance("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0",
                                       "/sys/devices/pci0000:00/0000:00:03.0/0000:05:00.0", 0, 0);
    CHECK(d.level == PciLevel::PHB);
  }
  SECTION("different root complexes of one NUMA node: PHB; of two: SYS") {
    const std::string gpu = "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0";
    const std::string nic = "/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0";
    CHECK(pci_distance(gpu, nic, 0, 0).level == PciLevel::PHB);
    CHECK(pci_distance(gpu, nic, 0, 1).level == PciLevel::SYS);
    CHECK(pci_distance(gpu, nic, std::nullopt, 1).level == PciLevel::SYS);
  }
}

TEST_CASE("NCCL_NET_GDR_LEVEL is read as NCCL reads it", "[gdr_downgrade]") {
  CHECK_FALSE(read_gdr_level(nullptr).level);
  CHECK(read_gdr_level(nullptr).text.find("PXB = 5") != std::string::npos);
  CHECK(read_gdr_level("SYS").level == 9);
  CHECK(read_gdr_level("PHB").level == 8);
  CHECK(read_gdr_level("2").level == 5);     // old numbering: 2 = PXB
  CHECK(read_gdr_level("7").level == 9);     // beyond the old table: SYS
  CHECK_FALSE(read_gdr_level("sys").level);  // NCCL compares names exactly
}

TEST_CASE("the downgrade message names GPU, NIC, distance, NCCL_NET_GDR_LEVEL and the fix",
          "[gdr_downgrade]") {
  DowngradeFacts f;
  f.gpu = "GPU 0 (PCI 0000:17:00.0)";
  f.gpu_path = "/sys/devices/pci0000:00/0000:00:01.0/0000:17:00.0";
  f.nic = "mlx5_1";
  f.nic_path = "/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0";
  f.distance = PciDistance{PciLevel::SYS, "different root complexes"};
  f.gdr_level = read_gdr_level(nullptr);
  const std::string error = format_downgrade(f, true);
  for (const char* needle :
       {"GPUDirect RDMA downgrade", "GPU 0 (PCI 0000:17:00.0)", "0000:17:00.0", "mlx5_1",
        "0000:81:00.0", "PCI distance SYS = 9", "NCCL_NET_GDR_LEVEL unset", "PXB = 5", "ACS",
        "one PCIe switch", "NCCL_NET_GDR_LEVEL=SYS",
        "NCCL_ROCE_REQUIRE_GDR=1 makes this an error"}) {
    INFO(error);
    CHECK(error.find(needle) != std::string::npos);
  }
  SECTION("a NIC without a PCI path (vroce) is said to have none") {
    f.nic_path.reset();
    f.distance.reset();
    const std::string warn = format_downgrade(f, false);
    CHECK(warn.find("no PCI path") != std::string::npos);
    CHECK(warn.find("PHB = 8") != std::string::npos);
    CHECK(warn.find("set NCCL_ROCE_REQUIRE_GDR=1 to make this an error") != std::string::npos);
  }
}

TEST_CASE("the banner claims dma-buf only when a GPU proves it", "[gdr_downgrade][banner]") {
  PeermemCheck no_peermem;
  const GdrSupport base =
      decide_gdr(no_peermem, classify_dmabuf_probe(EBADF), {CudaProbeStatus::NoCuda, ""});
  REQUIRE(base.dmabuf);
  SECTION("no GPU: NIC ready, not proven") {
    GdrSupport s = base;
    s.dmabuf_gpu = "no GPU to prove it on (libcuda.so.1 is not loaded in this process)";
    CHECK(s.banner_mode() ==
          "dma-buf: NIC ready, no GPU to prove it on (libcuda.so.1 is not loaded in this process)");
  }
  SECTION("a GPU whose driver exports dma-buf: claimed") {
    GdrSupport s = base;
    s.dmabuf_gpu_proven = true;
    CHECK(s.banner_mode() == "dma-buf");
  }
  SECTION("peermem stays claimed next to an unproven dma-buf") {
    GdrSupport s = decide_gdr(PeermemCheck{true, "/sys/module/nvidia_peermem/version", {}},
                              classify_dmabuf_probe(EBADF), {CudaProbeStatus::NoCuda, ""});
    s.dmabuf_gpu = "GPU 0's driver cannot export dma-buf";
    CHECK(s.banner_mode() == "peermem, dma-buf: NIC ready, GPU 0's driver cannot export dma-buf");
  }
}
