#!/usr/bin/env bash
# Builds the libFuzzer targets with Debian's clang 14 (-fsanitize=fuzzer,address,undefined)
# against the same sources as the GCC build, into the folder given (default build/fuzz).
#   test/fuzz/build.sh [OUT_DIR]
set -euo pipefail
shopt -s inherit_errexit
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/build/fuzz}
cxx=${ROCE_FUZZ_CXX:-clang++-14}
mkdir -p "$out/obj"
# The version the GCC build passes (project(... VERSION x.y.z) in the top CMakeLists.txt).
version=${ROCE_VERSION:-$(sed -n '/^project(/,/)/s/^ *VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt" | head -n1)}
[[ -n $version ]] || { echo "build.sh: no project VERSION in CMakeLists.txt" >&2; exit 1; }

sanitizers=fuzzer-no-link,address,undefined
flags=(-std=c++20 -g -O1 -fno-omit-frame-pointer "-fsanitize=$sanitizers"
       -fno-sanitize-recover=undefined -DSPDLOG_FMT_EXTERNAL -DFMT_HEADER_ONLY
       "-DROCE_VERSION=\"$version\""
       -I"$root/plugin" -I"$root/include" -I"$root/vroce/src")

# Library sources per target (what each decoder needs, nothing more).
declare -A sources=(
  [handshake]="plugin/net/handshake.cpp"
  [listen_handle]="plugin/net/listen_handle.cpp plugin/net/socket_address.cpp plugin/util/errno_text.cpp"
  [config]="plugin/util/config.cpp plugin/util/config_registry.cpp plugin/util/cidr.cpp plugin/util/log.cpp plugin/util/log_filter.cpp"
  [packet]="vroce/src/wire/packet_parse.cpp vroce/src/wire/icrc.cpp vroce/src/wire/crc32.cpp vroce/src/wire/crc32_pclmul.cpp vroce/src/wire/headers.cpp vroce/src/wire/opcode.cpp vroce/src/wire/flow.cpp"
)

object_of() {
  echo "$out/obj/$(echo "$1" | tr '/' '_').o"
}

compile() {  # source -> object, rebuilt only when the source or a header beside it is newer
  local src=$1 obj
  obj=$(object_of "$src")
  if [[ ! -f $obj || -n $(find "$root/$(dirname "$src")" "$root/test/fuzz" -newer "$obj" -name '*.h' -o -newer "$obj" -name "$(basename "$src")" | head -n1) ]]; then
    local extra=()
    [[ $src == *crc32_pclmul.cpp ]] && extra=(-mpclmul -msse4.1)
    "$cxx" "${flags[@]}" "${extra[@]}" -c "$root/$src" -o "$obj.tmp"
    mv "$obj.tmp" "$obj"
  fi
}

# Every object, ROCE_JOBS (default: the core count) compilers at a time.
jobs=${ROCE_JOBS:-$(nproc)}
all=()
for target in "${!sources[@]}"; do
  read -r -a list <<<"${sources[$target]}"
  all+=("${list[@]}" "test/fuzz/${target}_fuzz.cpp")
done
running=0
for src in "${all[@]}"; do
  compile "$src" &
  running=$((running + 1))
  if ((running >= jobs)); then
    wait -n
    running=$((running - 1))
  fi
done
wait

for target in "${!sources[@]}"; do
  objs=()
  read -r -a list <<<"${sources[$target]}"
  for src in "${list[@]}" "test/fuzz/${target}_fuzz.cpp"; do
    objs+=("$(object_of "$src")")
  done
  "$cxx" -fsanitize=fuzzer,address,undefined "${objs[@]}" -o "$out/${target}_fuzz" -lpthread
  echo "built $out/${target}_fuzz"
done
