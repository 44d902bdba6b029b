#!/usr/bin/env python3
"""Checks the built libibverbs.so.1 against Debian's rdma-core 44 library.

- every version node of Debian's library exists in ours (the loader refuses a program whose
  verneed names a missing node);
- every symbol we export has the same default version as Debian's (or VROCE_PRIVATE_1.0);
- libibverbs.map lists every Debian default symbol at its node;
- every symbol of symbol_owners.txt owned by the platform part or the provider stubs is
  exported; the RC engine's entry points are all there or none is (a build without the data
  path);
- every libibverbs symbol Debian's provider libraries import (libmlx4/libmlx5/libefa and the
  providers in libibverbs/, which programs such as perftest link with BIND_NOW) is exported at
  the version they bind, and the stubs fail with EOPNOTSUPP when called;
- ibv_register_driver is, as in rdma-core, only a non-default IBVERBS_1.1 version;
- every verbs symbol Debian's ibverbs-utils import exists, unless the RC engine owns it; the
  RC-owned imports are listed.
Exit 0 on success, 1 on a failed check, 77 (skip) without Debian's library or objdump.
"""
import argparse
import ctypes
import errno
import re
import shutil
import subprocess
import sys
from pathlib import Path

DEBIAN_LIB = Path("/usr/lib/x86_64-linux-gnu/libibverbs.so.1")
UTILS = ["ibv_devinfo", "ibv_devices", "ibv_rc_pingpong", "ibv_srq_pingpong", "ibv_uc_pingpong",
         "ibv_ud_pingpong", "ibv_xsrq_pingpong", "ibv_asyncwatch"]
SKIP = 77


def dynamic_symbols(path):
    """{name: (version, default)} of the defined dynamic symbols, and the set of version nodes."""
    out = subprocess.run(["objdump", "-T", str(path)], check=True, capture_output=True,
                         text=True).stdout
    symbols, nodes = {}, set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 7 or "*UND*" in line or not re.match(r"^[0-9a-f]{16}$", fields[0]):
            continue
        version, name = fields[-2], fields[-1]
        hidden = version.startswith("(")
        version = version.strip("()")
        if version == name:
            nodes.add(version)
            continue
        if not (version.startswith("IBVERBS") or version.startswith("VROCE")):
            continue
        if hidden and name in symbols:
            continue  # keep the default version when both exist
        symbols[name] = (version, not hidden)
    return symbols, nodes


def imported_symbols(path):
    out = subprocess.run(["objdump", "-T", str(path)], check=True, capture_output=True,
                         text=True).stdout
    imports = []
    for line in out.splitlines():
        if "*UND*" in line and "IBVERBS" in line:
            fields = line.split()
            imports.append((fields[-1], fields[-2].strip("()")))
    return imports


def provider_libraries():
    """Debian's provider libraries: those programs link (libmlx4/5, libefa) and those rdma-core
    loads from libibverbs/ (which are the same files or their siblings)."""
    libdir = DEBIAN_LIB.parent
    found = [libdir / f"lib{name}.so.1" for name in ("mlx4", "mlx5", "efa")]
    found += sorted((libdir / "libibverbs").glob("*.so"))
    return [p.resolve() for p in found if p.exists()]


def check_stubs_refuse(lib):
    """Calls a few provider-ABI stubs the way a provider would: each must fail with EOPNOTSUPP
    (returned and in errno) or a null pointer, and verbs_register_driver_34 must be harmless."""
    failures = []
    needed = subprocess.run(["objdump", "-p", str(lib)], check=True, capture_output=True,
                            text=True).stdout
    if re.search(r"NEEDED\s+lib(asan|tsan|ubsan)", needed):
        print("note: sanitizer build; the stubs are not called from this (uninstrumented) python")
        return failures
    handle = ctypes.CDLL(str(lib), use_errno=True)
    for name in ("ibv_cmd_destroy_cq", "ibv_cmd_create_qp", "execute_ioctl", "ibv_cmd_reg_mr"):
        fn = getattr(handle, name)
        fn.restype = ctypes.c_int
        ctypes.set_errno(0)
        rc = fn(None, None, None, None)
        if rc != errno.EOPNOTSUPP or ctypes.get_errno() != errno.EOPNOTSUPP:
            failures.append(f"{name} returned {rc}, errno {ctypes.get_errno()}; want EOPNOTSUPP")
    fn = handle._verbs_init_and_alloc_context
    fn.restype = ctypes.c_void_p
    if fn(None, -1, 0, None, 0) is not None:
        failures.append("_verbs_init_and_alloc_context returned a context")
    handle.verbs_register_driver_34(None)
    return failures


def map_nodes(path):
    """{symbol: node} from a version script."""
    text = re.sub(r"/\*.*?\*/", "", Path(path).read_text(), flags=re.S)
    result = {}
    for node, body in re.findall(r"([A-Z0-9_.]+)\s*\{(.*?)\}", text, flags=re.S):
        for entry in re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*;", body):
            result[entry] = node
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lib", required=True)
    parser.add_argument("--map", required=True)
    parser.add_argument("--owners", required=True)
    args = parser.parse_args()
    if not DEBIAN_LIB.exists() or shutil.which("objdump") is None:
        print(f"SKIP: needs {DEBIAN_LIB} (libibverbs1) and objdump (binutils)")
        return SKIP

    failures = []
    debian, debian_nodes = dynamic_symbols(DEBIAN_LIB)
    ours, our_nodes = dynamic_symbols(args.lib)
    listed = map_nodes(args.map)
    owners = {}
    for line in Path(args.owners).read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            owner, name = line.split()
            owners[name] = owner

    for node in sorted(debian_nodes - our_nodes):
        failures.append(f"version node {node} missing")

    debian_defaults = {n: v for n, (v, default) in debian.items() if default}
    for name, version in sorted(debian_defaults.items()):
        if name not in owners:
            failures.append(f"{name}@@{version} is not classified in {args.owners}")
        if listed.get(name) != version:
            failures.append(f"libibverbs.map lists {name} at {listed.get(name)}, rdma-core at "
                            f"{version}")

    for name, (version, default) in sorted(ours.items()):
        if name.startswith("vroce_"):
            if version != "VROCE_PRIVATE_1.0":
                failures.append(f"{name} exported at {version}, not VROCE_PRIVATE_1.0")
            continue
        if name == "ibv_register_driver":
            if default or version != "IBVERBS_1.1":
                failures.append("ibv_register_driver must be the hidden IBVERBS_1.1 version")
            continue
        if name not in debian_defaults:
            failures.append(f"{name}@{version} is exported but rdma-core 44 has no such symbol")
        elif debian_defaults[name] != version or not default:
            failures.append(f"{name} exported as {version} (default={default}), rdma-core has "
                            f"{debian_defaults[name]} as default")
    if "ibv_register_driver" not in ours:
        failures.append("ibv_register_driver@IBVERBS_1.1 is missing")

    rc_names = sorted(n for n, o in owners.items() if o == "rc")
    rc_present = [n for n in rc_names if n in ours]
    for name, owner in sorted(owners.items()):
        if owner == "platform" and name not in ours:
            failures.append(f"platform symbol {name} is not exported")
        if owner == "provider-stub" and name not in ours:
            failures.append(f"provider-ABI stub {name} is not exported")
    if rc_present and len(rc_present) != len(rc_names):
        missing = sorted(set(rc_names) - set(rc_present))
        failures.append(f"RC engine symbols only partly present; missing: {' '.join(missing)}")
    state = "linked in" if rc_present else "not linked into this build"
    print(f"RC engine entry points: {len(rc_names)}, {state}")

    providers = provider_libraries()
    needed = {}
    for lib in providers:
        for name, version in imported_symbols(lib):
            needed.setdefault((name, version), []).append(lib.name)
    for (name, version), users in sorted(needed.items()):
        if ours.get(name, (None, False)) != (version, True):
            failures.append(f"{name}@{version}, imported by {', '.join(sorted(users))}, is not "
                            f"exported at that version")
    print(f"provider libraries: {len(providers)}, importing {len(needed)} libibverbs symbols")
    failures += check_stubs_refuse(args.lib)

    for util in UTILS:
        path = shutil.which(util)
        if path is None:
            print(f"note: {util} not installed (ibverbs-utils)")
            continue
        rc_imports = []
        for name, version in imported_symbols(path):
            owner = owners.get(name)
            if owner == "rc":
                rc_imports.append(f"{name}@{version}")
                if rc_present and name not in ours:
                    failures.append(f"{util} imports {name}@{version}, which is missing")
            elif owner == "platform":
                if ours.get(name, (None,))[0] != version:
                    failures.append(f"{util} imports {name}@{version}, which we do not export")
            else:
                failures.append(f"{util} imports {name}@{version}, owned by nobody")
        print(f"{util}: RC engine imports: {' '.join(rc_imports) if rc_imports else 'none'}")

    for failure in failures:
        print(f"FAIL: {failure}")
    if not failures:
        print(f"PASS: {len(ours)} symbols, {len(our_nodes)} version nodes consistent with rdma-core 44")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
