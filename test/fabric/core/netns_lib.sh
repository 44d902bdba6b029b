# shellcheck shell=bash
# Shared by the netns scripts (netns_run.sh, pod_netns_run.sh); sourced, not run. Provides:
#   netns_setup PREFIX NAME...   namespaces PREFIX-<pid>-NAME, removed on exit with the temp dir
#                                and every pid in `pids`; exits 77 (skipped) when namespaces
#                                cannot be created here, or under ROCE_TEST_BACKEND=hw
#   fail MESSAGE                 prints it and every $tmp/*.out, exits 1
#   wait_for_handle PID          prints the receiver's handle from $tmp/recv.out
#   verify_sender PID            waits for the sender; it must report OK in $tmp/send.out
#   close_receiver PID           lets a --wait-before-close receiver close (fd 3 is its stdin)
#                                and checks it reports OK in $tmp/recv.out
# Callers set `set -euo pipefail` first. Every wait is bounded by the shared hang bound.

# shellcheck source=../../support/hang_bound.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../support/hang_bound.sh"

id=$$
tmp=$(mktemp -d /tmp/pc-netns-XXXXXX)
pids=()
namespaces=()

netns_cleanup() {
  local pid ns
  for pid in "${pids[@]}"; do
    kill -KILL "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  for ns in "${namespaces[@]}"; do
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap netns_cleanup EXIT

fail() {
  echo "FAILED: $*" >&2
  local f
  for f in "$tmp"/*.out; do
    [[ -f $f ]] && { echo "--- $f" >&2; cat "$f" >&2; }
  done
  exit 1
}

netns_setup() {
  local prefix=$1 name
  shift
  # Namespaces joined by a veth carry vroce devices: nothing of a real NIC is tested here.
  if [[ ${ROCE_TEST_BACKEND:-vroce} != vroce ]]; then
    echo "SKIPPED: the netns tests run on vroce only (ROCE_TEST_BACKEND=$ROCE_TEST_BACKEND)" >&2
    exit 77
  fi
  for name in "$@"; do
    if ! ip netns add "$prefix-$id-$name" 2>/dev/null; then
      echo "SKIPPED: cannot create network namespaces here (needs root and CONFIG_NET_NS)" >&2
      exit 77
    fi
    namespaces+=("$prefix-$id-$name")
    ip -n "$prefix-$id-$name" link set lo up
  done
}

wait_for_handle() {
  local recv_pid=$1 handle="" _
  for _ in $(seq "$roce_hang_polls"); do
    handle=$(sed -n 's/^HANDLE //p' "$tmp/recv.out" | head -n1)
    [[ -n $handle ]] && break
    kill -0 "$recv_pid" 2>/dev/null || fail "the receiver exited before listening"
    sleep 0.1
  done
  [[ -n $handle ]] || fail "no handle from the receiver"
  echo "$handle"
}

verify_sender() {
  wait "$1" || fail "the sender failed"
  grep -q '^OK' "$tmp/send.out" || fail "the sender did not report OK"
}

close_receiver() {
  local _
  for _ in $(seq "$roce_hang_polls"); do
    grep -q READY_TO_CLOSE "$tmp/recv.out" && break
    sleep 0.1
  done
  echo close >&3
  exec 3>&-
  wait "$1" || fail "the receiver failed"
  grep -q '^OK' "$tmp/recv.out" || fail "the receiver did not report OK"
}
