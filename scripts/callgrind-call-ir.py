#!/usr/bin/env python3
"""Calls into one function and their inclusive instructions (Ir), from callgrind output files.

A callgrind cost line that follows a `calls=N ...` line is the inclusive cost of those N calls
of the function named by the preceding cfn= line. Summing them over every caller outside the
callee's own object (or, with --any-caller, over every caller but the function itself) gives how
often the function was called and what those calls cost in all, whatever they called (libc and
the kernel's entry stubs included). Used by scripts/vroce-per-message-cost.sh.

usage: callgrind-call-ir.py [--any-caller] FUNCTION_SUBSTRING FILE...
       (prints "calls inclusive_ir" per file)
"""
import importlib.util
import pathlib
import sys

# callgrind's name compression, as callgrind-object-ir.py resolves it.
_spec = importlib.util.spec_from_file_location(
    "callgrind_object_ir", pathlib.Path(__file__).with_name("callgrind-object-ir.py"))
_object_ir = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_object_ir)
resolve = _object_ir.resolve


def call_ir(path, wanted, any_caller=False):
    obs, fns = {}, {}
    current_ob, current_fn, callee_ob, callee = "", "", "", ""
    pending = None  # call count of the calls= line whose cost line comes next
    calls, inclusive = 0, 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not line:
                continue
            head = line[0]
            if head.isdigit() or head in "+-*":
                if pending is not None:
                    fields = line.split()
                    outside = (wanted not in current_fn) if any_caller else callee_ob != current_ob
                    if wanted in callee and outside and len(fields) >= 2:
                        calls += pending
                        inclusive += int(fields[1])
                    pending = None
                    callee_ob = current_ob  # a cob= names the callee of one call only
                continue
            key, _, value = line.partition("=")
            if key == "ob":
                current_ob = resolve(obs, value)
                callee_ob = current_ob
            elif key == "fn":
                current_fn = resolve(fns, value)
                callee_ob = current_ob
            elif key == "cob":
                callee_ob = resolve(obs, value)
            elif key == "cfn":
                callee = resolve(fns, value)
            elif key == "calls":
                pending = int(value.split()[0])
    return calls, inclusive


def main(argv):
    args = argv[1:]
    any_caller = bool(args) and args[0] == "--any-caller"
    if any_caller:
        args = args[1:]
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    for path in args[1:]:
        print(*call_ir(path, args[0], any_caller))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
