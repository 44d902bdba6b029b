#!/usr/bin/env bash
# --vroce-sysfs in cluster mode: two ranks started by hand (--rank), each on its own vroce device,
# each writes its own sysfs tree and sees it as /sys/class. The plugin must find its PCI path in
# that tree, and the tree must be gone once the rank has exited. A rank without VROCE_DEVICES
# refuses at once and names it.
#
# usage: with_test_addresses --vroce-devices A,B -- cluster_vroce_sysfs_test.sh ROCE_BENCH
# (NCCL_IBVERBS_LIB: vroce's libibverbs). Exits 77 (skipped) unless run as root.
set -euo pipefail
bench=$1
if [[ $(id -u) != 0 ]]; then
  echo "skipped: a private mount namespace needs root"
  exit 77
fi
IFS=, read -r dev0 dev1 _ <<<"$VROCE_DEVICES"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
common=(-m pingpong -b 8 -e 8 -n 20 -w 2 --nranks 2 --rendezvous "${dev0#*=}:$port" --vroce-sysfs
  --ibverbs "$NCCL_IBVERBS_LIB" --timeout 60)

VROCE_DEVICES=$dev1 NCCL_IB_HCA="=${dev1%%=*}" \
  timeout 120 "$bench" "${common[@]}" --rank 1 >"$out/rank1" 2>&1 &
rank1=$!
status0=0
VROCE_DEVICES=$dev0 NCCL_IB_HCA="=${dev0%%=*}" \
  timeout 120 "$bench" "${common[@]}" --rank 0 >"$out/rank0" 2>&1 || status0=$?
status1=0
wait "$rank1" || status1=$?
if [[ $status0 != 0 || $status1 != 0 ]]; then
  echo "FAIL: the ranks exited with $status0 and $status1"
  tail -n 20 "$out/rank0" "$out/rank1"
  exit 1
fi
tree=$(grep -o 'pciPath /tmp/roce-bench-sysfs\.[A-Za-z0-9]*' "$out/rank0" | head -n 1 | cut -d' ' -f2)
if [[ -z $tree ]]; then
  echo "FAIL: rank 0's plugin did not find its PCI path in a roce-bench sysfs tree:"
  grep -i 'pciPath' "$out/rank0" || tail -n 20 "$out/rank0"
  exit 1
fi
if [[ -e $tree ]]; then
  echo "FAIL: rank 0 left its sysfs tree $tree behind"
  exit 1
fi
if ! grep -q 'Out of bounds values : 0 OK' "$out/rank0"; then
  echo "FAIL: rank 0 did not verify its messages"
  tail -n 20 "$out/rank0"
  exit 1
fi

status=0
env -u VROCE_DEVICES timeout 60 "$bench" "${common[@]}" --rank 1 >"$out/bare" 2>&1 || status=$?
if [[ $status != 2 ]] || ! grep -q -- '--vroce-sysfs with --rank needs VROCE_DEVICES' "$out/bare"; then
  echo "FAIL: a rank without VROCE_DEVICES exited with $status:"
  cat "$out/bare"
  exit 1
fi
echo "PASS: both ranks saw their own tree ($tree for rank 0), removed at exit"
