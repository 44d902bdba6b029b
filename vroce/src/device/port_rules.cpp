// Port and device attribute rules; see port_rules.h.
#include "device/port_rules.h"

#include <endian.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>

#include "config/config.h"
#include "device/limits.h"

namespace vroce::device {
namespace {

// GRH 40 + UDP 8 + BTH 12 + the largest extended header (XRC 4 + AtomicETH 28) + ICRC 4: what
// the kernel subtracts from the netdev MTU before picking an IB MTU.
constexpr uint32_t kRoceHeaderBytes = 40 + 8 + 12 + 4 + 28 + 4;

constexpr uint8_t kPhysStateLinkUp = 5;
constexpr uint8_t kPhysStateDisabled = 3;

uint64_t fnv1a(uint64_t hash, std::string_view text) {
  for (char c : text) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

}  // namespace

std::optional<ibv_mtu> active_mtu_for_netdev_mtu(uint32_t netdev_mtu) {
  if (netdev_mtu < kRoceHeaderBytes + 256) {
    return std::nullopt;
  }
  uint32_t payload = netdev_mtu - kRoceHeaderBytes;
  if (payload >= 4096) {
    return IBV_MTU_4096;
  }
  if (payload >= 2048) {
    return IBV_MTU_2048;
  }
  if (payload >= 1024) {
    return IBV_MTU_1024;
  }
  if (payload >= 512) {
    return IBV_MTU_512;
  }
  return IBV_MTU_256;
}

uint32_t ibv_mtu_bytes(ibv_mtu mtu) {
  switch (mtu) {
    case IBV_MTU_256:
      return 256;
    case IBV_MTU_512:
      return 512;
    case IBV_MTU_1024:
      return 1024;
    case IBV_MTU_2048:
      return 2048;
    case IBV_MTU_4096:
      return 4096;
  }
  return 0;
}

std::optional<PortSpeed> port_speed_for_gbps(uint32_t gbps) {
  constexpr uint8_t kWidth4x = 2;
  constexpr uint8_t kWidth8x = 4;
  constexpr uint8_t kSpeedEdr = 32;
  constexpr uint8_t kSpeedHdr = 64;
  constexpr uint8_t kSpeedNdr = 128;
  switch (gbps) {
    case 100:
      return PortSpeed{kWidth4x, kSpeedEdr, 4, 25, "EDR"};
    case 200:
      return PortSpeed{kWidth4x, kSpeedHdr, 4, 50, "HDR"};
    case 400:
      return PortSpeed{kWidth4x, kSpeedNdr, 4, 100, "NDR"};
    case 800:
      // 8 lanes of NDR rather than 4 of XDR: rdma-core 44's active_speed is 8 bits wide and has
      // no code for a 200G lane.
      return PortSpeed{kWidth8x, kSpeedNdr, 8, 100, "NDR"};
    default:
      return std::nullopt;
  }
}

MacAddress derive_local_mac(std::string_view device_name, std::string_view address_text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  hash = fnv1a(hash, device_name);
  hash = fnv1a(hash, std::string_view("\0", 1));
  hash = fnv1a(hash, address_text);
  MacAddress mac{};
  for (size_t i = 0; i < mac.size(); ++i) {
    mac[i] = static_cast<uint8_t>(hash >> (8 * i));
  }
  // Unicast (bit 0 clear) and locally administered (bit 1 set): never a vendor's MAC.
  mac[0] = static_cast<uint8_t>((mac[0] & 0xfc) | 0x02);
  return mac;
}

bool is_zero_mac(const MacAddress& mac) {
  return std::all_of(mac.begin(), mac.end(), [](uint8_t b) { return b == 0; });
}

std::array<uint8_t, 8> eui64_from_mac(const MacAddress& mac) {
  return {static_cast<uint8_t>(mac[0] ^ 0x02), mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]};
}

uint64_t guid_from_mac(const MacAddress& mac) {
  std::array<uint8_t, 8> eui = eui64_from_mac(mac);
  uint64_t value = 0;
  std::memcpy(&value, eui.data(), eui.size());  // wire order in memory is what __be64 means
  return value;
}

ibv_gid link_local_gid(const MacAddress& mac) {
  ibv_gid gid{};
  gid.raw[0] = 0xfe;
  gid.raw[1] = 0x80;
  std::array<uint8_t, 8> eui = eui64_from_mac(mac);
  std::copy(eui.begin(), eui.end(), gid.raw + 8);
  return gid;
}

ibv_gid gid_from_address(const sockaddr_storage& address) {
  ibv_gid gid{};
  if (address.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    gid.raw[10] = 0xff;
    gid.raw[11] = 0xff;
    std::memcpy(gid.raw + 12, &v4->sin_addr, 4);
  } else if (address.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    std::memcpy(gid.raw, &v6->sin6_addr, 16);
  }
  return gid;
}

std::vector<GidEntry> build_gid_table(const sockaddr_storage& bound, const MacAddress& mac,
                                      int ifindex, size_t table_length) {
  std::vector<GidEntry> table(table_length);
  auto set_pair = [&](size_t index, const ibv_gid& gid) {
    if (index + 1 >= table_length) {
      return;
    }
    table[index] = {gid, IBV_GID_TYPE_ROCE_V1, true, ifindex};
    table[index + 1] = {gid, IBV_GID_TYPE_ROCE_V2, true, ifindex};
  };
  // A ConnectX port's default pair comes first: the netdev's link-local fe80::<EUI-64>, v1 and
  // v2. Then a pair per IP address of the netdev; a vroce device has one, its bound address.
  // The kernel lists an address once, so a bound address that is the default GID itself adds
  // nothing.
  ibv_gid link_local = link_local_gid(mac);
  set_pair(0, link_local);
  ibv_gid address = gid_from_address(bound);
  if (std::memcmp(address.raw, link_local.raw, sizeof(ibv_gid)) != 0) {
    set_pair(2, address);
  }
  return table;
}

ibv_port_attr make_port_attr(ibv_port_state state, ibv_mtu active_mtu, const PortSpeed& speed) {
  ibv_port_attr attr{};
  attr.state = state;
  attr.max_mtu = IBV_MTU_4096;
  attr.active_mtu = active_mtu;
  attr.gid_tbl_len = limits::kGidTableLength;
  attr.port_cap_flags = limits::kPortCapFlags;
  attr.max_msg_sz = limits::kMaxMsgSize;
  attr.bad_pkey_cntr = 0;
  attr.qkey_viol_cntr = 0;
  attr.pkey_tbl_len = limits::kMaxPkeys;
  attr.lid = 0;  // Ethernet has no LIDs
  attr.sm_lid = 0;
  attr.lmc = 0;
  // One virtual lane (IBV_VL_0 is encoded as 1), as Soft-RoCE reports. mlx5 leaves it 0 on
  // Ethernet, which tools print as "invalid value (0)"; a valid value breaks nothing there.
  attr.max_vl_num = 1;
  attr.sm_sl = 0;
  attr.subnet_timeout = 0;
  attr.init_type_reply = 0;
  attr.active_width = speed.active_width;
  attr.active_speed = speed.active_speed;
  attr.phys_state = state == IBV_PORT_ACTIVE ? kPhysStateLinkUp : kPhysStateDisabled;
  attr.link_layer = IBV_LINK_LAYER_ETHERNET;
  attr.flags = IBV_QPF_GRH_REQUIRED;
  attr.port_cap_flags2 = 0;
  return attr;
}

ibv_device_attr make_device_attr(uint64_t node_guid_be) {
  ibv_device_attr attr{};
  std::strncpy(attr.fw_ver, limits::kFirmwareVersion, sizeof(attr.fw_ver) - 1);
  attr.node_guid = node_guid_be;
  attr.sys_image_guid = node_guid_be;
  attr.max_mr_size = limits::kMaxMrSize;
  attr.page_size_cap = limits::kPageSizeCap;
  bool connectx7 = config().connectx7_identity;
  attr.vendor_id = connectx7 ? limits::kConnectX7VendorId : limits::kVendorId;
  attr.vendor_part_id = connectx7 ? limits::kConnectX7VendorPartId : limits::kVendorPartId;
  attr.hw_ver = limits::kHardwareVersion;
  attr.max_qp = limits::kMaxQp;
  attr.max_qp_wr = limits::kMaxQpWr;
  attr.device_cap_flags = limits::kDeviceCapFlags;
  attr.max_sge = limits::kMaxSge;
  attr.max_sge_rd = limits::kMaxSgeRd;
  attr.max_cq = limits::kMaxCq;
  attr.max_cqe = limits::kMaxCqe;
  attr.max_mr = limits::kMaxMr;
  attr.max_pd = limits::kMaxPd;
  attr.max_qp_rd_atom = limits::kMaxQpRdAtom;
  attr.max_ee_rd_atom = 0;
  attr.max_res_rd_atom = limits::kMaxResRdAtom;
  attr.max_qp_init_rd_atom = limits::kMaxQpInitRdAtom;
  attr.max_ee_init_rd_atom = 0;
  attr.atomic_cap = IBV_ATOMIC_NONE;  // vroce executes no atomics
  attr.max_ee = 0;
  attr.max_rdd = 0;
  attr.max_mw = 0;
  attr.max_raw_ipv6_qp = 0;
  attr.max_raw_ethy_qp = 0;
  attr.max_mcast_grp = 0;
  attr.max_mcast_qp_attach = 0;
  attr.max_total_mcast_qp_attach = 0;
  attr.max_ah = 0;
  attr.max_fmr = 0;
  attr.max_map_per_fmr = 0;
  attr.max_srq = 0;  // RC with per-QP receive queues only
  attr.max_srq_wr = 0;
  attr.max_srq_sge = 0;
  attr.max_pkeys = limits::kMaxPkeys;
  attr.local_ca_ack_delay = limits::kLocalCaAckDelay;
  attr.phys_port_cnt = 1;
  return attr;
}

}  // namespace vroce::device
