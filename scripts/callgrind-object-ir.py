#!/usr/bin/env python3
"""Instructions (Ir) executed inside one shared object, from callgrind output files.

Callgrind charges each cost line to the function (fn=) and object (ob=) it appears under; a cost
line that follows a calls= line is the inclusive cost of a call and is not the caller's own cost.
Summing the self cost of every function whose object path ends with the given name gives the
instructions executed in that object's code, whoever called it, excluding what it calls in other
objects (libc, libibverbs/vroce). A cost line starts with one field per position named on the
"positions:" line (line numbers by default; "instr line" with callgrind --dump-instr=yes, for
per-instruction work), and the Ir count follows them. Used by scripts/bench-callgrind.sh.

usage: callgrind-object-ir.py [--json] [--top N] OBJECT_NAME FILE...
"""
import json
import re
import sys

NAME_RE = re.compile(r"^\((\d+)\)(?: (.*))?$")


def resolve(table, text):
    """Resolves callgrind's name compression: '(id) name' defines, '(id)' refers back."""
    m = NAME_RE.match(text)
    if not m:
        return text
    ident, name = m.group(1), m.group(2)
    if name is not None:
        table[ident] = name
        return name
    return table.get(ident, "(" + ident + ")")


def object_ir(path, object_name):
    """Returns (total Ir, Ir in object, {function: Ir in object})."""
    obs, fns = {}, {}
    current_ob, current_fn = "", ""
    skip_next_cost = False
    in_object, total = 0, 0
    per_function = {}
    events = None
    positions = 1  # "positions: line", callgrind's default
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not line:
                continue
            if line.startswith("positions:"):
                positions = len(line.split()[1:])
                if positions == 0:
                    raise ValueError(f"{path}: a positions: line that names no position")
                continue
            if line.startswith("events:"):
                events = line.split()[1:]
                if not events or events[0] != "Ir":
                    raise ValueError(f"{path}: first event is not Ir ({events})")
                continue
            head = line[0]
            if head.isdigit() or head in "+-*":
                if skip_next_cost:
                    skip_next_cost = False
                    continue
                fields = line.split()
                if len(fields) <= positions:
                    continue  # positions only: no event counted on this line
                ir = int(fields[positions])
                total += ir
                if current_ob.endswith(object_name):
                    in_object += ir
                    per_function[current_fn] = per_function.get(current_fn, 0) + ir
                continue
            key, _, value = line.partition("=")
            if key == "ob":
                current_ob = resolve(obs, value)
            elif key == "fn":
                current_fn = resolve(fns, value)
            elif key == "cob":
                resolve(obs, value)
            elif key == "cfn" or key == "cfi" or key == "cfl":
                if key == "cfn":
                    resolve(fns, value)
            elif key == "calls":
                skip_next_cost = True
    if events is None:
        raise ValueError(f"{path}: not a callgrind output file (no events: line)")
    return total, in_object, per_function


def main(argv):
    as_json = False
    top = 0
    args = argv[1:]
    while args and args[0].startswith("--"):
        if args[0] == "--json":
            as_json = True
            args = args[1:]
        elif args[0] == "--top" and len(args) > 1:
            top = int(args[1])
            args = args[2:]
        else:
            print(__doc__, file=sys.stderr)
            return 2
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    object_name, files = args[0], args[1:]
    results = []
    for path in files:
        try:
            total, in_object, per_function = object_ir(path, object_name)
        except (OSError, ValueError) as e:
            print(f"callgrind-object-ir: {e}", file=sys.stderr)
            return 1
        hottest = sorted(per_function.items(), key=lambda kv: -kv[1])[:top]
        results.append({"file": path, "total_ir": total, "object_ir": in_object,
                        "top": [{"function": fn, "ir": ir} for fn, ir in hottest]})
    if as_json:
        json.dump(results, sys.stdout, indent=1)
        print()
    else:
        for r in results:
            print(f"{r['file']}: {r['object_ir']} Ir in {object_name} of {r['total_ir']} total")
            for t in r["top"]:
                print(f"  {t['ir']:>12}  {t['function']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
