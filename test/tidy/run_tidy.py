#!/usr/bin/env python3
"""clang-tidy over the project's own translation units in a compile database, every finding an
error (the top-level .clang-tidy), with a cache of clean results.

A unit is checked again only when what clang-tidy would read changes: the key is the hash of
clang-tidy's version, the .clang-tidy file, the unit's compile command and its preprocessed text
(which holds every header it includes). Only clean results are cached, so a finding is reported on
every run until it is fixed. Most of clang-tidy's time goes into matching the headers' AST
(spdlog, fmt, nlohmann/json), 8 to 12 CPU-seconds a unit; preprocessing costs well under one.

  run_tidy.py --source DIR --build DIR --clang-tidy BIN [--jobs N]

Exit status: 0 no findings; 1 findings (each printed once, then a count); 2 a tool or the
compile database is missing.
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def units(database, source):
    # plugin/, vroce/ and tools/, not the tools' tests; each file once (the fuzz targets compile
    # some library sources a second time with other flags).
    wanted = re.compile(r"^" + re.escape(source) + r"/(plugin/|vroce/|tools/[^/]+/(?!test/))")
    seen = {}
    for entry in database:
        path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
        if wanted.match(path) and path not in seen:
            seen[path] = entry
    return seen


def preprocess_command(entry):
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    args = [a for a in args if not a.endswith("ccache")]
    out = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD"):
            continue
        out.append(a)
    return out + ["-E", "-o", "-"]


def check(path, entry, build, tidy, salt, cache_dir):
    pre = subprocess.run(preprocess_command(entry), cwd=entry["directory"], capture_output=True)
    if pre.returncode != 0:
        return path, False, "preprocessing failed:\n" + pre.stderr.decode(errors="replace")
    key = hashlib.sha256(salt + entry.get("command", "").encode() + pre.stdout).hexdigest()
    stamp = os.path.join(cache_dir, key)
    if os.path.exists(stamp):
        return path, True, ""
    run = subprocess.run([tidy, "-p", build, "-quiet", path], capture_output=True)
    text = ANSI.sub("", (run.stdout + run.stderr).decode(errors="replace"))
    if run.returncode == 0:
        with open(stamp, "w", encoding="utf-8") as f:
            f.write(path + "\n")
        return path, True, ""
    return path, False, text


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True)
    parser.add_argument("--build", required=True)
    parser.add_argument("--clang-tidy", required=True)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    source = os.path.realpath(args.source)
    database_path = os.path.join(args.build, "compile_commands.json")
    if not os.path.exists(database_path):
        print(f"run_tidy: {database_path} missing: configure with a clang preset", file=sys.stderr)
        return 2
    version = subprocess.run([args.clang_tidy, "--version"], capture_output=True)
    if version.returncode != 0:
        print(f"run_tidy: {args.clang_tidy} does not run: install clang-tidy "
              "(scripts/install-deps.sh)", file=sys.stderr)
        return 2
    with open(os.path.join(source, ".clang-tidy"), "rb") as f:
        salt = version.stdout + f.read()
    with open(database_path, encoding="utf-8") as f:
        todo = units(json.load(f), source)
    cache_dir = os.path.join(args.build, "clang-tidy-cache")
    os.makedirs(cache_dir, exist_ok=True)

    failed = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(check, p, e, args.build, args.clang_tidy, salt, cache_dir)
                   for p, e in sorted(todo.items())]
        for future in concurrent.futures.as_completed(futures):
            path, ok, text = future.result()
            if not ok:
                failed[path] = text
    if not failed:
        print(f"clang-tidy: no findings in {len(todo)} units")
        return 0
    # A header's finding repeats for every unit that includes it: print each once.
    findings = sorted({line for text in failed.values() for line in text.splitlines()
                       if re.match(r"^/.*(warning|error): ", line)})
    for line in findings:
        print(line)
    if not findings:
        for path, text in sorted(failed.items()):
            print(f"{path}:\n{text}")
    print(f"clang-tidy: {len(findings)} findings in {len(failed)} of {len(todo)} units "
          "(the check in brackets; .clang-tidy says which checks run and why)")
    return 1


if __name__ == "__main__":
    sys.exit(main())
