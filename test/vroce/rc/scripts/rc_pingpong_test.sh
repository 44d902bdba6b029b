#!/usr/bin/env bash
# Debian's unmodified ibv_rc_pingpong (linked against rdma-core 44) between two processes, each on
# its own vroce device, through LD_LIBRARY_PATH=<build>/vroce/lib: busy-polling and with
# completion events (-e), several sizes. Checks the program's own report and vroce's counters.
# Then ibv_srq/ud/uc/xsrq_pingpong, which need what vroce does not implement, must load and refuse
# cleanly.
#
#   rc_pingpong_test.sh <dir holding vroce's libibverbs.so.1>
set -euo pipefail
# shellcheck source=../../../support/hang_bound.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../support/hang_bound.sh"

usage() { echo "usage: $0 <vroce lib dir>" >&2; exit 2; }
[[ $# -eq 1 && -e $1/libibverbs.so.1 ]] || usage
libdir=$(cd "$1" && pwd)
command -v ibv_rc_pingpong >/dev/null || { echo "ibv_rc_pingpong missing (apt-get install ibverbs-utils)" >&2; exit 1; }

work=$(mktemp -d /tmp/vr-pingpong.XXXXXX)
server=""
cleanup() {
  if [[ -n $server ]]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

export LD_LIBRARY_PATH=$libdir
# with_test_addresses (see CMakeLists.txt) has claimed this run's own loopback addresses.
read -ra addr <<<"${ROCE_TEST_ADDRESSES:?run this under with_test_addresses (test/support), which claims its loopback addresses}"
export VROCE_DEVICES=vrP1=${addr[0]},vrP2=${addr[1]}

fail() { echo "FAIL: $*" >&2; for f in "$work"/*.log; do echo "--- $f" >&2; cat "$f" >&2; done; exit 1; }

run_case() {
  local name=$1; shift
  local port=$((20000 + (RANDOM % 20000)))
  local iters=200
  VROCE_STATS_FILE=$work/$name.server.json timeout "$ROCE_HANG_BOUND_S" ibv_rc_pingpong -d vrP1 -g 3 -p "$port" -n "$iters" "$@" \
    >"$work/$name.server.log" 2>&1 &
  server=$!
  # The server listens once its device is open; retry the client until then.
  local ok=0
  for _ in $(seq "$roce_hang_polls"); do
    if VROCE_STATS_FILE=$work/$name.client.json timeout "$ROCE_HANG_BOUND_S" ibv_rc_pingpong -d vrP2 -g 3 -p "$port" -n "$iters" "$@" 127.0.0.1 \
      >"$work/$name.client.log" 2>&1; then
      ok=1
      break
    fi
    grep -q "Couldn't connect" "$work/$name.client.log" || break
    sleep 0.1
  done
  wait "$server" || fail "$name: server exited with $?"
  server=""
  [[ $ok -eq 1 ]] || fail "$name: client failed"
  for side in server client; do
    local log=$work/$name.$side.log
    grep -Eq "^$iters iters in [0-9.]+ seconds" "$log" || fail "$name: $side did not report $iters iterations"
    grep -Eq "local address:  LID 0x0000, QPN 0x[0-9a-f]*, PSN 0x[0-9a-f]*, GID ::ffff:(${addr[0]}|${addr[1]})$" "$log" ||
      fail "$name: $side did not report a RoCEv2 IPv4 GID"
    # Each iteration is one SEND each way; every one went through vroce's engine.
    python3 - "$work/$name.$side.json" "$iters" <<'PY' || fail "$name: $side counters"
import json, sys
d = json.load(open(sys.argv[1])); n = int(sys.argv[2])
assert d["completions"]["success"] >= 2 * n, d["completions"]
assert d["tx_packets"]["send"] >= n and d["rx_packets"]["send"] >= n
bad = {k: v for k, v in d["completions"].items() if k != "success" and v}
assert not bad, bad
assert d["live"]["qps"] == 0 and d["live"]["pds"] == 0, d["live"]
PY
  done
  echo "ok: $name ($(grep -E 'iters in' "$work/$name.client.log"))"
}

run_case busy-poll
run_case events -e
run_case size-64k-mtu-1024 -s 65536 -m 1024
run_case size-1-mtu-4096 -s 1 -m 4096 -e

# Debian's programs for what vroce does not implement load (every symbol they import exists) and
# fail with their own message, not a crash: SRQ, UD and UC QPs, XRC domains.
expect_refusal() {
  local prog=$1 message=$2
  local status=0
  VROCE_DEVICES=vrP1=${addr[0]} timeout "$ROCE_HANG_BOUND_S" "$prog" -d vrP1 -g 3 -p $((20000 + (RANDOM % 20000))) \
    >"$work/$prog.log" 2>&1 || status=$?
  ((status == 1)) || fail "$prog: exit status $status, expected 1 (a refusal, not a crash)"
  grep -q "$message" "$work/$prog.log" || fail "$prog: no '$message'"
  echo "ok: $prog refused: $(grep "$message" "$work/$prog.log")"
}
expect_refusal ibv_srq_pingpong "Couldn't create SRQ"
expect_refusal ibv_ud_pingpong "Couldn't create QP"
expect_refusal ibv_uc_pingpong "Couldn't create QP"
expect_refusal ibv_xsrq_pingpong "Couldn't Open the XRC Domain"
