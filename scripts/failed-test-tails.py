#!/usr/bin/env python3
"""Prints the last lines each failed test of a build directory's last ctest run printed.

ctest keeps every test's output of its last run in Testing/Temporary/LastTest.log and the
failed tests' names in LastTestsFailed.log; scripts/test.sh calls this after a failed run so that
the end of a CI log, which may be all a report shows, says why each test failed.

  failed-test-tails.py <build dir> [--lines N]
"""
import argparse
import re
import sys
from pathlib import Path


def outputs(log_text):
    """Maps each test name in a LastTest.log to the output it printed."""
    found = {}
    pattern = re.compile(r"^\d+/\d+ Test: (.+?)\n.*?^Output:\n-+\n(.*?)^<end of output>$",
                         re.M | re.S)
    for match in pattern.finditer(log_text):
        found[match.group(1)] = match.group(2)
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir", type=Path)
    parser.add_argument("--lines", type=int, default=60)
    args = parser.parse_args()
    temporary = args.build_dir / "Testing" / "Temporary"
    try:
        failed = [line.split(":", 1)[1] for line in
                  (temporary / "LastTestsFailed.log").read_text().splitlines() if ":" in line]
        printed = outputs((temporary / "LastTest.log").read_text(errors="replace"))
    except OSError as error:
        print(f"{args.build_dir}: no ctest logs to read ({error})")
        return 0
    for name in failed:
        lines = printed.get(name, "(its output is not in LastTest.log)\n").splitlines()
        print(f"--- {args.build_dir.name}: {name}, last {min(len(lines), args.lines)} of "
              f"{len(lines)} lines")
        print("\n".join(line[:300] for line in lines[-args.lines:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
