#!/usr/bin/env bash
# Installs what is missing, configures, builds and runs the whole test suite:
#   1. the release build with warnings as errors (preset "ci"): every test;
#   2. the ASan+UBSan build (preset "asan-ubsan") and the TSan build (preset "tsan"): the tests
#      labelled "sanitize".
# With the ci build, the libFuzzer targets are built with clang into build/ci/fuzz
# (test/fuzz/build.sh); the ci test run gives them a short run (fuzz.short, label fuzz).
# Exits non-zero when any build or any ctest run fails (ctest's exit status); the summary at
# the end names every failed test. Environment:
#   ROCE_TEST_SANITIZERS=0   skip the sanitizer builds (quick local runs)
#   ROCE_TEST_REGEX=...      run only the tests matching this ctest regex
#   ROCE_JOBS=N              build parallelism (default: nproc)
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=${ROCE_JOBS:-$(nproc)}
run_sanitizers=${ROCE_TEST_SANITIZERS:-1}
regex=${ROCE_TEST_REGEX:-}

scripts/install-deps.sh

status=0
summary=()

run_preset() {
  local preset=$1; shift
  echo "=== [$preset] configure and build"
  cmake --preset "$preset" -G Ninja >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  if [[ $preset == ci ]]; then
    echo "=== [$preset] fuzz targets (clang)"
    test/fuzz/build.sh build/ci/fuzz
  fi
  echo "=== [$preset] test"
  local args=(--preset "$preset" -j "$jobs" "$@")
  [[ -n $regex ]] && args+=(-R "$regex")
  local log rc
  log=$(mktemp)
  # Judged by ctest's exit status; the log only feeds the summary, which names what failed so
  # that the last lines of a CI log say which tests to look at.
  set +o errexit
  ctest "${args[@]}" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -o errexit
  if [[ $rc != 0 ]]; then
    status=1
  fi
  summary+=("[$preset] exit $rc: $(grep -E 'tests passed|tests failed' "$log" | tail -n1)")
  while IFS= read -r line; do
    summary+=("[$preset]   $line")
  done < <(sed -n '/^The following tests FAILED:/,/^[^[:space:]]/p' "$log" | grep -E '^[[:space:]]+[0-9]+ - ')
  rm -f "$log"
}

run_preset ci
if [[ $run_sanitizers != 0 ]]; then
  run_preset asan-ubsan -L sanitize
  run_preset tsan -L sanitize
fi

echo "=== summary"
printf '%s\n' "${summary[@]}"
exit $status
