"""Fixture nodes for the operator-script tests: a fake sysfs/procfs/dev tree laid out like a
ConnectX host's, plus the state the stub commands (test/scripts/stubs) report and change.

A Node is described by NicSpec entries and host options; build() writes it under a temporary
directory and returns the environment the scripts need to read it (ROCE_SYSFS_ROOT, ...).
"""

import dataclasses
import ipaddress
import os
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
STUBS = HERE / "stubs"
STUB_NAMES = ["mlnx_qos", "dcb", "ethtool", "nvidia-smi", "lspci", "setpci", "sysctl", "ip", "modprobe"]


@dataclasses.dataclass
class NicSpec:
    dev: str = "mlx5_0"
    netdev: str = "ens1f0"
    ipv4: str | None = "10.0.0.1"
    ipv6: str | None = None  # a global IPv6 address, added after the IPv4 pair
    mac_tail: str = "0a00:01ff:fe00:0001"
    # "mlx5": 0/1 link-local v1/v2, 2/3 IPv4 v1/v2 (the usual "index 3").
    # "v1_at_3": 2/3 IPv4 v2/v1, so NCCL_IB_GID_INDEX=3 names a RoCE v1 entry.
    gid_layout: str = "mlx5"
    state: str = "4: ACTIVE"
    phys_state: str = "5: LinkUp"
    link_layer: str = "Ethernet"
    rate: str = "400 Gb/sec (4X NDR)"
    mtu: int = 9000
    trust: str = "dscp"
    pfc: str = "00010000"
    dscp2prio: dict = dataclasses.field(default_factory=dict)  # overrides of the d/8 default
    ecn: bool = True
    ecn_dir: bool = True
    tc_override: str | None = ""  # None: no file; "": file, unset; else the file's text
    roce_tos: int | None = 104  # None: no rdma_cm configfs entry for the device
    counters: dict = dataclasses.field(default_factory=dict)
    ethtool: dict = dataclasses.field(default_factory=dict)


GOOD_COUNTERS = {
    "out_of_sequence": 0, "packet_seq_err": 0, "local_ack_timeout_err": 0,
    "np_cnp_sent": 1520, "rp_cnp_handled": 1498, "np_ecn_marked_roce_packets": 1533,
    "duplicate_request": 0, "rnr_nak_retry_err": 0,
}
GOOD_ETHTOOL = {
    "rx_packets": 123456789, "tx_packets": 123456000, "rx_prio3_pause": 12, "tx_prio3_pause": 7,
    "rx_prio3_pause_duration": 30, "tx_pause_storm_warning_events": 0,
    "tx_pause_storm_error_events": 0, "rx_discards_phy": 0, "rx_crc_errors_phy": 0,
}

TOPO_LEGEND = """
Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks

NIC Legend:

"""


def topo(nics=("mlx5_0",), paths=None):
    """nvidia-smi topo -m text: GPU i sits next to NIC i (PIX) and far from the others (SYS);
    paths[(gpu, nic)] overrides a cell."""
    n = len(nics)
    paths = paths or {}
    cell = lambda g, k: paths.get((g, k), "PIX" if g == k else "SYS")
    hdr = "\t" + "\t".join([f"GPU{g}" for g in range(n)] + [f"NIC{k}" for k in range(n)]) \
        + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    rows = ""
    for g in range(n):
        gpus = [" X " if h == g else "NV18" for h in range(n)]
        rows += f"GPU{g}\t" + "\t".join(gpus + [cell(g, k) for k in range(n)]) + f"\t{g * 56}-{g * 56 + 55}\t{g}\t\tN/A\n"
    for k in range(n):
        rows += f"NIC{k}\t" + "\t".join([cell(g, k) for g in range(n)] + [" X " if j == k else "SYS" for j in range(n)]) + "\n"
    legend = "".join(f"  NIC{k}: {name}\n" for k, name in enumerate(nics))
    return hdr + rows + TOPO_LEGEND + legend


def lspci_text(acs_enabled: bool) -> str:
    ctl = ("SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-"
           if acs_enabled else
           "SrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-")
    return f"""\
0000:00:01.0 PCI bridge: Intel Corporation Device 1bbc (rev 11) (prog-if 00 [Normal decode])
\tControl: I/O+ Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- FastB2B- DisINTx+
\tCapabilities: [220 v1] Access Control Services
\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-
\t\tACSCtl:\t{ctl}

0000:17:00.0 Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]
\tSubsystem: Mellanox Technologies Device 0026
\tCapabilities: [60] Express (v2) Endpoint, MSI 00

0000:18:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)
\tSubsystem: NVIDIA Corporation Device 16c1
"""


def _gid(prefix_groups: list[str]) -> str:
    return ":".join(prefix_groups)


def gid_v4(ip: str) -> str:
    b = ipaddress.IPv4Address(ip).packed
    return f"0000:0000:0000:0000:0000:ffff:{b[0]:02x}{b[1]:02x}:{b[2]:02x}{b[3]:02x}"


def gid_v6(ip: str) -> str:
    return ipaddress.IPv6Address(ip).exploded


ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"


def gid_table(nic: NicSpec):
    """(gid, type or None) per index; None = unused entry (reading its type gives EINVAL)."""
    ll = "fe80:0000:0000:0000:" + nic.mac_tail
    rows = [(ll, "IB/RoCE v1"), (ll, "RoCE v2")]
    if nic.ipv4:
        v4 = gid_v4(nic.ipv4)
        if nic.gid_layout == "v1_at_3":
            rows += [(v4, "RoCE v2"), (v4, "IB/RoCE v1")]
        else:
            rows += [(v4, "IB/RoCE v1"), (v4, "RoCE v2")]
    if nic.ipv6:
        v6 = gid_v6(nic.ipv6)
        rows += [(v6, "IB/RoCE v1"), (v6, "RoCE v2")]
    while len(rows) < 16:
        rows.append((ZERO_GID, None))
    return rows


def write(path: Path, text) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{text}\n" if not str(text).endswith("\n") else str(text))


@dataclasses.dataclass
class Node:
    nics: list = dataclasses.field(default_factory=lambda: [NicSpec()])
    nvidia: bool = True
    open_driver: bool = True
    peermem: bool = True
    acs: bool = False
    topo: str | None = "auto"  # "auto": one GPU next to each NIC; None: no nvidia-smi output
    uverbs: bool = True
    rdma_cm_configfs: bool = True
    sysctl: dict = dataclasses.field(default_factory=lambda: {
        "net.ipv4.conf.all.arp_ignore": "1", "net.ipv4.conf.all.arp_announce": "2"})
    kernel: str = "6.1.0-18-amd64"

    def build(self, root: Path) -> dict:
        sysfs, proc, dev, state = root / "sys", root / "proc", root / "dev", root / "state"
        for d in (sysfs, proc, dev, state):
            d.mkdir(parents=True, exist_ok=True)
        (state / "calls.log").write_text("")
        (state / "calls.log").chmod(0o666)  # stubs run as nobody in the unprivileged tests
        ib = sysfs / "class" / "infiniband"
        if self.nics:
            ib.mkdir(parents=True)
        if self.rdma_cm_configfs:
            (sysfs / "kernel" / "config" / "rdma_cm").mkdir(parents=True)
        for n, nic in enumerate(self.nics):
            port = ib / nic.dev / "ports" / "1"
            write(port / "state", nic.state)
            write(port / "phys_state", nic.phys_state)
            write(port / "link_layer", nic.link_layer)
            write(port / "rate", nic.rate)
            for i, (g, t) in enumerate(gid_table(nic)):
                write(port / "gids" / str(i), g)
                if t is not None:
                    write(port / "gid_attrs" / "types" / str(i), t)
                    write(port / "gid_attrs" / "ndevs" / str(i), nic.netdev)
            for c, v in {**GOOD_COUNTERS, **nic.counters}.items():
                write(port / "hw_counters" / c, v)
            (ib / nic.dev / "device" / "net" / nic.netdev).mkdir(parents=True)
            if nic.tc_override is not None:
                write(ib / nic.dev / "tc" / "1" / "traffic_class", nic.tc_override)
            net = sysfs / "class" / "net" / nic.netdev
            write(net / "mtu", nic.mtu)
            write(net / "operstate", "up")
            if nic.ecn_dir:
                for role in ("roce_np", "roce_rp"):
                    for p in range(8):
                        write(net / "ecn" / role / "enable" / str(p), 1 if nic.ecn and p == 3 else 0)
            if nic.roce_tos is not None and self.rdma_cm_configfs:
                write(sysfs / "kernel" / "config" / "rdma_cm" / nic.dev / "ports" / "1" /
                      "default_roce_tos", nic.roce_tos)
            q = state / "qos" / nic.netdev
            write(q / "trust", nic.trust)
            write(q / "pfc", nic.pfc)
            if nic.dscp2prio:
                write(q / "dscp2prio", "".join(f"{d} {p}\n" for d, p in nic.dscp2prio.items()))
            eth = "".join(f"     {k}: {v}\n" for k, v in {**GOOD_ETHTOOL, **nic.ethtool}.items())
            write(state / "ethtool" / nic.netdev, eth)
            if self.uverbs:
                (dev / "infiniband").mkdir(exist_ok=True)
                write(dev / "infiniband" / f"uverbs{n}", "")
        if self.nvidia:
            write(sysfs / "module" / "nvidia" / "version", "550.54.15")
            flavour = "NVIDIA UNIX Open Kernel Module" if self.open_driver else "NVIDIA UNIX x86_64 Kernel Module"
            write(proc / "driver" / "nvidia" / "version",
                  f"NVRM version: {flavour} for x86_64  550.54.15  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Mar  5 22:15:33 UTC 2024\n"
                  "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n")
            if self.peermem:
                write(sysfs / "module" / "nvidia_peermem" / "version", "550.54.15")
            if self.topo is not None:
                t = topo([n.dev for n in self.nics]) if self.topo == "auto" else self.topo
                write(state / "nvidia-smi-topo", t)
        write(state / "lspci", lspci_text(self.acs))
        for k, v in self.sysctl.items():
            write(state / "sysctl" / k, v)
        return {
            "ROCE_SYSFS_ROOT": str(sysfs),
            "ROCE_PROC_ROOT": str(proc),
            "ROCE_DEV_ROOT": str(dev),
            "ROCE_KERNEL_RELEASE": self.kernel,
            "STUB_STATE": str(state),
        }


# The only system programs on the scripts' PATH in tests, so a real ip, ethtool, dcb or sysctl
# of the test machine can never be reached, and "tool missing" can be tested.
BASE_TOOLS = ["bash", "env", "cat", "sed", "grep", "head", "tail", "sort", "find", "dirname",
              "basename", "readlink", "id", "hostname", "uname", "mkdir", "awk", "mv", "rm", "tr",
              "wc", "cut", "ls", "sleep", "timeout", "tee", "stat", "python3", "chmod"]


def make_base_bin(root: Path) -> Path:
    b = root / "sysbin"
    b.mkdir(exist_ok=True)
    for t in BASE_TOOLS:
        for d in ("/usr/bin", "/bin"):
            if os.path.exists(f"{d}/{t}"):
                (b / t).symlink_to(f"{d}/{t}")
                break
    return b


def make_bin(root: Path, stubs=STUB_NAMES, extra: dict | None = None) -> Path:
    """A PATH directory holding the chosen stubs (and extra name -> script text)."""
    make_base_bin(root)
    b = root / "bin"
    b.mkdir(exist_ok=True)
    # Linked to a copy inside root, not to the checkout: the unprivileged runs must be able to
    # reach them wherever the checkout is (a clone under a private mktemp -d directory).
    stubs_copy = root / "stubs"
    if not stubs_copy.exists():
        shutil.copytree(STUBS, stubs_copy)
    for s in stubs:
        (b / s).symlink_to(stubs_copy / s)
    for name, text in (extra or {}).items():
        p = b / name
        p.write_text(text)
        p.chmod(0o755)
    return b


def tree_digest(root: Path) -> dict:
    """Every file under root with its content, to prove a run changed nothing."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            if p.name == "calls.log":
                continue
            out[str(p.relative_to(root))] = p.read_bytes()
    return out
