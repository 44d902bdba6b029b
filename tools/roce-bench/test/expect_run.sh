#!/usr/bin/env bash
# Runs one roce-bench command and checks its exit status and output: the fabric and argument
# tests of tools/roce-bench are one line each in CMakeLists.txt on top of this.
#
# usage: expect_run.sh --exit N [--stdout TEXT]... [--stderr TEXT]... [--json-status S]
#                      [--timeout SECONDS] -- COMMAND [ARGS...]
#   --exit N         the exit status the command must return
#   --stdout TEXT    a fixed string stdout must contain (repeatable)
#   --stderr TEXT    a fixed string stderr must contain (repeatable)
#   --json-status S  stdout is one JSON document whose "status" is S
#   --timeout S      kill the command after S seconds (default 120): a hang is a failure
#   --no-gpu         skip (exit 77) on a machine where libcuda.so.1 is installed
#   --needs-root     skip (exit 77) unless running as root (mount namespaces)
set -euo pipefail

usage() {
  sed -n '2,14p' "$0" >&2
  exit 2
}

expected_exit=""
stdout_wants=()
stderr_wants=()
json_status=""
limit=120
while [[ $# -gt 0 ]]; do
  case $1 in
    --exit) expected_exit=$2; shift 2 ;;
    --stdout) stdout_wants+=("$2"); shift 2 ;;
    --stderr) stderr_wants+=("$2"); shift 2 ;;
    --json-status) json_status=$2; shift 2 ;;
    --timeout) limit=$2; shift 2 ;;
    --no-gpu)
      if ldconfig -p | grep -q 'libcuda\.so\.1 '; then
        echo "skipped: this machine has a CUDA driver"
        exit 77
      fi
      shift ;;
    --needs-root)
      if [[ $(id -u) != 0 ]]; then
        echo "skipped: needs root"
        exit 77
      fi
      shift ;;
    --) shift; break ;;
    *) usage ;;
  esac
done
[[ -n $expected_exit && $# -gt 0 ]] || usage

work=$(mktemp -d /tmp/rb-test.XXXXXX)
trap 'rm -rf "$work"' EXIT

status=0
# --kill-after: a command that ignores SIGTERM still goes; roce-bench's ranks die with it.
timeout --kill-after=5 "$limit" "$@" >"$work/out" 2>"$work/err" || status=$?

failed=0
fail() {
  echo "FAIL: $*" >&2
  failed=1
}
if [[ $status == 124 || $status == 137 ]]; then
  fail "timed out after ${limit}s"
elif [[ $status != "$expected_exit" ]]; then
  fail "exit status $status, expected $expected_exit"
fi
for want in "${stdout_wants[@]+"${stdout_wants[@]}"}"; do
  grep -qF -- "$want" "$work/out" || fail "stdout lacks: $want"
done
for want in "${stderr_wants[@]+"${stderr_wants[@]}"}"; do
  grep -qF -- "$want" "$work/err" || fail "stderr lacks: $want"
done
if [[ -n $json_status ]]; then
  got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$work/out") ||
    fail "stdout is not one JSON document"
  [[ ${got:-} == "$json_status" ]] || fail "JSON status '${got:-}', expected '$json_status'"
fi

if [[ $failed != 0 ]]; then
  echo "--- command: $*" >&2
  echo "--- stdout:" >&2
  cat "$work/out" >&2
  echo "--- stderr:" >&2
  cat "$work/err" >&2
  exit 1
fi
echo "ok: $*"
