"""roce-show-gids against fixture nodes: the table, the plugin's choice, JSON, and the errors."""

import unittest

from fixtures import NicSpec, Node
from scripttest import ScriptTest


class ShowGids(ScriptTest):
    def test_table_marks_the_plugins_choice(self):
        self.node()
        r = self.run_script("roce-show-gids")
        self.assertEqual(r.rc, 0, r.err)
        lines = r.out.splitlines()
        self.assertTrue(lines[0].startswith("DEV        PORT INDEX GID"))
        row3 = [l for l in lines if l.startswith("mlx5_0     1    3 ")]
        self.assertEqual(len(row3), 1)
        self.assertRegex(row3[0], r"0000:0000:0000:0000:0000:ffff:0a00:0001 10\.0\.0\.1\s+v2\s+ens1f0\s+<- plugin$")
        self.assertEqual(sum("<- plugin" in l for l in lines), 1)
        self.assertIn("n_gids_found=4", r.out)

    def test_rocev1_at_index_3_moves_the_choice_to_2(self):
        self.node(Node(nics=[NicSpec(gid_layout="v1_at_3")]))
        r = self.run_script("roce-show-gids", "--json")
        self.assertJsonTool(r.out)
        doc = r.json()
        chosen = [g for g in doc["gids"] if g["plugin_choice"]]
        self.assertEqual([(g["index"], g["type"], g["ipv4"]) for g in chosen], [(2, "v2", "10.0.0.1")])
        self.assertEqual([g["type"] for g in doc["gids"] if g["index"] == 3], ["v1"])

    def test_all_lists_unused_entries_and_device_port_filter(self):
        self.node(Node(nics=[NicSpec(), NicSpec(dev="mlx5_1", netdev="ens2f0", ipv4="10.0.1.1")]))
        r = self.run_script("roce-show-gids", "--all", "mlx5_1", "1")
        self.assertEqual(r.rc, 0, r.err)
        self.assertNotIn("mlx5_0 ", r.out)
        self.assertIn("n_gids_found=16", r.out)
        self.assertEqual(self.run_script("roce-show-gids", "mlx5_9").rc, 3)
        r = self.run_script("roce-show-gids", "mlx5_1", "2")
        self.assertEqual(r.rc, 3)
        self.assertIn("mlx5_1 has no port 2", r.err)

    def test_family_and_range(self):
        self.node(Node(nics=[NicSpec(ipv6="fd00::5")]))
        r = self.run_script("roce-show-gids", "--json", env={"NCCL_IB_ADDR_FAMILY": "AF_INET6"})
        self.assertEqual([g["address"] for g in r.json()["gids"] if g["plugin_choice"]], ["fd00::5"])
        r = self.run_script("roce-show-gids", env={"NCCL_IB_ADDR_RANGE": "172.16.0.0/12"})
        self.assertNotIn("<- plugin", r.out)
        self.assertIn("no valid RoCE v2 GID of family IPv4 in 172.16.0.0/12", r.out)
        self.assertEqual(self.run_script("roce-show-gids", env={"NCCL_IB_ADDR_RANGE": "10.0.0.0"}).rc, 2)
        self.assertEqual(self.run_script("roce-show-gids", env={"NCCL_IB_ADDR_FAMILY": "inet"}).rc, 2)

    def test_no_rdma_device(self):
        self.node(Node(nics=[]))
        r = self.run_script("roce-show-gids")
        self.assertEqual(r.rc, 3)
        self.assertIn("no RDMA device", r.err)


if __name__ == "__main__":
    unittest.main()
