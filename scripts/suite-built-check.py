#!/usr/bin/env python3
"""Checks that a build tree holds everything the tests of some labels run, before ctest runs them.

scripts/test.sh builds only the suite targets of the labels it runs in the sanitizer trees
(cmake/TestSuites.cmake). A test registered with add_test() whose roce_test_needs() is missing or
short would then find a program or library of the build tree absent, and might fail obscurely or
even pass having checked less. This names each such test and file instead: every labelled test
must have its executable (ctest found it), and every path under the build tree on its command line
or in its environment must exist.

  suite-built-check.py BUILD_DIR LABEL_REGEX

Exit status: 0 all present; 1 something is missing (each printed); 2 ctest could not list.
"""
import json
import os
import subprocess
import sys


def paths_in(value, build):
    # Command arguments and environment values (NAME=a:b) may hold several paths.
    for part in value.replace("=", ":").split(":"):
        if os.path.isabs(part) and os.path.normpath(part).startswith(build + os.sep):
            yield part


def main():
    if len(sys.argv) != 3:
        print(__doc__.split("\n\n")[2].strip(), file=sys.stderr)
        return 2
    build = os.path.realpath(sys.argv[1])
    regex = sys.argv[2]
    listing = subprocess.run(
        ["ctest", "--test-dir", build, "--show-only=json-v1", "-L", regex],
        capture_output=True, text=True, check=False)
    if listing.returncode != 0:
        print(f"suite-built-check: ctest could not list the tests of {build}:\n{listing.stderr}",
              file=sys.stderr)
        return 2
    tests = json.loads(listing.stdout)["tests"]
    missing = []
    for test in tests:
        if "command" not in test:
            missing.append((test["name"], "its executable (not built)"))
            continue
        values = list(test["command"])
        for prop in test.get("properties", []):
            if prop["name"] == "ENVIRONMENT":
                values += prop["value"]
        for value in values:
            for path in paths_in(value, build):
                if not os.path.exists(path):
                    missing.append((test["name"], path))
    for name, what in missing:
        print(f"suite-built-check: test '{name}' needs {what}, which this tree lacks: the suite "
              "target of its labels must depend on it (roce_test_needs(), cmake/TestSuites.cmake)",
              file=sys.stderr)
    print(f"suite-built-check: {len(tests)} tests labelled '{regex}' in {build}, "
          f"{len(missing)} missing file(s)")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
