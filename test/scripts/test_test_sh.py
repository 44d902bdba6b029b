"""scripts/test.sh and scripts/install-deps.sh: --help prints the header's usage and exits 0
before anything is installed, configured or built; an unknown argument exits 2."""

import os
import subprocess
import tempfile
import unittest
from pathlib import Path

from scripttest import HANG_BOUND_S, SCRIPTS

# Every command test.sh and install-deps.sh would use to change the machine: stubs that log.
TRAPPED = ["apt-get", "sudo", "cmake", "ctest", "dpkg-query", "debconf-set-selections", "ninja"]


class HelpBeforeWork(unittest.TestCase):
    def run_script(self, name, *args):
        with tempfile.TemporaryDirectory(prefix="ok-test-sh-") as d:
            stubs = Path(d) / "bin"
            stubs.mkdir()
            log = Path(d) / "calls.log"
            for tool in TRAPPED:
                stub = stubs / tool
                stub.write_text(f'#!/bin/sh\necho "{tool} $*" >>"{log}"\nexit 1\n')
                stub.chmod(0o755)
            env = {"PATH": f"{stubs}:/usr/bin:/bin", "HOME": d, "LANG": "C.UTF-8"}
            p = subprocess.run([str(SCRIPTS / name), *args], env=env, capture_output=True, text=True,
                               timeout=HANG_BOUND_S, cwd=d)
            calls = log.read_text() if log.exists() else ""
        return p, calls

    def test_test_sh_help_prints_usage_and_runs_nothing(self):
        for flag in ("--help", "-h"):
            p, calls = self.run_script("test.sh", flag)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(calls, "")
            self.assertIn("Usage: scripts/test.sh", p.stdout)
            self.assertIn("ROCE_TEST_SANITIZERS=0", p.stdout)
            self.assertFalse(any(line.startswith("#") for line in p.stdout.splitlines()), p.stdout)

    def test_test_sh_unknown_argument(self):
        p, calls = self.run_script("test.sh", "--bogus")
        self.assertEqual(p.returncode, 2)
        self.assertEqual(calls, "")
        self.assertIn("unknown argument --bogus", p.stderr)

    def test_install_deps_help_installs_nothing(self):
        p, calls = self.run_script("install-deps.sh", "--help")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(calls, "")
        self.assertIn("Usage: scripts/install-deps.sh", p.stdout)
        self.assertEqual(self.run_script("install-deps.sh", "--bogus")[0].returncode, 2)

    def test_install_deps_lists_the_tools_of_the_statistics_tests(self):
        text = (SCRIPTS / "install-deps.sh").read_text()
        for pkg in ("prometheus-node-exporter", "prometheus", "python3-matplotlib"):
            self.assertRegex(text, rf"\s{pkg}(\s|$)", pkg)


if __name__ == "__main__":
    unittest.main()
