"""Base class of the operator-script tests: a private temporary directory per test (removed even
when the test fails), a fixture node in it, stub commands on PATH, and a runner that starts a
script with a clean environment (no NCCL_* from the caller), optionally as an unprivileged user.
"""

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from fixtures import STUB_NAMES, Node, make_bin

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "support"))
from hang_bound import HANG_BOUND_S  # noqa: E402  (one bound for every suite)

REPO = Path(os.environ.get("ROCE_REPO", Path(__file__).resolve().parents[2]))
SCRIPTS = REPO / "scripts"
NOBODY = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]


@dataclasses.dataclass
class Result:
    rc: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


class ScriptTest(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="ok-scripts-")
        self.addCleanup(self._tmp.cleanup)
        self.root = Path(self._tmp.name)
        os.chmod(self.root, 0o755)
        self.env = {}
        self.bin = None

    def node(self, node: Node | None = None, stubs=STUB_NAMES, extra=None) -> dict:
        self.env = (node or Node()).build(self.root)
        self.bin = make_bin(self.root, stubs, extra)
        self.state = Path(self.env["STUB_STATE"])
        self.sysfs = Path(self.env["ROCE_SYSFS_ROOT"])
        return self.env

    def run_script(self, name, *args, env=None, user=False, timeout=HANG_BOUND_S, path=None) -> Result:
        e = {
            "PATH": f"{path or self.bin}:{self.root / 'sysbin'}",
            "HOME": str(self.root),
            "LANG": "C.UTF-8",
        }
        e.update(self.env)
        e.update(env or {})
        cmd = [str(SCRIPTS / name), *args]
        if user:
            cmd = NOBODY + [str(self.scripts_for_nobody() / name), *args]
        p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=timeout,
                           cwd=self.root)
        return Result(p.returncode, p.stdout, p.stderr)

    def scripts_for_nobody(self) -> Path:
        """A copy of scripts/ the unprivileged user can enter, beside (not inside) the fixture
        tree: the checkout itself may sit where it cannot (a clone under a private mktemp -d
        directory, a home directory)."""
        if not hasattr(self, "_nobody_scripts"):
            tmp = tempfile.TemporaryDirectory(prefix="ok-scripts-copy-")
            self.addCleanup(tmp.cleanup)
            os.chmod(tmp.name, 0o755)
            self._nobody_scripts = Path(tmp.name) / "scripts"
            shutil.copytree(SCRIPTS, self._nobody_scripts)
        return self._nobody_scripts

    def calls(self) -> list[str]:
        return (self.state / "calls.log").read_text().splitlines()

    def assertJsonTool(self, text: str):
        """The document passes python3 -m json.tool, as an operator would check it."""
        p = subprocess.run(["python3", "-m", "json.tool"], input=text, capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, f"invalid JSON: {p.stderr}\n{text}")
