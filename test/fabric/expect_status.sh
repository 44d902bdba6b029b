#!/usr/bin/env bash
# expect_status.sh STATUS REGEX COMMAND [ARG...]: runs COMMAND and passes when it exits with
# STATUS and its output (stdout and stderr) matches the extended regular expression REGEX.
set -uo pipefail
want=$1 pattern=$2
shift 2
out=$("$@" 2>&1)
status=$?
if [[ $status -ne $want ]]; then
  printf '%s\n' "$out"
  echo "FAIL: exit status $status, expected $want"
  exit 1
fi
if ! grep -Eq -- "$pattern" <<<"$out"; then
  printf '%s\n' "$out"
  echo "FAIL: no line matching '$pattern'"
  exit 1
fi
echo "ok: exit status $status and '$pattern'"
