#!/usr/bin/env bash
# Checks a shipped shared library's dynamic symbol table, symbol versions and dependencies:
#   - the only defined dynamic symbols are ncclNetPlugin_v6 to _v12 (skipped with
#     --floor-only, for vroce's libibverbs.so.1, whose exports test/vroce/platform checks);
#   - the newest GLIBC_x.y it imports is at most GLIBC_2.34 (Ubuntu 22.04, the base of the vLLM and
#     TensorRT-LLM images; docs/containers.md), and GCC_x.y from libgcc_s at most GCC_4.2.0;
#   - NEEDED lists only libc-family libraries and libgcc_s.so.1 (libstdc++ is linked statically,
#     libgcc_s dynamically: compat/CMakeLists.txt says why; libibverbs is dlopened at run time),
#     so the .so loads in any container that has NCCL.
# Usage: exports_check.sh [--floor-only] <path to the .so>
set -euo pipefail

floor_only=0
if [[ ${1:-} == --floor-only ]]; then
  floor_only=1
  shift
fi
lib=${1:?usage: exports_check.sh [--floor-only] <libnccl-net-roce.so>}
[[ -f $lib ]] || { echo "FAILED: $lib does not exist; build its target first" >&2; exit 1; }
glibc_floor=${ROCE_GLIBC_FLOOR:-2.34}
gcc_floor=4.2.0

status=0
if ((!floor_only)); then
  symbols=$(nm -D --defined-only "$lib" | awk '{print $NF}' | sort)
  expected=$(printf 'ncclNetPlugin_v%s\n' 6 7 8 9 10 11 12 | sort)
  if [[ $symbols != "$expected" ]]; then
    echo "FAILED: exported symbols differ from the seven ncclNetPlugin_v6..v12 tables:" >&2
    diff <(echo "$expected") <(echo "$symbols") >&2 || true
    status=1
  else
    echo "exports: exactly ncclNetPlugin_v6 to _v12"
  fi
fi

# Imports are the undefined (*UND*) entries, "(FAMILY_x.y) name"; every version of a family must
# be at most its floor (sort -V orders 2.9 < 2.10 < 2.34 < 2.35).
imports=$(objdump -T "$lib" | grep -F '*UND*' |
  sed -nE 's/.*\(([A-Z]+)_([0-9.]+)\)[[:space:]]+([^[:space:]]+)$/\1 \2 \3/p')
newer_than() { [[ $1 != "$2" && $(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -n1) == "$1" ]]; }
check_floor() {
  local family=$1 floor=$2 highest offenders=() fam version name
  highest=$(awk -v f="$family" '$1 == f {print $2}' <<<"$imports" | sort -uV | tail -n1)
  if [[ -z $highest ]]; then
    echo "${family}: no versioned imports"
  elif newer_than "$highest" "$floor"; then
    while read -r fam version name; do
      [[ $fam == "$family" ]] && newer_than "$version" "$floor" &&
        offenders+=("$name@${family}_$version")
    done <<<"$imports"
    echo "FAILED: $lib imports ${offenders[*]}, newer than ${family}_$floor, so it does not" \
      "load on older systems; docs/containers.md (glibc floor) says how such imports are" \
      "removed" >&2
    status=1
  else
    echo "${family}: newest import ${family}_$highest (floor ${family}_$floor)"
  fi
}
check_floor GLIBC "$glibc_floor"
check_floor GCC "$gcc_floor"

allowed='^(libc|libm|libdl|libpthread|librt|ld-linux[-a-z0-9_]*|linux-vdso)\.so|^libgcc_s\.so\.1$'
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
for dep in $needed; do
  if [[ ! $dep =~ $allowed ]]; then
    echo "FAILED: $lib needs $dep; only libc-family libraries and libgcc_s.so.1 are allowed" >&2
    status=1
  fi
done
echo "NEEDED: ${needed//$'\n'/ }"

# ldd resolves the same list transitively as the dynamic linker would.
while read -r line; do
  name=$(awk '{print $1}' <<<"$line")
  [[ -z $name ]] && continue
  base=$(basename "$name")
  if [[ ! $base =~ $allowed ]]; then
    echo "FAILED: ldd shows $name" >&2
    status=1
  fi
done < <(ldd "$lib")
exit $status
