// Every setting the plugin reads, in documentation order. This table is the single source for
// parsing (config.cpp), the settings() list and docs/configuration.md (config_doc.cpp).
#include "util/config_registry.h"

namespace roce::config_detail {
namespace {

using K = Kind;

constexpr Setting kRegistry[] = {
    // Traffic class and service level.
    {{"NCCL_ROCE_TC", "unset", "0..255",
      "Traffic class of every QP the plugin creates (the IP header's DSCP and ECN bits: "
      "tc = 4 * dscp + ecn). Enforced: both sides compare it in the handshake, it is read back "
      "from every QP, and a host override that would rewrite it is an error.",
      "integer", "NCCL_IB_TC",
      "Highest: wins over NCCL_ROCE_DSCP, NCCL_IB_TC and the communicator's trafficClass. If "
      "NCCL_ROCE_DSCP is also set, both must name the same DSCP (tc >> 2 == dscp)."},
     K::Integer,
     0,
     255},
    {{"NCCL_ROCE_DSCP", "unset", "0..63",
      "The traffic class as a DSCP code point: tc = dscp << 2, ECN bits 0 (26 means tc 104).",
      "integer", "NCCL_IB_TC",
      "Used when NCCL_ROCE_TC is unset; wins over NCCL_IB_TC and the communicator's "
      "trafficClass."},
     K::Integer,
     0,
     63},
    {{"NCCL_IB_TC", "unset (-1)", "0..255, or -1 for unset",
      "NCCL's traffic class setting, same meaning as in NCCL's IB transport.", "integer",
      "NCCL_IB_TC",
      "Used when NCCL_ROCE_TC and NCCL_ROCE_DSCP are unset; wins over the communicator's "
      "trafficClass (as in NCCL). With none of the three and no communicator class: 0."},
     K::Integer,
     0,
     255,
     true},
    {{"NCCL_IB_SL", "unset (-1): 0", "0..15, or -1 for unset",
      "Service level of every QP (on RoCE, the 802.1p priority when the port uses a VLAN). "
      "Unlike NCCL, an unset SL is 0, never derived from the traffic class.",
      "integer", "NCCL_IB_SL", ""},
     K::Integer,
     0,
     15,
     true},

    {{"NCCL_IB_FIFO_TC", "unset (-1): the traffic class", "0..255, or -1 for unset",
      "Traffic class of the receiver's data QPs, as in NCCL: their packets are the "
      "clear-to-send writes and the ACKs of the data; the sender's QPs (data, and the ACKs of "
      "the clear-to-send writes) and the flush QP keep the traffic class. Read back from every "
      "QP like the traffic class; a host override that would rewrite it is an error.",
      "integer", "NCCL_IB_FIFO_TC",
      "Only the receiving side's setting counts; it is not compared in the handshake (the "
      "sender never sees it)."},
     K::Integer,
     0,
     255,
     true},

    // Device and GID selection.
    {{"NCCL_IB_HCA", "unset: every device and port", "[^][=]name[:port[:rail[:plane]]][,...]",
      "Which devices and ports to use: '^' excludes, '=' asks for exact names (otherwise "
      "prefixes), ':port' limits an entry to one port. NCCL 2.30's ':rail:plane' does not "
      "filter: it gives the devices the entry selects their rail and plane in ncclNet v12's "
      "properties (the first entry naming a port decides; none under '^'). Empty fields are "
      "unset and empty entries skipped, as in NCCL ('=mlx5_0::0:0' is any port of mlx5_0 on "
      "rail 0, plane 0). Where NCCL silently selects nothing or everything (a port of 0 or "
      "not a number, an entry with no name), init fails naming the entry. When the list "
      "selects no usable port, the init WARN echoes it and lists the ports that exist.",
      "list", "NCCL_IB_HCA", ""},
     K::Text},
    {{"NCCL_IB_GID_INDEX", "-1 (automatic)", "0..255, or -1 for automatic",
      "GID table index used as the source GID. Automatic: the first valid RoCE v2 GID of "
      "NCCL_IB_ADDR_FAMILY inside NCCL_IB_ADDR_RANGE. An explicit index is used as given, as "
      "NCCL does; one naming a link-local or other-family GID gives a WARN naming the index to "
      "use instead. One naming a RoCE v1, InfiniBand or empty entry, or past the table, is an "
      "init error naming that index.",
      "integer", "NCCL_IB_GID_INDEX", "Wins over the automatic choice."},
     K::Integer,
     0,
     255,
     true},
    {{"NCCL_IB_ADDR_FAMILY", "AF_INET", "AF_INET, AF_INET6",
      "Address family of the GID chosen automatically (AF_INET: IPv4-mapped GIDs).", "choice",
      "NCCL_IB_ADDR_FAMILY", ""},
     K::Text},
    {{"NCCL_IB_ADDR_RANGE", "unset: any address", "CIDR of NCCL_IB_ADDR_FAMILY",
      "Only GIDs inside this range are chosen automatically (10.0.0.0/8, fd00::/8).", "CIDR",
      "NCCL_IB_ADDR_RANGE", ""},
     K::Text},
    {{"NCCL_IB_ROCE_VERSION_NUM", "2", "2",
      "RoCE version of the GID. 1 is refused: RoCE v1 has no IP header, so it is not routable "
      "and carries no DSCP.",
      "integer", "NCCL_IB_ROCE_VERSION_NUM", ""},
     K::Integer,
     1,
     2},
    {{"NCCL_IB_DEVICE_PCI_ORDER", "1", "0, 1",
      "1: devices are offered to NCCL sorted by PCI path, then port, so every node numbers its "
      "NICs the same way whatever order the verbs device list has (udev-renamed devices); 0: "
      "the list's order.",
      "boolean", "NCCL_IB_DEVICE_PCI_ORDER", ""},
     K::Boolean},
    {{"NCCL_IB_QUERY_PORT_SPEED", "1", "0, 1",
      "1: a port's speed is asked with ibv_query_port_speed where libibverbs has it (rdma-core "
      "62+, exact for speeds that are no lane-count multiple), else computed from the width and "
      "speed codes; an unknown code counts as the highest known one, as in NCCL. 0: the codes "
      "only.",
      "boolean", "NCCL_IB_QUERY_PORT_SPEED", ""},
     K::Boolean},
    {{"NCCL_IB_MERGE_NICS", "1", "0, 1",
      "1: each device reports NCCL a pciPath with the PCI function digit set to 0, as net_ib "
      "does, so the ports of a dual-port card (one PCI function each) share a path and NCCL's "
      "default NCCL_NET_MERGE_LEVEL (PORT) fuses them into one virtual NIC (makeVDevice), whose "
      "connections run QPs on every member. 0: each device reports its real path and "
      "makeVDevice refuses more than one member, so NCCL never fuses.",
      "boolean", "NCCL_IB_MERGE_NICS",
      "NCCL_NET_MERGE_LEVEL=LOC also keeps NICs apart (NCCL never proposes a merge)."},
     K::Boolean},
    {{"NCCL_IB_MERGE_VFS", "1", "0, 1",
      "1: the folded pciPath also sets the PCI device digits to 00, so the virtual functions of "
      "a card fuse with it as well, as in net_ib; the reported port (verbs port + realPort) "
      "counts the devices that share the folded path. 0: only the function digit is folded.",
      "boolean", "NCCL_IB_MERGE_VFS", "Only with NCCL_IB_MERGE_NICS=1 for the path."},
     K::Boolean},

    // Queue pairs.
    {{"NCCL_IB_TIMEOUT", "20", "0..31",
      "Local ACK timeout of every QP: 4.096 us * 2^value before a retransmission. 0 means no "
      "timeout (the verbs meaning: a lost packet is never retransmitted on a timer), accepted "
      "as NCCL accepts it.",
      "integer", "NCCL_IB_TIMEOUT", ""},
     K::Integer,
     0,
     31},
    {{"NCCL_IB_RETRY_CNT", "7", "0..7", "Transport retries before a send fails with RETRY_EXC.",
      "integer", "NCCL_IB_RETRY_CNT", ""},
     K::Integer,
     0,
     7},
    {{"NCCL_IB_QPS_PER_CONNECTION", "1", "1..128",
      "Data QPs per connection (NCCL's range). How messages use them: "
      "NCCL_IB_SPLIT_DATA_ON_QPS.",
      "integer", "NCCL_IB_QPS_PER_CONNECTION", ""},
     K::Integer,
     1,
     128},
    {{"NCCL_IB_SPLIT_DATA_ON_QPS", "0", "0, 1",
      "0 (NCCL's default): each message goes whole on one data QP, the QPs taken in turn by "
      "message sequence number, and its receive is posted on that QP only. 1: every message is "
      "split over all the QPs in 128-byte-aligned chunks and completes when all have arrived. "
      "The sender's setting is sent in the handshake and the receiver follows it.",
      "boolean", "NCCL_IB_SPLIT_DATA_ON_QPS", "The sender's setting decides for the connection."},
     K::Boolean},
    {{"NCCL_IB_ECE_ENABLE", "1", "0, 1",
      "1 (NCCL's default): Enhanced Connection Establishment is negotiated as NCCL does where "
      "the library has ibv_query_ece/ibv_set_ece: the sender sends its QP's ECE, the receiver "
      "sets it on its QPs and replies with what its device reduced it to, which the sender sets "
      "on its own QPs before RTR. A device without ECE (EOPNOTSUPP) connects without it. 0: the "
      "sender offers none and the connection runs without ECE.",
      "boolean", "NCCL_IB_ECE_ENABLE", "The sender's setting decides for the connection."},
     K::Boolean},
    {{"NCCL_IB_ADAPTIVE_ROUTING", "0 (net_ib's default on RoCE)", "0, 1",
      "1: a single send larger than NCCL_IB_AR_THRESHOLD goes as an RDMA WRITE of the data "
      "followed by a separate zero-length RDMA WRITE WITH IMMEDIATE carrying the completion, as "
      "NCCL does for adaptive-routing fabrics (packets may arrive out of order; the immediate "
      "must come after all the data). 0: the data travels in the WRITE WITH IMMEDIATE itself. "
      "Multi-receives always end in a separate WRITE WITH IMMEDIATE (the sizes).",
      "boolean", "NCCL_IB_ADAPTIVE_ROUTING",
      "NCCL enables it by default on InfiniBand only; this plugin drives RoCE ports."},
     K::Boolean},
    {{"NCCL_IB_AR_THRESHOLD", "8192", "0..1073741824",
      "Bytes: with NCCL_IB_ADAPTIVE_ROUTING=1, sends larger than this are split into the "
      "data WRITE and the completion WRITE WITH IMMEDIATE.",
      "integer", "NCCL_IB_AR_THRESHOLD", "Only with NCCL_IB_ADAPTIVE_ROUTING=1."},
     K::Integer,
     0,
     1073741824},
    {{"NCCL_IB_MQP_RETRY_ALL", "0", "0, 1",
      "1: a failed ibv_modify_qp is retried whatever the error; 0: only on ETIMEDOUT (RoCE "
      "address resolution at RTR that has not finished), as in NCCL.",
      "boolean", "NCCL_IB_MQP_RETRY_ALL", ""},
     K::Boolean},
    {{"NCCL_IB_MQP_RETRY_CNT", "34", "0..1000",
      "Retries of a failed ibv_modify_qp (each logged at INFO) before the transition fails.",
      "integer", "NCCL_IB_MQP_RETRY_CNT", ""},
     K::Integer,
     0,
     1000},
    {{"NCCL_IB_MQP_RETRY_SLEEP_MSEC", "100", "0..10000",
      "Pause between those retries, in milliseconds.", "integer", "NCCL_IB_MQP_RETRY_SLEEP_MSEC",
      ""},
     K::Integer,
     0,
     10000},
    {{"NCCL_IB_PKEY", "0", "0..65535", "P_Key index of every QP.", "integer", "NCCL_IB_PKEY", ""},
     K::Integer,
     0,
     65535},
    {{"NCCL_ROCE_INLINE", "1", "0, 1",
      "Post clear-to-send entries and host-memory payloads up to the QP's inline size inline "
      "(saves the NIC a DMA read per work request). 0: data QPs are created with "
      "max_inline_data 0 and everything is posted from registered memory (the usual workaround "
      "for a provider with inline bugs).",
      "boolean", "NCCL_IB_USE_INLINE", "Wins over NCCL_IB_USE_INLINE."},
     K::Boolean},
    {{"NCCL_IB_USE_INLINE", "unset: NCCL_ROCE_INLINE applies", "0, 1",
      "NCCL's inline setting, same meaning: 0 turns inlining off. NCCL's own default is 0; ours "
      "is 1, the faster one (docs/benchmarks.md).",
      "boolean", "NCCL_IB_USE_INLINE", "Used when NCCL_ROCE_INLINE is unset."},
     K::Boolean},

    // Memory and GPUDirect.
    {{"NCCL_ROCE_REQUIRE_GDR", "0", "0, 1",
      "1: init fails when neither nvidia-peermem nor dma-buf GPUDirect RDMA is usable, instead "
      "of offering host memory only; and a receive connection that NCCL stages through host "
      "memory although GPUDirect is offered (NCCL's GPU/NIC distance check, "
      "NCCL_NET_GDR_LEVEL) fails its first receive, naming GPU, NIC, PCI distance and the fix. "
      "0: that downgrade is one WARN per device.",
      "boolean", "", ""},
     K::Boolean},
    {{"NCCL_GDR_FLUSH_DISABLE", "0", "0, 1",
      "1: iflush does nothing (no RDMA READ flush after GPUDirect receives).", "boolean",
      "NCCL_GDR_FLUSH_DISABLE", ""},
     K::Boolean},
    {{"NCCL_IB_PCI_RELAXED_ORDERING", "2", "0, 1, 2",
      "PCIe relaxed ordering for registrations: 0 off, 1 on, 2 on when libibverbs has "
      "ibv_reg_mr_iova2.",
      "integer", "NCCL_IB_PCI_RELAXED_ORDERING", ""},
     K::Integer,
     0,
     2},
    {{"NCCL_ROCE_DMABUF", "1", "0, 1",
      "0 hides NCCL_PTR_DMABUF from the device properties even when the dma-buf probe succeeds.",
      "boolean", "NCCL_DMABUF_ENABLE (NCCL core)", ""},
     K::Boolean},

    // Plumbing.
    {{"NCCL_IBVERBS_LIB", "libibverbs.so.1", "a library name or path",
      "The libibverbs the plugin loads at run time.", "string", "NCCL_IBVERBS_LIB", ""},
     K::Text},
    {{"NCCL_ROCE_SYSFS_ROOT", "/sys", "an absolute path",
      "Root of the sysfs tree read for PCI paths, GID types, GPUDirect detection and the "
      "ports' fabric counters (hw_counters, counters) (containers, tests).",
      "path", "", ""},
     K::Text},
    {{"NCCL_SOCKET_IFNAME", "unset: the default route's interface", "[^][=]name[,...]",
      "The handshake listener binds the address of the device's RoCE GID. When that address "
      "is not an address of the process's network namespace (a Kubernetes pod sharing the "
      "host's RDMA device), it binds the first address of the first interface this selects "
      "instead, as NCCL's IB transport does; unset, the default route's interface. The "
      "handshake carries the GIDs either way. NCCL's syntax: '^' excludes, '=' exact names, "
      "otherwise prefixes.",
      "list", "NCCL_SOCKET_IFNAME", "Used only when the GID's address is not local."},
     K::Text},
    {{"NCCL_ROCE_CONNECT_TIMEOUT_MS", "30000", "10..3600000",
      "Deadline for one connection's handshake, from connect or accept to ready.", "integer", "",
      ""},
     K::Integer,
     10,
     3600000},
    {{"NCCL_ROCE_PEER_WATCH", "1", "0, 1",
      "Each comm keeps its handshake's TCP connection open, watched by one thread per process "
      "(off the data path), so that when the peer process dies every request of the comm, "
      "receive-only ones included, fails within a second (ncclRemoteError, naming the peer and "
      "saying it is gone) instead of waiting forever or for the retry budget. A normal close "
      "says goodbye first and fails nothing. Costs one file descriptor per comm. 0: the "
      "connection closes after the handshake (the behaviour before; a peer with the watch on "
      "then does not watch this side either).",
      "boolean", "", ""},
     K::Boolean},
    {{"NCCL_ROCE_PEER_KEEPALIVE_S", "20", "2..3600",
      "The peer watch's bound for a peer host that stops answering (no FIN, no reset: a host "
      "crash, a cable pulled): TCP keepalive with TCP_USER_TIMEOUT of this many seconds, first "
      "probe after half of it, then every tenth; the comm fails within this bound plus a tenth "
      "of it and 1 s.",
      "integer", "", ""},
     K::Integer,
     2,
     3600},
    {{"NCCL_ROCE_FAILOVER", "1", "0, 1",
      "Recovery epochs: a connection whose data QPs fail with RETRY_EXC or a flush error (a "
      "member port of a virtual NIC lost, or the only port down past the retry budget) is not "
      "failed: both ends fence their QPs, make new ones on the members whose ports are ACTIVE "
      "(waiting up to NCCL_ROCE_RECOVERY_TIMEOUT_S for one), agree which messages arrived and "
      "send the others again; NCCL sees a stall and one WARN. A member left out rejoins when "
      "its port is ACTIVE again. Needs the peer watch on both ends and a peer of this version "
      "(said once otherwise). 0: such a failure fails the comm, as net_ib does by default.",
      "boolean", "NCCL_IB_RESILIENCY_PORT_FAILOVER",
      "Wins over NCCL_IB_RESILIENCY_PORT_FAILOVER; net_ib's default is off, ours on."},
     K::Boolean},
    {{"NCCL_IB_RESILIENCY_PORT_FAILOVER", "unset: NCCL_ROCE_FAILOVER applies", "0, 1",
      "net_ib's name for failing over to a surviving port of a virtual NIC, same meaning here "
      "(it also covers the one-port recovery of NCCL_ROCE_RECOVERY_TIMEOUT_S).",
      "boolean", "NCCL_IB_RESILIENCY_PORT_FAILOVER", "Used when NCCL_ROCE_FAILOVER is unset."},
     K::Boolean},
    {{"NCCL_ROCE_RECOVERY_TIMEOUT_S", "300", "0..86400",
      "How long a connection being recovered waits for a port of its NIC to be ACTIVE again "
      "(a switch reload, a cable swap), and for the peer's answer, before it fails with the "
      "cause. 0: no wait; a connection with no member up fails at once.",
      "integer", "", ""},
     K::Integer,
     0,
     86400},
    // Telemetry.
    {{"NCCL_ROCE_STATS", "0", "0, 1",
      "1 logs one summary line per comm when it closes (INFO, subsystem NET): messages, bytes, "
      "errors, stall warnings, completion p50/p99, for sends the clear-to-send wait, and the "
      "port's fabric counters since init with their verdict (loss, congestion). At init it "
      "says where the statistics go (the NCCL_ROCE_STATS_FILE files, or none) on stderr even "
      "when NCCL_DEBUG hides INFO lines.",
      "boolean", "", ""},
     K::Boolean},
    {{"NCCL_ROCE_STATS_FILE", "unset", "a path; %h is the host name, %p the pid",
      "Every NCCL_ROCE_STATS_INTERVAL_MS and when the plugin is finalized or unloaded, appends "
      "one JSON line per comm to this file and rewrites <file>.prom in Prometheus text format "
      "(written aside and renamed, for node_exporter's textfile collector: point "
      "--collector.textfile.directory at the folder). scripts/roce_stats reads the JSON files of "
      "all ranks; contrib/grafana has a dashboard for the .prom series.",
      "path", "", ""},
     K::Text},
    {{"NCCL_ROCE_STATS_INTERVAL_MS", "10000", "100..3600000",
      "How often NCCL_ROCE_STATS_FILE is written.", "integer", "", ""},
     K::Integer,
     100,
     3600000},
    {{"NCCL_ROCE_STATS_SAMPLE", "8", "1..4096",
      "The completion latency histograms (NCCL_ROCE_STATS, NCCL_ROCE_STATS_FILE) record one "
      "request in this many, so that a message pays for a clock read and a bucket update only "
      "that often; message, byte and error counts always count every request. 1 records every "
      "request.",
      "integer", "", ""},
     K::Integer,
     1,
     4096},
    {{"NCCL_ROCE_STALL_WARN_MS", "5000", "0..86400000",
      "A request outstanding this long gives one WARN per comm naming the peer and what the comm "
      "waits for (the peer's clear-to-send, or a completion), repeated each time the wait "
      "doubles; 0 turns stall reports off.",
      "integer", "", ""},
     K::Integer,
     0,
     86400000},
    // Recognised NCCL settings that this plugin does not apply.
    {{"NCCL_IB_DATA_DIRECT", "", "", "Ignored: mlx5 Data-Direct is not used.", "",
      "NCCL_IB_DATA_DIRECT", "", false},
     K::Recognised},
    {{"NCCL_IB_RETURN_ASYNC_EVENTS", "", "",
      "Ignored: asynchronous events are always read. DEVICE_FATAL, CQ_ERR and the QP errors "
      "fail the comms they concern; PORT_ERR and PORT_ACTIVE are logged, as in NCCL (RC "
      "retransmission rides out a link flap shorter than the retry budget; a longer one is a "
      "recovery epoch, NCCL_ROCE_FAILOVER).",
      "", "NCCL_IB_RETURN_ASYNC_EVENTS", "", false},
     K::Recognised},
    {{"NCCL_IB_ROUTABLE_FLID_GID_INDEX", "", "",
      "Ignored: InfiniBand only; this plugin drives RoCE ports.", "",
      "NCCL_IB_ROUTABLE_FLID_GID_INDEX", "", false},
     K::Recognised},
    {{"NCCL_IB_WARN_RAIL_LOCAL", "", "", "Ignored: rail-locality warnings are NCCL's own.", "",
      "NCCL_IB_WARN_RAIL_LOCAL", "", false},
     K::Recognised},
    {{"NCCL_IB_DISABLE", "", "",
      "Not read: it disables NCCL's built-in IB transport, not this plugin (choose plugins with "
      "NCCL_NET and NCCL_NET_PLUGIN).",
      "", "NCCL_IB_DISABLE", "", false},
     K::Recognised},
};

}  // namespace

std::span<const Setting> registry() {
  return kRegistry;
}

}  // namespace roce::config_detail
