#!/usr/bin/env bash
# in_vroce_sysfs.sh NDEVICES CMD...: runs CMD where /sys/class is vroce's fake sysfs, for programs
# that find their RDMA devices in sysfs rather than only through libibverbs: NCCL's built-in IB
# transport and net_ib as a plugin (nccl-rdma-sharp-plugins). vroce writes the tree (devices
# vroce0..vroce<N-1> at ROCE_EXAMPLE_VROCE_BASE, .+1, ..., as the ranks' own devices) when a process
# lists its devices with VROCE_SYSFS_ROOT set; CMD then runs in a private mount namespace with that
# tree bound over /sys/class, so nothing else on the host sees it. Needs root (unshare -m).
# Environment: VROCE_LIB_DIR (the folder of vroce's libibverbs.so.1), ROCE_EXAMPLE_VROCE_BASE
# [127.0.0.21], ROCE_EXAMPLE_VROCE_MEMBERS [1]: with M > 1, each run of M devices (vroce0..M-1,
# vroceM..2M-1, ...) is written as the functions of one PCI device, one rank's multi-port NIC as
# forked_ranks.h gives it (NDEVICES then counts every rank's devices).
set -euo pipefail

if (($# < 2)) || ! [[ $1 =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: in_vroce_sysfs.sh NDEVICES CMD..." >&2
  exit 2
fi
devices_count=$1
shift
lib=${VROCE_LIB_DIR:?set VROCE_LIB_DIR to the folder of vroce\'s libibverbs.so.1}/libibverbs.so.1
[[ -f $lib ]] || { echo "in_vroce_sysfs.sh: $lib is missing: build the vroce target" >&2; exit 2; }
base=${ROCE_EXAMPLE_VROCE_BASE:-127.0.0.21}
devices=""
members=${ROCE_EXAMPLE_VROCE_MEMBERS:-1}
[[ $members =~ ^[1-4]$ ]] || { echo "in_vroce_sysfs.sh: ROCE_EXAMPLE_VROCE_MEMBERS is 1 to 4, not '$members'" >&2; exit 2; }
functions=""
for ((d = 0; d < devices_count; d++)); do
  devices+="${devices:+,}vroce$d=${base%.*}.$((${base##*.} + d))"
  if ((members > 1)); then
    if ((d % members == 0)); then functions+="${functions:+,}vroce$d"; else functions+="+vroce$d"; fi
  fi
done

root=$(mktemp -d /tmp/vroce-sysfs.XXXXXX)
trap 'rm -rf "$root"' EXIT
# shellcheck disable=SC2086  # the functions setting is one word or none
env ${functions:+VROCE_PCI_FUNCTIONS=$functions} VROCE_SYSFS_ROOT="$root" VROCE_DEVICES="$devices" python3 -c '
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.ibv_get_device_list.restype = ctypes.c_void_p
count = ctypes.c_int(0)
sys.exit(0 if lib.ibv_get_device_list(ctypes.byref(count)) and count.value > 0 else 1)' "$lib"
[[ -d $root/class/infiniband ]] || { echo "in_vroce_sysfs.sh: vroce wrote no sysfs tree under $root" >&2; exit 1; }
# shellcheck disable=SC2016  # $0 and $@ are the inner shell's: the tree, then CMD
unshare -m sh -c 'mount --bind "$0/class" /sys/class && exec "$@"' "$root" "$@"
