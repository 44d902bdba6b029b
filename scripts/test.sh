#!/usr/bin/env bash
# Installs what is missing, configures, builds and runs the whole test suite:
#   1. the GCC release build with warnings as errors (preset "ci"): every test, the package
#      checks (label package: the release preset without test tools, the .debs and lintian)
#      among them;
#   2. the clang ASan+UBSan build (preset "asan-ubsan", warnings as errors) with the libFuzzer
#      targets: the tests labelled "sanitize", the short fuzz run (fuzz.short, label fuzz) and
#      clang-tidy over the project's sources from its compile database (lint.clang_tidy, label
#      tidy; every finding fails it);
#   3. the GCC TSan build (preset "tsan"; clang 14's shared TSan runtime crashes at start): the
#      tests labelled "sanitize".
# The sanitizer trees build only what their labels' tests run: the suite target of each label
# (sanitize_suite, fuzz_suite, tidy_suite; cmake/TestSuites.cmake), not the tools, benchmarks and
# other tests. scripts/suite-built-check.py then fails the phase if a labelled test names a file
# of the build tree that is missing, and a labelled Catch2 executable that was not built fails as
# a test of its own, so a forgotten dependency never makes a run test less.
# Exits non-zero when any build or any ctest run fails (ctest's exit status); the summary at
# the end names every failed test, after the last lines each failed test printed
# (scripts/failed-test-tails.py), then each phase's wall time (configure and build, ctest) and the
# total. Environment:
#   ROCE_TEST_SANITIZERS=0   skip the clang builds (sanitizers, fuzzing, clang-tidy; quick local runs)
#   ROCE_TEST_TIDY=0         skip clang-tidy (label tidy; about 7 minutes of the suite on 2 cores)
#   ROCE_TEST_REGEX=...      run only the tests matching this ctest regex
#   ROCE_TEST_WHOLE_TREES=1  build the sanitizer trees whole, as the ci tree (every target)
#   ROCE_JOBS=N              build parallelism (default: nproc)
# Usage: scripts/test.sh [-h|--help]   (no arguments: the whole run above)
set -euo pipefail

# The header comment above is the help text; nothing is installed or built for it.
usage() {
  sed -n '2,/^set -euo pipefail$/{/^#/s/^# \{0,1\}//p}' "$0"
}
case ${1:-} in
  -h | --help)
    usage
    exit 0
    ;;
  "") ;;
  *)
    printf 'test.sh: unknown argument %s (it takes none; see --help)\n' "$1" >&2
    exit 2
    ;;
esac

cd "$(dirname "$0")/.."

jobs=${ROCE_JOBS:-$(nproc)}
run_sanitizers=${ROCE_TEST_SANITIZERS:-1}
regex=${ROCE_TEST_REGEX:-}
whole_trees=${ROCE_TEST_WHOLE_TREES:-0}

scripts/install-deps.sh

status=0
summary=()
failure_tails=()
timings=()

# run_preset PRESET [LABELS]: configures and builds PRESET, then runs its tests; with LABELS (a
# ctest label regex such as 'sanitize|fuzz') only the suite targets of those labels are built and
# only the tests with one of them run.
run_preset() {
  local preset=$1 labels=${2:-}
  echo "=== [$preset] configure and build"
  local started=$SECONDS
  cmake --preset "$preset" -G Ninja >/dev/null
  local build_args=(--preset "$preset" -j "$jobs")
  local label
  if [[ -n $labels && $whole_trees == 0 ]]; then
    for label in ${labels//|/ }; do
      build_args+=(--target "${label}_suite")
    done
  fi
  cmake --build "${build_args[@]}"
  local built=$SECONDS
  if [[ -n $labels ]] && ! scripts/suite-built-check.py "build/$preset" "$labels"; then
    status=1
    summary+=("[$preset] the suite targets of '$labels' left files out (suite-built-check.py above)")
  fi
  echo "=== [$preset] test"
  local args=(--preset "$preset" -j "$jobs")
  [[ -n $labels ]] && args+=(-L "$labels")
  [[ -n $regex ]] && args+=(-R "$regex")
  local log rc
  log=$(mktemp)
  # Judged by ctest's exit status; the log only feeds the summary, which names what failed so
  # that the last lines of a CI log say which tests to look at.
  # ctest rewrites this list only when a test fails; a stale one would name old failures.
  rm -f "build/$preset/Testing/Temporary/LastTestsFailed.log"
  set +o errexit
  ctest "${args[@]}" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -o errexit
  timings+=("$(printf '[%s] build %4d s, test %4d s' "$preset" $((built - started)) $((SECONDS - built)))")
  if [[ $rc != 0 ]]; then
    status=1
  fi
  summary+=("[$preset] exit $rc: $(grep -E 'tests passed|tests failed' "$log" | tail -n1 || true)")
  while IFS= read -r line; do
    summary+=("[$preset]   $line")
  done < <(sed -n '/^The following tests FAILED:/,/^[^[:space:]]/p' "$log" | grep -E '^[[:space:]]+[0-9]+ - ')
  rm -f "$log"
  # What each failed test printed last, for the end of the log: a CI report may show only the
  # tail, and the output ctest printed at the failure is then far above it.
  [[ $rc != 0 ]] && failure_tails+=("$(scripts/failed-test-tails.py "build/$preset" 2>&1)")
  return 0
}

run_preset ci
if [[ $run_sanitizers != 0 ]]; then
  asan_labels='sanitize|fuzz'
  [[ ${ROCE_TEST_TIDY:-1} != 0 ]] && asan_labels+='|tidy'
  run_preset asan-ubsan "$asan_labels"
  run_preset tsan sanitize
fi

if ((${#failure_tails[@]})); then
  echo "=== what the failed tests printed last"
  printf '%s\n' "${failure_tails[@]}"
fi
echo "=== summary"
printf '%s\n' "${summary[@]}"
echo "=== wall time per phase (configure and build, then ctest)"
printf '%s\n' "${timings[@]}"
printf 'total %d s (dependencies included)\n' "$SECONDS"
exit $status
