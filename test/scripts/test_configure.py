"""configure_roce.sh against fixture nodes: --check reports and changes nothing, --dry-run prints
the change commands and runs none, a real run converges and a second run changes nothing, and it
refuses clearly without root, without tools or without an RDMA device."""

import unittest

from fixtures import STUB_NAMES, STUBS, NicSpec, Node, tree_digest
from scripttest import ScriptTest

BAD_NIC = dict(trust="pcp", pfc="10000000", ecn=False, mtu=1500, tc_override="Global tclass=0", roce_tos=None)


class ConfigureTest(ScriptTest):
    def configure(self, *args, **kw):
        return self.run_script("configure_roce.sh", *args, **kw)

    def bad_node(self, **kw):
        return self.node(Node(peermem=False, nics=[NicSpec(**BAD_NIC)]), **kw)


class Check(ConfigureTest):
    def test_good_node_matches(self):
        self.node()
        r = self.configure("--check")
        self.assertEqual(r.rc, 0, r.out + r.err)
        self.assertIn("every setting matches the target", r.out)
        self.assertNotIn("DIFFERS", r.out)

    def test_check_reports_every_difference_and_changes_nothing(self):
        self.bad_node()
        before = tree_digest(self.root)
        r = self.configure("--check")
        self.assertEqual(r.rc, 1, r.out + r.err)
        for line in ("mtu          ens1f0                       1500                   DIFFERS (want 9000)",
                     "trust        ens1f0                       pcp                    DIFFERS (want dscp)",
                     "pfc          ens1f0 prio 0-7              10000000               DIFFERS (want 10010000)",
                     "ecn          ens1f0 roce_np prio 3        0                      DIFFERS (want 1)",
                     "ecn          ens1f0 roce_rp prio 3        0                      DIFFERS (want 1)",
                     "tc-override  mlx5_0/1                     0                      DIFFERS (want none)",
                     "roce-tos     mlx5_0/1                     unset                  DIFFERS (want 104)",
                     "module       nvidia_peermem               absent                 DIFFERS (want loaded)"):
            self.assertIn(line, r.out)
        self.assertIn("8 setting(s) differ from the target; nothing was changed", r.out)
        self.assertEqual(tree_digest(self.root), before)
        self.assertEqual(set(self.calls()), {"mlnx_qos -i ens1f0"})

    def test_check_runs_unprivileged(self):
        self.bad_node()
        r = self.configure("--check", user=True)
        self.assertEqual(r.rc, 1, r.err)
        self.assertIn("DIFFERS", r.out)


class DryRun(ConfigureTest):
    def test_dry_run_prints_each_change_and_runs_none(self):
        self.bad_node()
        before = tree_digest(self.root)
        r = self.configure("--dry-run")
        self.assertEqual(r.rc, 0, r.out + r.err)
        s = self.env["ROCE_SYSFS_ROOT"]
        for cmd in ("DRY-RUN: ip link set dev ens1f0 mtu 9000",
                    "DRY-RUN: mlnx_qos -i ens1f0 --trust dscp",
                    "DRY-RUN: mlnx_qos -i ens1f0 --pfc 1,0,0,1,0,0,0,0",
                    f"DRY-RUN: echo 1 > {s}/class/net/ens1f0/ecn/roce_np/enable/3",
                    f"DRY-RUN: echo 1 > {s}/class/net/ens1f0/ecn/roce_rp/enable/3",
                    f"DRY-RUN: echo -1 > {s}/class/infiniband/mlx5_0/tc/1/traffic_class",
                    f"DRY-RUN: mkdir -p {s}/kernel/config/rdma_cm/mlx5_0/ports/1",
                    f"DRY-RUN: echo 104 > {s}/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos",
                    "DRY-RUN: modprobe nvidia_peermem"):
            self.assertIn(cmd, r.out)
        self.assertIn("dry run: nothing was changed", r.out)
        self.assertEqual(tree_digest(self.root), before)
        self.assertEqual(set(self.calls()), {"mlnx_qos -i ens1f0"})

    def test_dry_run_needs_no_root(self):
        self.bad_node()
        r = self.configure("--dry-run", user=True)
        self.assertEqual(r.rc, 0, r.err)
        self.assertIn("DRY-RUN: mlnx_qos -i ens1f0 --trust dscp", r.out)


class Apply(ConfigureTest):
    def test_apply_converges_and_is_idempotent(self):
        self.bad_node()
        r = self.configure()
        self.assertEqual(r.rc, 0, r.out + r.err)
        self.assertIn("every setting matches the target", r.out)
        calls = self.calls()
        for c in ("ip link set dev ens1f0 mtu 9000", "mlnx_qos -i ens1f0 --trust dscp",
                  "mlnx_qos -i ens1f0 --pfc 1,0,0,1,0,0,0,0", "modprobe nvidia_peermem"):
            self.assertIn(c, calls)
        self.assertEqual((self.sysfs / "class/net/ens1f0/ecn/roce_np/enable/3").read_text().strip(), "1")
        self.assertEqual((self.sysfs / "class/infiniband/mlx5_0/tc/1/traffic_class").read_text().strip(), "-1")
        self.assertEqual((self.sysfs / "kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos").read_text().strip(), "104")
        # Second run: nothing left to change.
        (self.state / "calls.log").write_text("")
        before = tree_digest(self.root)
        r = self.configure()
        self.assertEqual(r.rc, 0, r.out + r.err)
        self.assertNotRegex(r.out, r"(?m)^  .* -> ")
        self.assertEqual(set(self.calls()), {"mlnx_qos -i ens1f0"})
        self.assertEqual(tree_digest(self.root), before)
        self.assertEqual(self.configure("--check").rc, 0)

    def test_apply_with_dcb(self):
        self.bad_node(stubs=[s for s in STUB_NAMES if s != "mlnx_qos"])
        r = self.configure("--mtu", "0")
        self.assertEqual(r.rc, 0, r.out + r.err)
        calls = self.calls()
        self.assertIn("dcb apptrust set dev ens1f0 order dscp", calls)
        self.assertIn("dcb pfc set dev ens1f0 prio-pfc 3:on", calls)
        self.assertFalse(any(c.startswith("ip ") for c in calls), calls)
        self.assertEqual(self.configure("--check", "--mtu", "0").rc, 0)

    def test_other_dscp_is_mapped_to_the_lossless_priority(self):
        self.node()
        r = self.configure("--dscp", "46", "--tc", "186")
        self.assertEqual(r.rc, 0, r.out + r.err)
        self.assertIn("mlnx_qos -i ens1f0 --dscp2prio set,46,3", self.calls())
        self.assertEqual((self.sysfs / "kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos").read_text().strip(), "186")

    def test_override_policy_set_forces_the_plugin_class(self):
        self.node(Node(nics=[NicSpec(tc_override="Global tclass=0")]))
        r = self.configure("--tc-override", "set")
        self.assertEqual(r.rc, 0, r.out + r.err)
        self.assertEqual((self.sysfs / "class/infiniband/mlx5_0/tc/1/traffic_class").read_text().strip(), "104")

    def test_multi_nic_sysctls_and_interface_selection(self):
        nics = [NicSpec(), NicSpec(dev="mlx5_1", netdev="ens2f0", ipv4="10.0.0.2", trust="pcp")]
        self.node(Node(nics=nics, sysctl={"net.ipv4.conf.all.arp_ignore": "0", "net.ipv4.conf.all.arp_announce": "0"}))
        r = self.configure("ens1f0")
        self.assertEqual(r.rc, 0, r.out + r.err)
        self.assertNotIn("ens2f0", "\n".join(c for c in self.calls() if "--trust" in c))
        self.assertEqual((self.state / "sysctl/net.ipv4.conf.all.arp_ignore").read_text().strip(), "1")
        self.assertEqual((self.state / "sysctl/net.ipv4.conf.all.arp_announce").read_text().strip(), "2")
        self.assertEqual(self.configure("--check", "ens2f0").rc, 1)
        self.assertEqual(self.configure().rc, 0)
        self.assertEqual(self.configure("--check").rc, 0)

    def test_acs_off(self):
        self.node(Node(acs=True))
        r = self.configure("--acs-off")
        self.assertEqual(r.rc, 0, r.out + r.err)
        self.assertIn("setpci -s 0000:00:01.0 ECAP_ACS+0x6.w=0000", self.calls())
        self.assertEqual(self.configure("--check", "--acs-off").rc, 0)

    def test_change_that_does_not_take_is_reported(self):
        # A driver that accepts the command but keeps its trust state: the read-back catches it.
        readonly = "#!/usr/bin/env bash\n" \
            "if [[ \"$*\" == *--trust* ]]; then echo \"mlnx_qos $*\" >>\"$STUB_STATE/calls.log\"; exit 0; fi\n" \
            f"exec {self.root}/bin/real_mlnx_qos \"$@\"\n"
        self.node(Node(nics=[NicSpec(trust="pcp")]), stubs=[s for s in STUB_NAMES if s != "mlnx_qos"],
                  extra={"mlnx_qos": readonly})
        (self.bin / "real_mlnx_qos").symlink_to(STUBS / "mlnx_qos")
        r = self.configure()
        self.assertEqual(r.rc, 1, r.out + r.err)
        self.assertIn("after the changes, these settings still differ", r.err)
        self.assertIn("trust", r.err)


class Refusals(ConfigureTest):
    def test_refuses_when_not_root(self):
        self.bad_node()
        before = tree_digest(self.root)
        r = self.configure(user=True)
        self.assertEqual(r.rc, 4)
        self.assertIn("must run as root", r.err)
        self.assertEqual(tree_digest(self.root), before)
        self.assertEqual(self.calls(), [])

    def test_refuses_when_qos_tool_missing(self):
        self.bad_node(stubs=[s for s in STUB_NAMES if s not in ("mlnx_qos", "dcb")])
        r = self.configure()
        self.assertEqual(r.rc, 5)
        self.assertIn("missing tool: mlnx_qos or dcb", r.err)
        self.assertIn("nothing was changed", r.err)
        self.assertEqual(self.calls(), [])

    def test_refuses_when_ip_missing_for_mtu(self):
        self.bad_node(stubs=[s for s in STUB_NAMES if s != "ip"])
        r = self.configure()
        self.assertEqual(r.rc, 5)
        self.assertIn("missing tool: ip (iproute2)", r.err)

    def test_no_rdma_device(self):
        self.node(Node(nics=[]))
        r = self.configure()
        self.assertEqual(r.rc, 3)
        self.assertIn("no RDMA device", r.err)

    def test_unknown_interface(self):
        self.node()
        r = self.configure("eth9")
        self.assertEqual(r.rc, 3)
        self.assertIn("eth9 is not the netdev of any RoCE port (RoCE netdevs here: ens1f0)", r.err)

    def test_bad_values(self):
        self.node()
        for args, text in ((["--dscp", "99"], "outside 0..63"), (["--prio", "8"], "outside 0..7"),
                           (["--tc", "100"], "carries DSCP 25"), (["--mtu", "100"], "outside 1280..9216"),
                           (["--tc-override", "x"], "not clear, set or keep"), (["--bogus"], "unknown option"),
                           (["--dscp"], "needs a value")):
            r = self.configure(*args)
            self.assertEqual(r.rc, 2, args)
            self.assertIn(text, r.err)
        r = self.configure("--help")
        self.assertEqual(r.rc, 0)
        self.assertIn("Usage: configure_roce.sh", r.out)


if __name__ == "__main__":
    unittest.main()
