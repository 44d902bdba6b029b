// The init banner names every fact an operator needs.
#include "core/device/init_banner.h"

#include <catch2/catch.hpp>

TEST_CASE(
    "the init banner names device, GID, class with DSCP and source, SL, MTU, GPUDirect, "
    "QPs and version",
    "[banner]") {
  roce::BannerFacts f;
  f.device = "mlx5_0";
  f.port = 1;
  f.pci_path = "/sys/devices/pci0000:00/0000:00:02.0/0000:3b:00.0";
  f.speed_text = "4X NDR (400 Gb/s)";
  f.gid_index = 3;
  f.gid_type = "RoCE v2";
  f.gid_address = "::ffff:10.0.0.1";
  f.traffic_class = 106;
  f.traffic_class_source = "NCCL_IB_TC";
  f.service_level = 3;
  f.mtu_bytes = 4096;
  f.gdr_mode = "peermem";
  f.qps_per_connection = 2;
  f.version = "0.1.0";
  const std::string line = roce::format_init_banner(f);
  for (const char* needle : {"mlx5_0", "port 1", "0000:3b:00.0", "gid index 3", "RoCE v2",
                             "::ffff:10.0.0.1", "106", "dscp 26", "NCCL_IB_TC", "sl 3", "mtu 4096",
                             "gpudirect peermem", "2 qps per connection", "0.1.0"}) {
    INFO(line);
    CHECK(line.find(needle) != std::string::npos);
  }
}

TEST_CASE("without a configured class the banner says the communicator decides", "[banner]") {
  roce::BannerFacts f;
  f.device = "vroce0";
  f.gid_type = "RoCE v2";
  f.gdr_mode = "none";
  f.host_override = 96;
  const std::string line = roce::format_init_banner(f);
  CHECK(line.find("per communicator") != std::string::npos);
  CHECK(line.find("host override tc 96") != std::string::npos);
  CHECK(line.find("1 qp per connection") != std::string::npos);
  CHECK(line.find("NCCL_IB_FIFO_TC") == std::string::npos);
}

TEST_CASE("the banner names the clear-to-send class when NCCL_IB_FIFO_TC sets one", "[banner]") {
  roce::BannerFacts f;
  f.device = "vroce0";
  f.traffic_class = 106;
  f.traffic_class_source = "NCCL_ROCE_TC";
  f.fifo_traffic_class = 184;
  const std::string line = roce::format_init_banner(f);
  INFO(line);
  CHECK(line.find("clear-to-send path tc 184 = dscp 46 + not-ect from NCCL_IB_FIFO_TC") !=
        std::string::npos);
}

TEST_CASE("the banner says tc once, configured or not", "[banner]") {
  roce::BannerFacts f;
  f.device = "vroce0";
  f.traffic_class = 104;
  f.traffic_class_source = "NCCL_ROCE_TC";
  const std::string configured = roce::format_init_banner(f);
  INFO(configured);
  CHECK(configured.find("tc tc") == std::string::npos);
  CHECK(configured.find("), tc 104 = dscp 26 + not-ect from NCCL_ROCE_TC, sl ") !=
        std::string::npos);
  f.traffic_class.reset();
  const std::string per_comm = roce::format_init_banner(f);
  INFO(per_comm);
  CHECK(per_comm.find("), tc per communicator (0 when none is set), sl ") != std::string::npos);
}
