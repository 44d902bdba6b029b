#!/usr/bin/env bash
# Runs every libFuzzer target for a while from its committed seed corpus (copied, so the repo's
# corpus stays as committed). The targets are built by CMake with ROCE_FUZZ=ON (presets clang and
# asan-ubsan) into <build>/fuzz. Fails on any crash, sanitizer report, leak or timeout, and on a
# missing target; prints each target's final statistics.
#   test/fuzz/run.sh FUZZ_DIR [SECONDS_PER_TARGET]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: run.sh FUZZ_DIR [SECONDS_PER_TARGET]}
seconds=${2:-25}
for target in handshake listen_handle config packet; do
  [[ -x $out/${target}_fuzz ]] || {
    echo "run.sh: $out/${target}_fuzz is missing: build with ROCE_FUZZ=ON (cmake --preset clang)" >&2
    exit 1
  }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for target in handshake listen_handle config packet; do
  mkdir -p "$work/$target"
  cp "$here/corpus/$target"/* "$work/$target/"
  if ! (cd "$work" && "$out/${target}_fuzz" -max_total_time="$seconds" -timeout=10 \
          -rss_limit_mb=1024 -print_final_stats=1 "$work/$target" >"$work/$target.log" 2>&1); then
    echo "FAIL $target:"
    tail -n 40 "$work/$target.log"
    status=1
    continue
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$target.log")
  cov=$(grep -Eo 'cov: [0-9]+' "$work/$target.log" | tail -n1)
  echo "FUZZ $target seconds=$seconds executions=$runs $cov corpus=$(find "$work/$target" -type f | wc -l)"
done
exit $status
