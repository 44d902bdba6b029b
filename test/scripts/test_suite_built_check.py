"""scripts/suite-built-check.py: in a tree built only for some labels, every labelled test's
executable and every build-tree path on its command line or in its environment must exist; a
missing one is named and fails the check. ctest is a stub that prints a fixed listing."""

import json
import os
import subprocess
import tempfile
import unittest
from pathlib import Path

from scripttest import HANG_BOUND_S, SCRIPTS


class SuiteBuiltCheck(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="ok-suite-built-")
        root = Path(os.path.realpath(self.dir.name))
        self.build = root / "build"
        (self.build / "bin").mkdir(parents=True)
        self.peer = self.build / "bin" / "peer"
        self.peer.write_text("")
        self.stubs = root / "stubs"
        self.stubs.mkdir()
        self.listing = root / "listing.json"
        self.args_log = root / "ctest-args"

    def tearDown(self):
        self.dir.cleanup()

    def run_check(self, tests, ctest_status=0):
        self.listing.write_text(json.dumps({"kind": "ctestInfo", "tests": tests}))
        stub = self.stubs / "ctest"
        stub.write_text(f'#!/bin/sh\necho "$*" >"{self.args_log}"\ncat "{self.listing}"\n'
                        f"exit {ctest_status}\n")
        stub.chmod(0o755)
        env = {"PATH": f"{self.stubs}:/usr/bin:/bin", "LANG": "C.UTF-8"}
        return subprocess.run([str(SCRIPTS / "suite-built-check.py"), str(self.build), "sanitize"],
                              env=env, capture_output=True, text=True, timeout=HANG_BOUND_S)

    def entry(self, name, command=None, environment=None):
        t = {"name": name, "properties": [{"name": "LABELS", "value": ["sanitize"]}]}
        if command is not None:
            t["command"] = command
        if environment is not None:
            t["properties"].append({"name": "ENVIRONMENT", "value": environment})
        return t

    def test_every_file_present_passes_and_counts_the_tests(self):
        p = self.run_check([self.entry("a", ["/bin/sh", str(self.peer)], [f"PEER={self.peer}"]),
                            self.entry("b", [str(self.peer), "/nonexistent/outside/the/tree"])])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("2 tests labelled 'sanitize'", p.stdout)
        self.assertIn("--show-only=json-v1 -L sanitize", self.args_log.read_text())

    def test_a_test_without_its_executable_is_named(self):
        p = self.run_check([self.entry("ok", [str(self.peer)]), self.entry("unbuilt_NOT_BUILT")])
        self.assertEqual(p.returncode, 1)
        self.assertIn("test 'unbuilt_NOT_BUILT' needs its executable (not built)", p.stderr)
        self.assertNotIn("'ok'", p.stderr)

    def test_a_missing_build_tree_file_in_the_arguments_is_named(self):
        missing = self.build / "lib" / "libplugin.so"
        p = self.run_check([self.entry("loads", [str(self.peer), "--plugin", str(missing)])])
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"test 'loads' needs {missing}", p.stderr)

    def test_a_missing_build_tree_file_in_the_environment_is_named(self):
        missing = self.build / "vroce" / "lib"
        environment = [f"LD_LIBRARY_PATH=/usr/lib:{missing}"]
        p = self.run_check([self.entry("env", [str(self.peer)], environment)])
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"test 'env' needs {missing}", p.stderr)

    def test_a_ctest_failure_is_an_error_of_its_own(self):
        p = self.run_check([], ctest_status=1)
        self.assertEqual(p.returncode, 2)
        self.assertIn("ctest could not list", p.stderr)


if __name__ == "__main__":
    unittest.main()
