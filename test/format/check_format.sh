#!/usr/bin/env bash
# Checks that the project's C/C++ sources (tracked files under plugin/ vroce/ tools/ test/
# include/) match .clang-format. Exits 1 with the list of files to reformat, and the command
# that fixes them. Usage: check_format.sh <source dir> [clang-format binary]
set -euo pipefail

usage() {
  echo "usage: $0 <source dir> [clang-format binary]" >&2
  exit 2
}

[[ $# -ge 1 && $# -le 2 ]] || usage
src=$1
clang_format=${2:-clang-format}
cd "$src"

if ! command -v "$clang_format" >/dev/null 2>&1; then
  echo "format check: '$clang_format' not found; install it with scripts/install-deps.sh" >&2
  exit 1
fi

readonly dirs=(plugin vroce tools test include)
readonly pattern='\.(c|cc|cpp|cxx|h|hh|hpp)$'
files=()
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  while IFS= read -r -d '' file; do
    [[ $file =~ $pattern && -f $file ]] && files+=("$file")
  done < <(git ls-files -z -- "${dirs[@]}")
else
  # A source tarball without git metadata: check what is there.
  while IFS= read -r -d '' file; do
    [[ $file =~ $pattern ]] && files+=("${file#./}")
  done < <(find "${dirs[@]}" -type f -print0 2>/dev/null)
fi

if [[ ${#files[@]} -eq 0 ]]; then
  echo "format check: no C/C++ sources found under ${dirs[*]} in $src" >&2
  exit 1
fi

# One clang-format run for all files; its diagnostics name each file that would change.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
"$clang_format" --dry-run --Werror "${files[@]}" 2>"$log" >/dev/null || status=$?
if [[ $status -eq 0 ]]; then
  echo "format check: ${#files[@]} files match .clang-format"
  exit 0
fi
mapfile -t bad < <(grep -oE '^[^:]+:[0-9]+:[0-9]+: (error|warning)' "$log" | cut -d: -f1 | sort -u)
if [[ ${#bad[@]} -eq 0 ]]; then
  echo "format check: $clang_format failed (exit $status):" >&2
  cat "$log" >&2
  exit 1
fi
echo "format check: ${#bad[@]} of ${#files[@]} files need reformatting:" >&2
printf '  %s\n' "${bad[@]}" >&2
echo "fix with: $clang_format -i ${bad[*]}" >&2
exit 1
