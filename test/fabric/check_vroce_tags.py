#!/usr/bin/env python3
"""Every fabric test that needs what only vroce has carries the Catch2 tag [vroce], so that
ROCE_TEST_BACKEND=hw skips it instead of running it against a NIC it would misjudge.

A TEST_CASE needs vroce when its body uses one of vroce's switches or hooks: the VROCE_*
variables other than VROCE_DEVICES (faults, fake sysfs, class override, time scale, ECE), its
counters or port events, vroce loaded by path, a child process configured with VROCE_DEVICES, or
the helpers built on those. Exit 0 when every such test is tagged, else 1 naming each one."""
import re
import sys
from pathlib import Path

NEEDS_VROCE = re.compile(
    r"VROCE_(?!DEVICES\b)[A-Z_]+|vroce_stats?\(|inject_port_event\(|\binject\(|run_with_faults\(|"
    r"use_devices_with_tc_override\(|check_two_functions\(|ChildProcess\b|load_vroce\(|peermem")


def main(root):
    untagged = []
    count = 0
    for source in sorted(Path(root).rglob("*_test.cpp")):
        if "vroce_tag_canary" in source.relative_to(root).parts:
            continue  # the canary's input, checked on its own (it must fail)
        text = source.read_text()
        starts = [m.start() for m in re.finditer(r"^TEST_CASE\(", text, re.M)]
        for begin, end in zip(starts, starts[1:] + [len(text)]):
            case = text[begin:end]
            head = case[: case.index("{")]
            name = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', head)[:-1])
            count += 1
            # The body ends where the next top-level item starts (a namespace or a TEST_CASE).
            body = re.split(r"^(?:namespace|}  // namespace)", case[len(head):], flags=re.M)[0]
            if NEEDS_VROCE.search(body) and "[vroce]" not in head:
                untagged.append(f"{source}: \"{name}\" uses {NEEDS_VROCE.search(body).group(0)}")
    for line in untagged:
        print(f"needs vroce but is not tagged [vroce]: {line}")
    print(f"{count} fabric test cases, {len(untagged)} untagged that need vroce")
    return 1 if untagged or count == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent))
