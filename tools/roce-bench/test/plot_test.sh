#!/usr/bin/env bash
# scripts/roce-plot on a fresh roce-bench JSON: a pingpong sweep with --compare-raw over vroce is
# drawn into a PNG of 1100 x 440 pixels. Exits 77 (skipped) when roce-plot's interpreter has no
# matplotlib (Debian's python3-matplotlib).
#
# usage: with_test_addresses --vroce-devices A,B -- plot_test.sh ROCE_BENCH ROCE_PLOT
# (NCCL_IBVERBS_LIB: vroce's libibverbs)
set -euo pipefail
usage() {
  sed -n '2,7p' "$0" >&2
  exit 2
}
[[ $# == 2 ]] || usage
bench=$1
plot=$2
interpreter=$(head -n 1 "$plot" | cut -c3-)
if ! $interpreter -c 'import matplotlib' 2>/dev/null; then
  echo "skipped: $interpreter has no matplotlib (install python3-matplotlib)"
  exit 77
fi
work=$(mktemp -d /tmp/rb-plot.XXXXXX)
trap 'rm -rf "$work"' EXIT
timeout 120 "$bench" -m pingpong --compare-raw -b 8 -e 4K -f 8 -n 20 -w 2 \
  --rendezvous 127.0.5.250:0 --json="$work/run.json" >"$work/out" 2>&1 || {
  echo "FAIL: roce-bench failed"
  cat "$work/out"
  exit 1
}
"$plot" -o "$work/run.png" "$work/run.json"
size=$(python3 - "$work/run.png" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
print("%dx%d" % struct.unpack(">II", data[16:24]))
PY
)
if [[ $size != 1100x440 ]]; then
  echo "FAIL: the PNG is $size, expected 1100x440"
  exit 1
fi
echo "PASS: roce-plot drew roce-bench's JSON into a $size PNG"
