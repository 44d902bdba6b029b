#!/usr/bin/env bash
# The statistics files the plugin writes, read back by scripts/roce_stats: a roce-bench run with
# NCCL_ROCE_STATS_FILE set in every rank leaves one JSON-lines file per rank, and roce_stats turns
# them into its table across ranks with the verdict line.
# usage: stats_view_test.sh ROCE_BENCH ROCE_STATS [roce-bench args...]
set -euo pipefail
bench=$1 stats=$2
shift 2
dir=$(mktemp -d /tmp/rb-stats.XXXXXX)
trap 'rm -rf "$dir"' EXIT
NCCL_ROCE_STATS_FILE="$dir/roce.%h.%p.jsonl" NCCL_ROCE_STATS_INTERVAL_MS=100 "$bench" "$@" >"$dir/bench.out"
files=$(find "$dir" -name 'roce.*.jsonl' | wc -l)
proms=$(find "$dir" -name 'roce.*.jsonl.prom' | wc -l)
if [[ $files -lt 2 || $proms -lt 2 ]]; then
  echo "FAIL: expected a statistics file and a .prom file per rank, found $files and $proms" >&2
  ls -l "$dir" >&2
  exit 1
fi
out=$("$stats" "$dir")
echo "$out"
grep -q '^rank' <<<"$out" || { echo "FAIL: no table header" >&2; exit 1; }
grep -q ' send ' <<<"$out" || { echo "FAIL: no send comm in the table" >&2; exit 1; }
grep -q ' recv ' <<<"$out" || { echo "FAIL: no recv comm in the table" >&2; exit 1; }
grep -q '^slowest link: rank ' <<<"$out" || { echo "FAIL: no verdict line" >&2; exit 1; }
echo "ok: $files statistics files read"
