# shellcheck shell=bash
# Shared by the stub commands: every stub logs its arguments to $STUB_STATE/calls.log and keeps
# the state it reports under $STUB_STATE, so a script's changes are visible to its next query.
: "${STUB_STATE:?the stub commands need STUB_STATE}"
stub_name=$(basename "$0")
printf '%s %s\n' "$stub_name" "$*" >>"$STUB_STATE/calls.log"
stub_fail() {
  printf '%s: %s\n' "$stub_name" "$*" >&2
  exit 1
}
