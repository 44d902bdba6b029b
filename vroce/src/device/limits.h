// The capabilities every vroce device reports through ibv_query_device. They are limits the
// whole emulator enforces: the RC engine checks QP/CQ/MR requests against the same constants, so
// what ibv_devinfo shows is what ibv_create_qp accepts.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

namespace vroce::device::limits {

// Identity. vendor_id is an IEEE OUI in ibv_device_attr; 0x025652 has the locally-administered
// bit (0x02) set, so it can never be a real vendor's OUI, and it is deliberately not Mellanox's
// 0x02c9: plugins key mlx5-only paths (DEVX, data-direct, mlx5dv) on that, and vroce has none.
// The part id is 4791, the RoCEv2 UDP port.
inline constexpr uint32_t kVendorId = 0x025652;
inline constexpr uint32_t kVendorPartId = 4791;
// VROCE_IDENTITY=connectx7: what a ConnectX-7 reports (Mellanox's OUI, PCI device 0x1021).
inline constexpr uint32_t kConnectX7VendorId = 0x02c9;
inline constexpr uint32_t kConnectX7VendorPartId = 4129;
inline constexpr uint32_t kHardwareVersion = 1;
inline constexpr const char* kFirmwareVersion = "1.0.0 (vroce)";
inline constexpr const char* kHcaType = "VROCE";
inline constexpr const char* kBoardId = "VROCE_0000000001";

// PCI identity of the fake function directory in the fake sysfs tree (sysfs/fake_sysfs.cpp).
// 0x0000 is no vendor's id; the class is "Ethernet controller", as a ConnectX port in Ethernet
// mode reports.
inline constexpr uint16_t kPciVendor = 0x0000;
inline constexpr uint16_t kPciDevice = 0x12b7;  // 4791
inline constexpr uint32_t kPciClass = 0x020000;

// Queue pairs, work requests and scatter/gather.
inline constexpr int kMaxQp = 65536;
inline constexpr int kMaxQpWr = 32768;
inline constexpr int kMaxSge = 32;
inline constexpr int kMaxSgeRd = 32;
inline constexpr int kMaxCq = 65536;
inline constexpr int kMaxCqe = 4194303;  // what a ConnectX reports: 2^22 - 1
inline constexpr int kMaxMr = 1 << 24;
inline constexpr int kMaxPd = 1 << 24;
inline constexpr uint64_t kMaxMrSize = 1ULL << 46;  // 64 TiB: the whole user address space
inline constexpr uint64_t kPageSizeCap = 0xfffffffffffff000ULL;

// RDMA READ resources: outstanding READs a QP may have as requester (init) and as responder.
inline constexpr int kMaxQpRdAtom = 16;
inline constexpr int kMaxQpInitRdAtom = 16;
inline constexpr int kMaxResRdAtom = kMaxQp * kMaxQpRdAtom;

inline constexpr int kMaxPkeys = 1;
inline constexpr uint8_t kLocalCaAckDelay = 16;
inline constexpr int kNumCompVectors = 1;

// Port 1 (the only one).
inline constexpr uint8_t kPortNum = 1;
// A ConnectX RoCE port has 256 GID slots; vroce fills at most four (build_gid_table), and every
// slot costs three files in the fake sysfs tree, so the table is 16 long: ample for the used pairs.
inline constexpr int kGidTableLength = 16;
inline constexpr uint32_t kMaxMsgSize = 1U << 30;  // 1 GiB, as a ConnectX reports
// port_cap_flags of a RoCE port: connection manager supported and IP-based GIDs, which is what
// a ConnectX port on Ethernet shows (0x04010000).
inline constexpr uint32_t kPortCapFlags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
// Capabilities the emulator implements: RNR NAKs, IBV_QP_CUR_STATE in modify, a system image
// GUID, and port events (vroce_inject_port_event raises PORT_ACTIVE/PORT_ERR).
inline constexpr unsigned int kDeviceCapFlags =
    IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_CURR_QP_STATE_MOD | IBV_DEVICE_SYS_IMAGE_GUID |
    IBV_DEVICE_PORT_ACTIVE_EVENT;

}  // namespace vroce::device::limits
