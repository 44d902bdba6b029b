"""diagnose_roce.sh against fixture nodes: each misconfiguration yields its FAIL or WARN with the
fix, a good node yields none, and the JSON document is valid."""

import unittest

from fixtures import STUB_NAMES, NicSpec, Node, topo
from scripttest import ScriptTest

PLUGIN_ENV = {"NCCL_ROCE_DSCP": "26"}


class DiagnoseTest(ScriptTest):
    def diagnose(self, *args, env=None, **kw):
        e = dict(PLUGIN_ENV)
        e.update(env or {})
        return self.run_script("diagnose_roce.sh", "--no-gdr-check", "--no-init-check", *args, env=e, **kw)

    def diagnose_json(self, env=None, **kw):
        r = self.diagnose("--json", env=env, **kw)
        self.assertJsonTool(r.out)
        doc = r.json()
        self.assertEqual(doc["exit_status"], r.rc)
        return r, doc

    def findings(self, doc, check, severity=None):
        return [f for f in doc["findings"] if f["check"] == check and (severity is None or f["severity"] == severity)]

    def assertFinding(self, doc, check, severity, *, message=None, fix=None, subject=None):
        fs = [f for f in self.findings(doc, check, severity) if subject is None or f["subject"] == subject]
        self.assertTrue(fs, f"no {severity} '{check}' finding; findings: "
                            + "\n".join(f"{f['severity']} {f['check']} {f['subject']}: {f['message']}" for f in doc["findings"]))
        if message:
            self.assertTrue(any(message in f["message"] for f in fs), f"{message!r} not in {fs}")
        if fix:
            self.assertTrue(any(fix in f["fix"] for f in fs), f"{fix!r} not in {fs}")
        return fs


class GoodNode(DiagnoseTest):
    def test_good_node_has_no_fail_or_warn(self):
        self.node()
        r, doc = self.diagnose_json()
        bad = [f for f in doc["findings"] if f["severity"] != "OK"]
        self.assertEqual(bad, [])
        self.assertEqual(r.rc, 0)
        self.assertFinding(doc, "gid", "OK", message="would choose GID index 3: RoCE v2 10.0.0.1")
        for check in ("port", "mtu", "trust", "dscp2prio", "pfc", "ecn", "pause", "tc-override",
                      "roce-tos", "counters", "peermem", "dmabuf", "acs", "topo", "rdma"):
            self.assertFinding(doc, check, "OK")
        self.assertEqual(doc["plugin_traffic_class"], 104)
        self.assertEqual([g["index"] for g in doc["gids"]], [0, 1, 2, 3])

    def test_text_report_lists_findings_and_summary(self):
        self.node()
        r = self.diagnose()
        self.assertEqual(r.rc, 0, r.out + r.err)
        self.assertIn("[ OK ] gid       mlx5_0/1: the plugin would choose GID index 3", r.out)
        self.assertIn("[ OK ] pfc       ens1f0: PFC on priority 3", r.out)
        self.assertRegex(r.out, r"diagnose_roce.sh: \d+ OK, 0 WARN, 0 FAIL")

    def test_dcb_instead_of_mlnx_qos(self):
        self.node(stubs=[s for s in STUB_NAMES if s != "mlnx_qos"])
        r, doc = self.diagnose_json()
        self.assertEqual(r.rc, 0, doc["findings"])
        self.assertFinding(doc, "trust", "OK", message="(dcb)")
        self.assertFinding(doc, "pfc", "OK")
        self.assertIn("dcb pfc show dev ens1f0 prio-pfc", self.calls())

    def test_dry_run_prints_commands_and_runs_none(self):
        self.node()
        r = self.diagnose("--dry-run")
        for cmd in ("DRY-RUN: mlnx_qos -i ens1f0", "DRY-RUN: ethtool -S ens1f0", "DRY-RUN: lspci -D -vvv",
                    "DRY-RUN: nvidia-smi topo -m"):
            self.assertIn(cmd, r.out)
        self.assertEqual(self.calls(), [])

    def test_runs_unprivileged_with_a_warning(self):
        self.node()
        r, doc = self.diagnose_json(user=True)
        self.assertFinding(doc, "privileges", "WARN", message="not root")
        self.assertFinding(doc, "gid", "OK")


class GidFindings(DiagnoseTest):
    def test_gid_index_naming_rocev1_entry_fails_with_index_to_use(self):
        self.node(Node(nics=[NicSpec(gid_layout="v1_at_3")]))
        r, doc = self.diagnose_json(env={"NCCL_IB_GID_INDEX": "3"})
        self.assertEqual(r.rc, 1)
        self.assertFinding(doc, "gid", "FAIL", message="NCCL_IB_GID_INDEX=3 is a RoCE v1 entry",
                           fix="use NCCL_IB_GID_INDEX=2")

    def test_auto_choice_skips_rocev1(self):
        self.node(Node(nics=[NicSpec(gid_layout="v1_at_3")]))
        r, doc = self.diagnose_json()
        self.assertFinding(doc, "gid", "OK", message="would choose GID index 2")

    def test_gid_index_beyond_table_or_empty_entry(self):
        self.node()
        _, doc = self.diagnose_json(env={"NCCL_IB_GID_INDEX": "9"})
        self.assertFinding(doc, "gid", "FAIL", message="unused (empty) GID entry", fix="NCCL_IB_GID_INDEX=3")
        _, doc = self.diagnose_json(env={"NCCL_IB_GID_INDEX": "99"})
        self.assertFinding(doc, "gid", "FAIL", message="beyond the GID table", fix="NCCL_IB_GID_INDEX=3")

    def test_gid_index_naming_link_local_entry_warns_like_the_plugin(self):
        # The plugin uses an explicit link-local or other-family index as given, with a WARN.
        self.node()
        r, doc = self.diagnose_json(env={"NCCL_IB_GID_INDEX": "1"})
        self.assertFinding(doc, "gid", "WARN", message="NCCL_IB_GID_INDEX=1 (fe80::", fix="NCCL_IB_GID_INDEX=3")
        self.assertFinding(doc, "gid", "WARN", message="uses it as given, as NCCL does")
        self.assertFalse(self.findings(doc, "gid", "FAIL"), doc["findings"])

    def test_link_local_only_port_cannot_be_used(self):
        self.node(Node(nics=[NicSpec(ipv4=None)]))
        r, doc = self.diagnose_json()
        self.assertEqual(r.rc, 1)
        self.assertFinding(doc, "gid", "FAIL", message="no valid RoCE v2 IPv4 GID", fix="assign an IPv4 address")

    def test_ipv6_family_and_address_range(self):
        self.node(Node(nics=[NicSpec(ipv6="fd00::5")]))
        _, doc = self.diagnose_json(env={"NCCL_IB_ADDR_FAMILY": "AF_INET6"})
        self.assertFinding(doc, "gid", "OK", message="would choose GID index 5: RoCE v2 fd00::5")
        _, doc = self.diagnose_json(env={"NCCL_IB_ADDR_RANGE": "192.168.0.0/16"})
        self.assertFinding(doc, "gid", "FAIL", message="in 192.168.0.0/16")
        _, doc = self.diagnose_json(env={"NCCL_IB_ADDR_RANGE": "10.0.0.0/24"})
        self.assertFinding(doc, "gid", "OK", message="index 3")

    def test_bad_settings_are_reported(self):
        self.node()
        _, doc = self.diagnose_json(env={"NCCL_IB_ADDR_FAMILY": "AF_UNIX", "NCCL_ROCE_DSCP": "99",
                                         "NCCL_IB_HCA": "mlx5_0:x"})
        self.assertFinding(doc, "settings", "FAIL", subject="NCCL_IB_ADDR_FAMILY")
        self.assertFinding(doc, "settings", "FAIL", message="NCCL_ROCE_DSCP=99 is not a DSCP value")
        self.assertFinding(doc, "settings", "FAIL", subject="NCCL_IB_HCA", message="'mlx5_0:x'")

    def test_conflicting_tc_and_dscp_fail_like_the_plugin(self):
        self.node()
        _, doc = self.diagnose_json(env={"NCCL_ROCE_TC": "184", "NCCL_ROCE_DSCP": "26"})
        self.assertFinding(doc, "settings", "FAIL", message="name different classes")
        _, doc = self.diagnose_json(env={"NCCL_ROCE_TC": "106", "NCCL_ROCE_DSCP": "26"})
        self.assertFinding(doc, "settings", "OK", message="TC 106 (DSCP 26, from NCCL_ROCE_TC)")

    def test_hca_filter_excluding_everything(self):
        self.node()
        r, doc = self.diagnose_json(env={"NCCL_IB_HCA": "^mlx5"})
        self.assertEqual(r.rc, 1)
        self.assertFinding(doc, "hca", "OK", message="excluded by NCCL_IB_HCA")
        self.assertFinding(doc, "rdma", "FAIL", message="no ACTIVE RoCE port is left")

    def test_port_down(self):
        self.node(Node(nics=[NicSpec(state="1: DOWN", phys_state="3: Disabled")]))
        r, doc = self.diagnose_json()
        self.assertEqual(r.rc, 1)
        self.assertFinding(doc, "port", "FAIL", message="1: DOWN", fix="ip link set dev ens1f0 up")

    def test_small_mtu_warns(self):
        self.node(Node(nics=[NicSpec(mtu=1500)]))
        _, doc = self.diagnose_json()
        self.assertFinding(doc, "mtu", "WARN", message="RoCE path MTU 1024", fix="mtu 9000")


class LosslessClass(DiagnoseTest):
    def test_pfc_off_fails_with_mlnx_qos_fix(self):
        self.node(Node(nics=[NicSpec(pfc="00000000")]))
        r, doc = self.diagnose_json()
        self.assertEqual(r.rc, 1)
        self.assertFinding(doc, "pfc", "FAIL", message="PFC off on priority 3",
                           fix="mlnx_qos -i ens1f0 --pfc 0,0,0,1,0,0,0,0")

    def test_pfc_off_with_dcb_gives_dcb_fix(self):
        self.node(Node(nics=[NicSpec(pfc="00000000")]), stubs=[s for s in STUB_NAMES if s != "mlnx_qos"])
        _, doc = self.diagnose_json()
        self.assertFinding(doc, "pfc", "FAIL", fix="dcb pfc set dev ens1f0 prio-pfc 3:on")

    def test_ecn_off_fails(self):
        self.node(Node(nics=[NicSpec(ecn=False)]))
        r, doc = self.diagnose_json()
        self.assertEqual(r.rc, 1)
        self.assertFinding(doc, "ecn", "FAIL", message="PFC storm", fix="roce_np/enable/3")

    def test_trust_pcp_fails(self):
        self.node(Node(nics=[NicSpec(trust="pcp")]))
        _, doc = self.diagnose_json()
        self.assertFinding(doc, "trust", "FAIL", message="'pcp'", fix="mlnx_qos -i ens1f0 --trust dscp")

    def test_plugin_dscp_on_lossy_priority(self):
        self.node()
        _, doc = self.diagnose_json(env={"NCCL_ROCE_DSCP": "", "NCCL_IB_TC": "184"})
        self.assertFinding(doc, "dscp2prio", "FAIL", message="DSCP 46 -> priority 5",
                           fix="--dscp2prio set,46,3")

    def test_no_plugin_traffic_class_warns(self):
        self.node()
        _, doc = self.diagnose_json(env={"NCCL_ROCE_DSCP": ""})
        self.assertFinding(doc, "settings", "WARN", message="no NCCL_ROCE_TC", fix="NCCL_ROCE_DSCP=26")

    def test_no_qos_tool_warns(self):
        self.node(stubs=[s for s in STUB_NAMES if s not in ("mlnx_qos", "dcb")])
        _, doc = self.diagnose_json()
        self.assertFinding(doc, "qos", "WARN", message="neither mlnx_qos")

    def test_pause_storm_and_lost_packets(self):
        self.node(Node(nics=[NicSpec(ethtool={"tx_pause_storm_error_events": 3},
                                     counters={"out_of_sequence": 17, "local_ack_timeout_err": 2})]))
        _, doc = self.diagnose_json()
        self.assertFinding(doc, "pause", "FAIL", message="PFC storm protection fired 3 times")
        self.assertFinding(doc, "counters", "WARN", message="out_of_sequence=17")


class TrafficClassOverrides(DiagnoseTest):
    def test_mlx5_override_to_another_class_fails(self):
        self.node(Node(nics=[NicSpec(tc_override="Global tclass=0")]))
        r, doc = self.diagnose_json()
        self.assertEqual(r.rc, 1)
        self.assertFinding(doc, "tc-override", "FAIL", message="forces TC 0", fix="echo -1 >")

    def test_mlx5_override_equal_to_plugin_class_is_ok(self):
        self.node(Node(nics=[NicSpec(tc_override="Global tclass=104")]))
        _, doc = self.diagnose_json()
        self.assertFinding(doc, "tc-override", "OK", message="the same as the plugin's")

    def test_rdma_cm_tos_unset_or_different_warns(self):
        self.node(Node(nics=[NicSpec(roce_tos=None)]))
        _, doc = self.diagnose_json()
        self.assertFinding(doc, "roce-tos", "WARN", message="not set")

    def test_rdma_cm_tos_of_another_class_warns(self):
        self.node(Node(nics=[NicSpec(roce_tos=0)]))
        _, doc = self.diagnose_json()
        self.assertFinding(doc, "roce-tos", "WARN", message="differs from the plugin's TC 104", fix="echo 104 >")


class GpuDirect(DiagnoseTest):
    def test_no_peermem_with_dmabuf_warns(self):
        self.node(Node(peermem=False))
        r, doc = self.diagnose_json()
        self.assertEqual(r.rc, 0)
        self.assertFinding(doc, "peermem", "WARN", fix="modprobe nvidia_peermem")
        self.assertFinding(doc, "dmabuf", "OK")

    def test_no_peermem_and_no_dmabuf_fails(self):
        self.node(Node(peermem=False, open_driver=False))
        r, doc = self.diagnose_json(env={"NCCL_ROCE_REQUIRE_GDR": "1"})
        self.assertEqual(r.rc, 1)
        self.assertFinding(doc, "peermem", "FAIL", message="GPUDirect is off")
        self.assertFinding(doc, "dmabuf", "WARN", message="open kernel module")
        self.assertFinding(doc, "gdr", "FAIL", message="NCCL_ROCE_REQUIRE_GDR=1")

    def test_old_kernel_has_no_dmabuf(self):
        self.node(Node(kernel="5.4.0-150-generic"))
        _, doc = self.diagnose_json()
        self.assertFinding(doc, "dmabuf", "WARN", message="older than 5.12")

    def test_acs_enabled_fails_with_setpci_fix(self):
        self.node(Node(acs=True))
        r, doc = self.diagnose_json()
        self.assertEqual(r.rc, 1)
        self.assertFinding(doc, "acs", "FAIL", message="0000:00:01.0", fix="setpci -s 0000:00:01.0 ECAP_ACS+0x6.w=0000")

    def test_sys_path_fails_and_phb_warns(self):
        nics = [NicSpec(), NicSpec(dev="mlx5_1", netdev="ens2f0", ipv4="10.0.1.1")]
        self.node(Node(nics=nics, topo=topo(["mlx5_0", "mlx5_1"], {(0, 0): "SYS", (1, 1): "PHB"})))
        r, doc = self.diagnose_json()
        self.assertEqual(r.rc, 1)
        self.assertFinding(doc, "topo", "FAIL", subject="GPU0", message="via SYS")
        self.assertFinding(doc, "topo", "WARN", subject="GPU1", message="via PHB", fix="NCCL_NET_GDR_LEVEL=PHB")

    def test_no_nvidia_driver_skips_gpu_checks(self):
        self.node(Node(nvidia=False), stubs=[s for s in STUB_NAMES if s != "nvidia-smi"])
        r, doc = self.diagnose_json()
        self.assertEqual(r.rc, 0)
        self.assertFinding(doc, "gdr", "WARN", message="no NVIDIA driver loaded")
        self.assertFinding(doc, "topo", "WARN", message="nvidia-smi not found")


class HostChecks(DiagnoseTest):
    def test_no_rdma_device_says_so_plainly(self):
        self.node(Node(nics=[]))
        r = self.diagnose()
        self.assertEqual(r.rc, 3)
        self.assertIn("no RDMA device", r.out)
        self.assertIn("No RDMA device on this node: the RoCE plugin cannot run here.", r.out)
        r, doc = self.diagnose_json()
        self.assertEqual(r.rc, 3)
        self.assertEqual(doc["rdma_devices"], 0)
        self.assertFinding(doc, "rdma", "FAIL", message="no RDMA device")

    def test_missing_uverbs_fails_like_a_container_without_devices(self):
        self.node(Node(uverbs=False))
        _, doc = self.diagnose_json()
        self.assertFinding(doc, "rdma", "FAIL", message="no uverbs device files", fix="--device=/dev/infiniband")

    def test_multi_nic_arp_sysctls(self):
        nics = [NicSpec(), NicSpec(dev="mlx5_1", netdev="ens2f0", ipv4="10.0.0.2")]
        self.node(Node(nics=nics, sysctl={"net.ipv4.conf.all.arp_ignore": "0",
                                          "net.ipv4.conf.all.arp_announce": "2"}))
        _, doc = self.diagnose_json()
        self.assertFinding(doc, "sysctl", "WARN", subject="net.ipv4.conf.all.arp_ignore",
                           fix="sysctl -w net.ipv4.conf.all.arp_ignore=1")
        self.assertFinding(doc, "sysctl", "OK", subject="net.ipv4.conf.all.arp_announce")

    def test_usage_errors(self):
        self.node()
        self.assertEqual(self.run_script("diagnose_roce.sh", "--bogus").rc, 2)
        self.assertEqual(self.run_script("diagnose_roce.sh", env={"ROCE_PRIO": "9"}).rc, 2)
        r = self.run_script("diagnose_roce.sh", "--help")
        self.assertEqual(r.rc, 0)
        self.assertIn("Usage: diagnose_roce.sh", r.out)


# Output shaped like roce-bench --init-check: the plugin's banner, "FAIL: <why>" per problem,
# and a final "init-check: PASS|FAIL" line.
INIT_OK = """#!/usr/bin/env bash
echo "roce-bench $*" >>"$STUB_STATE/calls.log"
echo "plugin: $3"
echo "NET/RoCE: device mlx5_0 port 1 GID 3 ::ffff:10.0.0.1 RoCE v2, TC 104, GPUDirect peermem+dmabuf"
echo "init-check: PASS"
"""
INIT_FAIL = """#!/usr/bin/env bash
echo "plugin: $3"
echo "FAIL: init: NCCL_IB_GID_INDEX=2 names a RoCE v1 GID (::ffff:10.0.0.1) on mlx5_0 port 1; use 3"
echo "init-check: FAIL"
exit 1
"""


class InitCheck(DiagnoseTest):
    def plugin(self):
        p = self.root / "libnccl-net-roce.so"
        p.write_text("")
        return str(p)

    def test_init_check_success_is_ok_and_shows_banner(self):
        self.node(extra={"roce-bench": INIT_OK})
        r = self.run_script("diagnose_roce.sh", "--no-gdr-check", env={**PLUGIN_ENV, "ROCE_PLUGIN": self.plugin()})
        self.assertIn("[ OK ] init", r.out)
        self.assertIn("init-check: PASS", r.out)
        self.assertIn("GPUDirect peermem+dmabuf", r.out)
        self.assertIn(f"roce-bench --init-check --plugin {self.root}/libnccl-net-roce.so", self.calls())

    def test_init_check_failure_is_a_fail_with_the_plugins_words(self):
        self.node(extra={"roce-bench": INIT_FAIL})
        r = self.run_script("diagnose_roce.sh", "--no-gdr-check", "--json",
                            env={**PLUGIN_ENV, "NCCL_NET_PLUGIN": self.plugin()})
        self.assertEqual(r.rc, 1)
        doc = r.json()
        self.assertFinding(doc, "init", "FAIL", message="(exit 1): init: NCCL_IB_GID_INDEX=2 names a RoCE v1 GID")

    def test_vroce_node_without_sysfs_devices_does_not_contradict_a_passing_init(self):
        # vroce gives the plugin devices through its own libibverbs and writes no /sys tree
        # unless asked (VROCE_SYSFS_ROOT): the init check passes while sysfs lists nothing.
        self.node(Node(nics=[]), extra={"roce-bench": INIT_OK})
        env = {**PLUGIN_ENV, "ROCE_PLUGIN": self.plugin()}
        r = self.run_script("diagnose_roce.sh", "--no-gdr-check", env=env)
        self.assertIn("[ OK ] init", r.out)
        self.assertNotIn("cannot run here", r.out)
        self.assertIn("No RDMA device in sysfs, but the plugin runs here", r.out)
        r = self.run_script("diagnose_roce.sh", "--no-gdr-check", "--json", env=env)
        self.assertNotEqual(r.rc, 3)
        doc = r.json()
        self.assertFinding(doc, "rdma", "WARN", message="but the plugin's init check passed", fix="VROCE_SYSFS_ROOT")
        self.assertFalse(self.findings(doc, "rdma", "FAIL"), doc["findings"])

    def test_init_check_skipped_without_plugin(self):
        self.node(extra={"roce-bench": INIT_OK})
        _, doc = self.diagnose_json_with_init()
        self.assertFinding(doc, "init", "WARN", message="not found")

    def diagnose_json_with_init(self):
        r = self.run_script("diagnose_roce.sh", "--no-gdr-check", "--json",
                            env={**PLUGIN_ENV, "ROCE_PLUGIN": "", "NCCL_NET_PLUGIN": "roce",
                                 "ROCE_PLUGIN_SEARCH": "0"})
        return r, r.json()


if __name__ == "__main__":
    unittest.main()


GDR_STUB = """#!/usr/bin/env bash
echo "gdr-check $*" >>"$STUB_STATE/calls.log"
echo "mode=pointer status=ok write_gbps=45.10 read_gbps=44.20 bytes=8388608"
echo 'mode=dmabuf status=fail reason="ibv_reg_dmabuf_mr: Operation not supported (errno 95)"'
exit 0
"""


class GdrCheckResults(DiagnoseTest):
    def test_measured_modes_become_findings(self):
        self.node(extra={"gdr-check": GDR_STUB})
        r = self.run_script("diagnose_roce.sh", "--json", "--no-init-check", env=PLUGIN_ENV)
        doc = r.json()
        self.assertIn("gdr-check --brief", self.calls())
        self.assertFinding(doc, "gdr-check", "OK", subject="pointer", message="write_gbps=45.10")
        self.assertFinding(doc, "gdr-check", "WARN", subject="dmabuf", message="Operation not supported")
        r = self.run_script("diagnose_roce.sh", "--json", "--no-init-check",
                            env={**PLUGIN_ENV, "NCCL_ROCE_REQUIRE_GDR": "1"})
        self.assertFinding(r.json(), "gdr-check", "FAIL", subject="dmabuf")
