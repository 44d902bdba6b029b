#!/usr/bin/env bash
# The release preset (the README's install build) configures without the test tools: with
# find_package(Catch2) disabled, so reaching it fails the configure, and with no cache entry for
# Catch2, shellcheck or Python afterwards, so none of them was even looked for.
#   release_preset_check.sh SOURCE_DIR CMAKE C_COMPILER CXX_COMPILER
set -euo pipefail
src=${1:?usage: release_preset_check.sh SOURCE_DIR CMAKE C_COMPILER CXX_COMPILER}
cmake=${2:?} cc=${3:?} cxx=${4:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$src"
if ! "$cmake" --preset release -B "$work/build" -G Ninja -DCMAKE_C_COMPILER="$cc" \
     -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_DISABLE_FIND_PACKAGE_Catch2=ON >"$work/log" 2>&1; then
  cat "$work/log"
  echo "FAIL: preset release does not configure without Catch2" >&2
  exit 1
fi
cache=$work/build/CMakeCache.txt
if ! grep -q '^ROCE_BUILD_TESTS:BOOL=OFF$' "$cache"; then
  echo "FAIL: preset release builds the tests ($(grep '^ROCE_BUILD_TESTS' "$cache"))" >&2
  exit 1
fi
if found=$(grep -E '^(Catch2_DIR|ROCE_SHELLCHECK|Python3_EXECUTABLE)[:=]' "$cache"); then
  echo "FAIL: the release configure looked for test tools:" >&2
  echo "$found" >&2
  exit 1
fi
echo "OK: preset release configures with the tests off and Catch2 disabled; no shellcheck, Python or Catch2 looked up"
