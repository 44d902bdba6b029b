#!/usr/bin/env bash
# Runs clang-tidy with the top-level .clang-tidy (WarningsAsErrors: every finding fails) over the
# project's own translation units in a clang build's compile database: plugin/, vroce/ and tools/
# (not tools/*/test/).
# The tests' own sources are left out (their Catch2 expansions are most of the cost and none of
# the product); headers of ours that they include are still checked through the units above.
#   check_tidy.sh SOURCE_DIR BUILD_DIR RUN_CLANG_TIDY CLANG_TIDY JOBS
set -euo pipefail
src=${1:?usage: check_tidy.sh SOURCE_DIR BUILD_DIR RUN_CLANG_TIDY CLANG_TIDY JOBS}
build=${2:?} runner=${3:?} tidy=${4:?} jobs=${5:?}
for tool in "$runner" "$tidy"; do
  command -v "$tool" >/dev/null ||
    { echo "check_tidy: $tool not found: install clang-tidy (scripts/install-deps.sh)" >&2; exit 1; }
done
[[ -f $build/compile_commands.json ]] ||
  { echo "check_tidy: $build/compile_commands.json missing: configure with a clang preset" >&2; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# run-clang-tidy always asks for colour; the log is read as text. tools/*/test/ are tests too.
if "$runner" -clang-tidy-binary "$tidy" -p "$build" -j "$jobs" -quiet \
     "^$src/(plugin/|vroce/|tools/[^/]+/(?!test/))" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >"$log"; then
  echo "clang-tidy: no findings"
  exit 0
fi
# Each finding once (a header's finding repeats for every unit that includes it), then the rest
# of the output for what is not a finding (a unit that fails to parse, a missing tool).
grep -E '^/.*(warning|error): ' "$log" | sort -u || grep -v '^clang-tidy' "$log" | tail -n 40
echo "clang-tidy: $(grep -E '^/.*error: .*\]$' "$log" | sort -u | wc -l) findings (the check in brackets)"
exit 1
