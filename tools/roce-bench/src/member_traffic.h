// --vdevice: what each member of the virtual NIC carried, from its port's traffic counters in
// sysfs (<root>/class/infiniband/<dev>/ports/<port>/counters/port_{xmit,rcv}_data, in 4-byte
// words as the kernel and vroce's fake tree keep them). A rank reads its members' counters before
// connecting and after its comms are closed, so the difference is the run's traffic on that port
// (plus anything else that used the port meanwhile: a NIC's counters are the port's, not the
// process's). Counters that cannot be read are reported as such, never an error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace roce::bench {

// Where the plugin reads sysfs: NCCL_ROCE_SYSFS_ROOT, else /sys.
std::string sysfs_root_from_env();

// The counters folder of `device`'s one port under `root`, or "" when the device has no port
// folder or several (then which one a plugin device uses is not known from its name alone).
std::string port_counters_dir(const std::string& root, const std::string& device);

struct PortTraffic {
  std::optional<std::uint64_t> sent_bytes;
  std::optional<std::uint64_t> received_bytes;
};

// One reading of port_xmit_data and port_rcv_data (x 4: bytes). Missing or unparsable: nullopt.
PortTraffic read_port_traffic(const std::string& counters_dir);

// after - before; nullopt where either lacks the counter.
PortTraffic traffic_delta(const PortTraffic& before, const PortTraffic& after);

struct MemberTraffic {
  int rank = 0;
  std::string device;  // the member's plugin device name
  PortTraffic traffic;
};

// One rank's members as one line for the rendezvous' allgather ("dev sent received;...", '-'
// for an unknown figure), and back. Device names never hold spaces or ';'.
std::string encode_member_traffic(const std::vector<MemberTraffic>& members);
std::vector<MemberTraffic> decode_member_traffic(int rank, const std::string& text);

// "rank 0: vroce0 sent 268.5 MB, received 0.4 MB; vroce1 sent 268.5 MB, received 0.4 MB"
std::string describe_member_traffic(const std::vector<MemberTraffic>& rank_members);

}  // namespace roce::bench
