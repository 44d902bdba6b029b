"""demo.sh's command line: --help prints the usage on stdout and exits 0, a bad argument exits 2
with the reason, and a copy outside a source checkout says it runs only from one. None of these
reach the install or the build."""

import shutil
import subprocess
import unittest

from scripttest import SCRIPTS, ScriptTest


class DemoTest(ScriptTest):
    def test_help_prints_usage_and_exits_0(self):
        for flag in ("--help", "-h"):
            r = self.run_script("demo.sh", flag, path="/usr/bin:/bin")
            self.assertEqual(r.rc, 0, r.err)
            self.assertIn("Usage: scripts/demo.sh", r.out)
            self.assertIn("--max-bytes N", r.out)

    def test_bad_arguments_exit_2_with_the_reason(self):
        r = self.run_script("demo.sh", "--bogus", path="/usr/bin:/bin")
        self.assertEqual(r.rc, 2)
        self.assertIn("unknown argument '--bogus'", r.err)
        self.assertIn("Usage:", r.err)
        r = self.run_script("demo.sh", "--max-bytes", path="/usr/bin:/bin")
        self.assertEqual(r.rc, 2)
        self.assertIn("--max-bytes needs a size", r.err)

    def test_outside_a_checkout_it_says_so(self):
        copy = self.root / "elsewhere" / "scripts"
        copy.mkdir(parents=True)
        shutil.copy2(SCRIPTS / "demo.sh", copy / "demo.sh")
        p = subprocess.run([str(copy / "demo.sh"), "--no-install"], capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin"}, cwd=self.root)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("is not a source checkout of nccl-net-roce", p.stderr)


if __name__ == "__main__":
    unittest.main()
