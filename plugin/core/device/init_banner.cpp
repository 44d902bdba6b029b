// The init banner: see init_banner.h.
#include "core/device/init_banner.h"

#include <fmt/format.h>

#include "core/device/traffic_class.h"

namespace roce {

std::string format_init_banner(const BannerFacts& f) {
  // Every branch starts with "tc": describe_traffic_class() names it ("tc 104 = dscp 26 ...").
  std::string tc;
  if (f.traffic_class) {
    tc =
        fmt::format("{} from {}", describe_traffic_class(*f.traffic_class), f.traffic_class_source);
  } else {
    tc = "tc per communicator (0 when none is set)";
  }
  if (f.fifo_traffic_class) {
    tc += fmt::format(", clear-to-send path {} from NCCL_IB_FIFO_TC",
                      describe_traffic_class(*f.fifo_traffic_class));
  }
  if (f.host_override) {
    tc += fmt::format(", host override tc {}", *f.host_override);
  }
  const std::string sl =
      f.service_level ? fmt::format("{} from NCCL_IB_SL", *f.service_level) : "0 (default)";
  return fmt::format(
      "dev {} port {}{}{}: gid index {} ({}, {}), {}, sl {}, mtu {}, gpudirect {}{}, "
      "{} qp{} per connection, nccl-net-roce {}",
      f.device, f.port, f.pci_path.empty() ? "" : fmt::format(" ({})", f.pci_path),
      f.speed_text.empty() ? "" : fmt::format(" {}", f.speed_text), f.gid_index, f.gid_type,
      f.gid_address, tc, sl, f.mtu_bytes, f.gdr_mode,
      f.relaxed_ordering ? ", relaxed ordering" : "", f.qps_per_connection,
      f.qps_per_connection == 1 ? "" : "s", f.version);
}

}  // namespace roce
