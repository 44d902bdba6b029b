// Everything vroce reads from its environment, parsed once (first use) into one immutable value.
// Owned by config/config.cpp; consumed by device/ (devices), core/ (the transport: time scale,
// faults).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/result.h"

namespace vroce {

// One emulated NIC: VROCE_DEVICES="vroce0=127.0.0.11,vroce1=veth0,vroce2=10.0.0.1".
// The right-hand side is an IPv4/IPv6 address or a netdev name (its first IPv4 address).
struct DeviceSpec {
  std::string name;
  std::string address_or_netdev;
};

// Fault injection applied to packets a device *sends* (so both directions are covered when both
// ends run vroce). Probabilities are in [0, 1].
struct FaultSpec {
  double drop_probability = 0;
  uint64_t drop_every = 0;          // drop every k-th data packet; 0 = off
  std::vector<uint32_t> drop_psns;  // drop the first transmission of these PSNs
  double duplicate_probability = 0;
  double corrupt_probability = 0;  // flip one payload byte after the ICRC is computed
  double reorder_probability = 0;  // hold a packet back and send it after the next one
  // Mark a data packet ECN CE (congestion experienced), as a congested switch queue would; only
  // packets sent ECN-capable (ECT(0) or ECT(1) in the traffic class) are marked.
  double ecn_mark_probability = 0;
  uint32_t delay_us = 0;  // added to every packet
  uint64_t seed = 1;      // PRNG seed, so runs are repeatable
  bool any() const {
    return drop_probability > 0 || drop_every > 0 || !drop_psns.empty() ||
           duplicate_probability > 0 || corrupt_probability > 0 || reorder_probability > 0 ||
           ecn_mark_probability > 0 || delay_us > 0;
  }
};

enum class GpuCopyKernel : uint32_t { Off = 0, Auto = 1, On = 2 };

// One scheduled link change: VROCE_PORT_EVENTS="vroce1:down@3000,vroce1:up@9000" takes vroce1's
// port DOWN 3 s after vroce's devices come up and ACTIVE again at 9 s, as
// vroce_inject_port_event does (PORT_ERR, PORT_ACTIVE), for programs that cannot call the hook
// (NCCL's own processes).
struct PortEventSpec {
  std::string device;
  bool up = false;
  uint32_t at_ms = 0;
};

struct Config {
  std::vector<DeviceSpec> devices;  // VROCE_DEVICES; default when unset: vroce0..vroce7 on
                                    // 127.0.0.11..127.0.0.18 (loopback, one address each)
  uint32_t port_speed_gbps = 400;   // VROCE_PORT_GBPS: 400 -> active_speed/width of a 4x100G port
  double time_scale = 1.0;          // VROCE_TIME_SCALE: multiplies every transport timer
                                    // (ACK timeout, RNR timer); 0.001 makes 4 s into 4 ms
  FaultSpec faults;                 // VROCE_FAULTS="drop=0.01,every=0,psn=5:9,dup=0,corrupt=0,
                                    //               reorder=0,ecn=0,delay_us=0,seed=1"
  std::optional<std::string> stats_file;  // VROCE_STATS_FILE: JSON counters written at exit
  std::optional<std::string> sysfs_root;  // VROCE_SYSFS_ROOT: write a fake /sys/class/infiniband
  // VROCE_TC_OVERRIDE: emulates mlx5's host-wide
  // /sys/class/infiniband/<dev>/tc/<port>/traffic_class knob. When set, every packet leaves with
  // this traffic class whatever the QP asked for, and the fake sysfs tree shows the file, so the
  // plugin's override detection can be tested.
  std::optional<uint8_t> tc_override;
  // VROCE_GPU_STALL_WARN_MS: how long one of vroce's CUDA driver calls may stay blocked before
  // the watchdog reports the likely driver-lock deadlock (gpu/driver_lock_hazard.h).
  uint32_t gpu_stall_warn_ms = 5000;
  // VROCE_GPU_COPIES: where vroce's copies to and from CUDA memory are made. "helper": in a
  // helper process of vroce's own (gpu/copy_helper.h), which no application thread can block;
  // "in-process": by the thread that moves the packet, inside the application's process, where
  // an application thread that holds the driver's lock while it waits for the GPU can deadlock
  // it (gpu/driver_lock_hazard.h).
  bool gpu_copies_by_helper = true;
  // VROCE_GPU_COPY_KERNEL: whether the copy helper hands copies of up to
  // VROCE_GPU_COPY_KERNEL_MAX bytes to a kernel it keeps running on the GPU while copies come
  // (vroce/copier/copy_kernel.cu): about 3 us per copy on an H200 where the copy engine takes 6,
  // plus the hand-off to the helper's thread. "auto" (default): only where the GPU is shared
  // through MPS, since without MPS a kernel that polls takes turns with the application's
  // kernels; "on": always; "off": never.
  GpuCopyKernel gpu_copy_kernel = GpuCopyKernel::Auto;
  uint32_t gpu_copy_kernel_max = 4096;
  // VROCE_GPU_COPY_KERNEL_IDLE_MS: the helper stops a kernel that had no request for this long
  // (the next small copy starts it again), so that an idle application has no kernel of vroce's
  // polling on its GPU.
  uint32_t gpu_copy_kernel_idle_ms = 20;
  // VROCE_SPIN_US: how long an engine's progress thread keeps polling (yielding the CPU between
  // polls) after its last work before it sleeps on the socket, so that a program that spins on
  // memory sees an RDMA WRITE land within microseconds, as it would from a NIC, while an idle
  // engine costs no CPU. 0 never spins (every arrival wakes the thread). Unset: 50 us where the
  // process may run on 4 or more CPUs, 0 below (on 2 cores a spinning thread only takes the CPU
  // from a program that busy-polls; measured by scripts/bench-perftest.sh).
  std::optional<uint32_t> spin_us;
  // VROCE_GSO: send runs of packets to one peer as one UDP GSO send (UDP_SEGMENT) and receive
  // with UDP_GRO, which cuts the kernel's per-datagram cost (packet_io/gso_burst.h). The packets on
  // the wire are the same either way; 0 sends and receives one datagram per packet.
  bool gso = true;
  // VROCE_WIRE: how packets reach the other vroce devices of this host. "udp" (default): every
  // packet is a UDP datagram, so nftables, veths, tshark and netem-like faults see them all.
  // "shm": a device whose peer runs on this host, in the same network namespace, with
  // VROCE_WIRE=shm too, writes the same packet bytes into the peer's ring in /dev/shm
  // (packet_io/shm_wire.h), which the peer's progress thread reads without a system call; packets
  // to every other address still go by UDP. The speed of an RC exchange is then vroce's, not the
  // kernel's UDP path (docs/vroce.md, "The shared-memory wire").
  bool shm_wire = false;
  // VROCE_IDENTITY: the vendor and part ids ibv_query_device reports. vroce's own (default)
  // keeps plugins off mlx5-only paths (DEVX, mlx5dv) that vroce lacks; connectx7 presents
  // Mellanox's 0x02c9 / 4129 so that tools take their ConnectX paths (perftest's inline data).
  bool connectx7_identity = false;
  // VROCE_ECE: the ECE options (ibv_query_ece) every QP supports, as a hex bitmask, or "off"
  // for a device without ECE (ibv_query_ece and ibv_set_ece answer EOPNOTSUPP). The default
  // resembles what ConnectX firmware reports; the bits mean nothing to vroce beyond the
  // negotiation (core/ece.h).
  // VROCE_SYS_IMAGE_GUID: one sys_image_guid (hex) for every device, as the physical functions
  // of one adapter share it (each keeps its own node_guid); unset, each device's is its
  // node_guid.
  std::optional<uint64_t> sys_image_guid;
  // VROCE_PCI_FUNCTIONS="pfa+pfb,pfc+pfd": each group of device names joined by '+' is one PCI
  // device (one adapter) whose functions .0, .1, ... are those devices in the order given, the
  // way a dual-port ConnectX in Ethernet mode shows one PCI function per port. The fake sysfs
  // puts them under one bus number, and they share the first one's node_guid as
  // sys_image_guid (VROCE_SYS_IMAGE_GUID, when set, still wins). A device in no group keeps a
  // bus of its own, as a separate card.
  std::vector<std::vector<std::string>> pci_functions;
  std::vector<PortEventSpec> port_events;  // VROCE_PORT_EVENTS, in time order
  bool ece_enabled = true;
  uint32_t ece_options = 0x30000002;
};

// Parsed on first call; a malformed variable is reported once on stderr and the default kept.
const Config& config();

// How long a thread that waits for vroce's work spins after activity before it sleeps:
// VROCE_SPIN_US, or when unset 50 us where the process may run on 4 or more CPUs, else 0.
uint32_t spin_after_activity_us();

// Pure parsers, exposed for unit tests. Bad input fails with what is accepted.
Result<std::vector<DeviceSpec>> parse_device_specs(const std::string& text);
Result<FaultSpec> parse_fault_spec(const std::string& text);
Result<std::vector<std::vector<std::string>>> parse_pci_functions(const std::string& text);
Result<std::vector<PortEventSpec>> parse_port_events(const std::string& text);

}  // namespace vroce
