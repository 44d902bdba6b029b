#!/usr/bin/env bash
# Checks the plugin's dynamic symbol table and dependencies:
#   - the only defined dynamic symbols are ncclNetPlugin_v8, _v9, _v10 and _v11;
#   - NEEDED lists only libc-family libraries (libstdc++ and libgcc are linked statically, and
#     libibverbs is dlopened at run time), so the .so loads in any container that has NCCL.
# Usage: exports_check.sh <path to libnccl-net-roce.so>
set -euo pipefail

lib=${1:?usage: exports_check.sh <libnccl-net-roce.so>}
[[ -f $lib ]] || { echo "FAILED: $lib does not exist; build the nccl_net_roce target" >&2; exit 1; }

status=0
symbols=$(nm -D --defined-only "$lib" | awk '{print $NF}' | sort)
expected=$(printf '%s\n' ncclNetPlugin_v10 ncclNetPlugin_v11 ncclNetPlugin_v8 ncclNetPlugin_v9)
if [[ $symbols != "$expected" ]]; then
  echo "FAILED: exported symbols differ from the four ncclNetPlugin_v* tables:" >&2
  diff <(echo "$expected") <(echo "$symbols") >&2 || true
  status=1
else
  echo "exports: exactly ncclNetPlugin_v8, _v9, _v10, _v11"
fi

allowed='^(libc|libm|libdl|libpthread|librt|ld-linux[-a-z0-9_]*|linux-vdso)\.so'
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
for dep in $needed; do
  if [[ ! $dep =~ $allowed ]]; then
    echo "FAILED: $lib needs $dep; only libc-family libraries are allowed" >&2
    status=1
  fi
done
echo "NEEDED: $(echo $needed)"

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
