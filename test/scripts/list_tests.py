"""Prints the id of every unittest test in this folder (module.Class.method), one per line, so
CMake can register each as its own CTest test."""

import sys
import unittest
from pathlib import Path

sys.dont_write_bytecode = True
here = Path(__file__).resolve().parent
sys.path.insert(0, str(here))


def walk(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from walk(t)
        else:
            yield t.id()


suite = unittest.defaultTestLoader.discover(str(here), pattern="test_*.py", top_level_dir=str(here))
for test_id in walk(suite):
    if test_id.startswith("unittest.loader"):
        sys.exit(f"cannot load a test module: {test_id}")
    print(test_id)
