#!/usr/bin/env bash
# Packages this build tree with cpack into a temporary folder and checks the two .debs:
#   - nccl-net-roce: the plugin and vroce under /usr/lib/<triplet>, the tools and the operator
#     commands (roce-show-gids, roce-diagnose, roce-configure, roce-stats) in /usr/bin, each with
#     its manual page and answering --help from the unpacked package; none of the names that
#     collide with MLNX_OFED or rdma-core (show_gids), no source-only script (demo.sh, test.sh,
#     install-deps.sh), no libnccl-net.so; the examples and nccl-tests configurations under
#     /usr/share/doc/nccl-net-roce/examples; Depends names what the binaries link (libc6,
#     libgcc-s1, libstdc++6) as dpkg-shlibdeps computed it, and python3 for roce-stats, but never
#     libibverbs1, whatever the build host has installed; libibverbs1 recommended (the plugin
#     dlopens it);
#   - nccl-net-roce-default: only the libnccl-net.so link to libnccl-net-roce.so (and its doc
#     folder), depending on the same version of nccl-net-roce;
#   - nccl-net-roce-gdr-check, exactly when the tree built gdr-check (with CUDA): gdr-check and
#     its manual page, Depends with libibverbs1, which it links;
#   - every package's /usr/share/doc/<package>/copyright is Debian's machine-readable format 1.0
#     and says Apache-2.0;
#   - every ELF file is hardened: BIND_NOW, a GNU_RELRO segment, stack protector
#     (__stack_chk_fail), glibc's checked functions (__*_chk) when the tree builds with
#     _FORTIFY_SOURCE, the IBT and SHSTK properties when it builds with -fcf-protection;
#   - no file of any package holds the source or build folder's absolute path, and the plugin's
#     log lines name their source files relative to the source root (plugin/...);
#   - lintian reports nothing at warning level or above, and no hardening or build-path tag at
#     any level.
#   deb_check.sh CPACK_CONFIG VERSION TRIPLET SOURCE_DIR BINARY_DIR GDR_CHECK FORTIFY CET
#     GDR_CHECK, FORTIFY, CET: ON or OFF, as the tree was configured (cmake/Hardening.cmake)
set -euo pipefail
config=${1:?usage: deb_check.sh CPACK_CONFIG VERSION TRIPLET SOURCE_DIR BINARY_DIR GDR_CHECK FORTIFY CET}
version=${2:?} triplet=${3:?} source_dir=${4:?} binary_dir=${5:?} with_gdr_check=${6:?}
fortify=${7:?} cet=${8:?}
for tool in cpack dpkg-deb dpkg-shlibdeps lintian readelf strings; do
  command -v "$tool" >/dev/null ||
    { echo "deb_check: $tool not found: install it with scripts/install-deps.sh" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! cpack --config "$config" -B "$work" >"$work/cpack.log" 2>&1; then
  cat "$work/cpack.log"
  echo "FAIL: cpack" >&2
  exit 1
fi
main=$work/nccl-net-roce_${version}_amd64.deb
link=$work/nccl-net-roce-default_${version}_amd64.deb
gdr=$work/nccl-net-roce-gdr-check_${version}_amd64.deb
status=0
fail() {
  echo "FAIL: $*" >&2
  status=1
}
debs=("$main" "$link")
if [[ $with_gdr_check == ON ]]; then
  debs+=("$gdr")
elif [[ -e $gdr ]]; then
  fail "$(basename "$gdr") was built although this tree has no gdr-check"
fi
for deb in "${debs[@]}"; do
  [[ -f $deb ]] || { fail "$(basename "$deb") was not built ($(ls "$work"))"; exit 1; }
done

libdir=./usr/lib/$triplet
main_files=$(dpkg-deb -c "$main" | awk '{print $6}')
commands=(roce-show-gids roce-diagnose roce-configure roce-stats)
wanted=("$libdir/libnccl-net-roce.so" "$libdir/nccl-net-roce/vroce/libibverbs.so.1"
  ./usr/bin/roce-bench ./usr/bin/pcap-icrc-check ./usr/share/doc/nccl-net-roce/copyright
  ./usr/share/doc/nccl-net-roce/changelog.gz ./usr/share/nccl-net-roce/scripts/lib/roce_common.sh
  ./usr/share/doc/nccl-net-roce/examples/run_tp_allreduce.sh
  ./usr/share/doc/nccl-net-roce/examples/nccl-tests-config/run_all_reduce.sh)
for command in "${commands[@]}"; do
  wanted+=("./usr/bin/$command" "./usr/share/man/man1/$command.1.gz")
done
for want in "${wanted[@]}"; do
  grep -qxF "$want" <<<"$main_files" || fail "nccl-net-roce lacks $want"
done
# Names another RDMA stack owns (MLNX_OFED's show_gids), and the scripts that only work in a
# source checkout, anywhere in the package.
if bad=$(grep -E '/(show_gids|demo\.sh|test\.sh|install-deps\.sh|gdr-check(\.1\.gz)?)$' <<<"$main_files"); then
  fail "nccl-net-roce ships files it must not (a name that collides with MLNX_OFED, a" \
    "source-only script, or gdr-check, which has its own package): $bad"
fi
while IFS= read -r bin; do
  grep -qxF "./usr/share/man/man1/${bin##*/}.1.gz" <<<"$main_files" ||
    fail "nccl-net-roce's ${bin#.} has no manual page"
done < <(grep -E '^\./usr/bin/.' <<<"$main_files")
if grep -E 'libnccl-net\.so$' <<<"$main_files"; then
  fail "nccl-net-roce ships libnccl-net.so: that name belongs to nccl-net-roce-default only"
fi
if grep -E '^\./usr/lib/[^/]*\.so' <<<"$main_files"; then
  fail "nccl-net-roce has libraries outside the multiarch path $libdir (a build folder configured" \
    "before the multiarch default keeps CMAKE_INSTALL_LIBDIR=lib in its cache: reconfigure it" \
    "with -DCMAKE_INSTALL_LIBDIR=lib/$triplet, or use a fresh one)"
fi

has_dep() { [[ ", $1," == *", $2 "* || ", $1," == *", $2,"* ]]; }
depends=$(dpkg-deb -f "$main" Depends)
for want in libc6 libgcc-s1 libstdc++6 python3; do
  has_dep "$depends" "$want" || fail "nccl-net-roce's Depends ($depends) lacks $want"
done
if has_dep "$depends" libibverbs1; then
  fail "nccl-net-roce's Depends ($depends) has libibverbs1: something in it links libibverbs" \
    "(the plugin loads it at run time; gdr-check belongs to nccl-net-roce-gdr-check)"
fi
recommends=$(dpkg-deb -f "$main" Recommends)
grep -q libibverbs1 <<<"$recommends" || fail "nccl-net-roce does not recommend libibverbs1 ($recommends)"

link_entries=$(dpkg-deb -c "$link" | awk '$1 !~ /^d/ {print $6, $7, $8}')
grep -qxF "$libdir/libnccl-net.so -> libnccl-net-roce.so" <<<"$link_entries" ||
  fail "nccl-net-roce-default lacks the link $libdir/libnccl-net.so -> libnccl-net-roce.so"
extra=$(grep -vE "^($libdir/libnccl-net.so |\./usr/share/doc/nccl-net-roce-default/)" <<<"$link_entries" || true)
[[ -z $extra ]] || fail "nccl-net-roce-default holds more than the link: $extra"
link_depends=$(dpkg-deb -f "$link" Depends)
[[ $link_depends == "nccl-net-roce (= $version)" ]] ||
  fail "nccl-net-roce-default's Depends is '$link_depends', not 'nccl-net-roce (= $version)'"

if [[ $with_gdr_check == ON ]]; then
  gdr_files=$(dpkg-deb -c "$gdr" | awk '$1 !~ /^d/ {print $6}')
  for want in ./usr/bin/gdr-check ./usr/share/man/man1/gdr-check.1.gz \
              ./usr/share/doc/nccl-net-roce-gdr-check/copyright; do
    grep -qxF "$want" <<<"$gdr_files" || fail "nccl-net-roce-gdr-check lacks $want"
  done
  gdr_depends=$(dpkg-deb -f "$gdr" Depends)
  has_dep "$gdr_depends" libibverbs1 ||
    fail "nccl-net-roce-gdr-check's Depends ($gdr_depends) lacks libibverbs1, which gdr-check links"
fi

# Every package unpacked into one tree, for the checks on the files themselves.
root=$work/root
for deb in "${debs[@]}"; do
  dpkg-deb -x "$deb" "$root"
done

# The copyright file: Debian's machine-readable format, Apache-2.0, for every package.
for deb in "${debs[@]}"; do
  package=$(dpkg-deb -f "$deb" Package)
  copyright=$root/usr/share/doc/$package/copyright
  if [[ ! -f $copyright ]]; then
    fail "$package has no /usr/share/doc/$package/copyright"
    continue
  fi
  [[ $(head -n1 "$copyright") == "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/" ]] ||
    fail "$package's copyright file is not in Debian's machine-readable format (first line: $(head -n1 "$copyright"))"
  grep -qxF "License: Apache-2.0" "$copyright" || fail "$package's copyright file does not say License: Apache-2.0"
  grep -qx "Files: \*" "$copyright" || fail "$package's copyright file has no 'Files: *' paragraph"
  if grep -qi "not be redistributed" "$copyright"; then
    fail "$package's copyright file still forbids redistribution"
  fi
done

# The operator commands run from the unpacked tree: the wrapper finds the script under any
# prefix, and the script its library.
for command in "${commands[@]}"; do
  if ! out=$("$root/usr/bin/$command" --help 2>&1); then
    fail "$command --help failed from the unpacked package: $out"
  elif [[ $out != *[Uu]sage:* ]]; then
    fail "$command --help printed no usage: $out"
  fi
done

# Hardening of every ELF file, the way lintian's hardening checks and hardening-check look at it.
# The linker keeps IBT/SHSTK only when every input has them, the C library's start files (crti.o)
# included: Debian 12's glibc is built without -fcf-protection, so its binaries cannot carry the
# properties whatever we compile (our own objects still have the endbr64 landing pads).
if [[ $cet == ON ]]; then
  crti=$(cc -print-file-name=crti.o 2>/dev/null || true)
  if [[ ! -f $crti ]] || ! readelf -nW "$crti" | grep -q 'IBT, SHSTK'; then
    echo "NOTE: the C library's start files (${crti:-crti.o}) lack IBT/SHSTK, so no binary can" \
      "carry them: not checked"
    cet=OFF
  fi
fi
elfs=()
while IFS= read -r -d '' file; do
  [[ $(head -c4 "$file" | od -An -c | tr -d ' ') == 177ELF ]] && elfs+=("$file")
done < <(find "$root" -type f -print0)
((${#elfs[@]} >= 5)) || fail "only ${#elfs[@]} ELF files in the packages: ${elfs[*]#"$root"}"
for elf in "${elfs[@]}"; do
  name=${elf#"$root"}
  dynamic=$(readelf -dW "$elf")
  grep -qE '\(FLAGS\).*BIND_NOW|\(FLAGS_1\).*NOW' <<<"$dynamic" ||
    fail "$name is not linked with -z now (no BIND_NOW): lazy binding keeps the GOT writable"
  readelf -lW "$elf" | grep -q GNU_RELRO || fail "$name has no GNU_RELRO segment (link with -z relro)"
  symbols=$(readelf --dyn-syms -W "$elf")
  grep -qE ' __stack_chk_fail(@|$)' <<<"$symbols" ||
    fail "$name calls no __stack_chk_fail: not built with -fstack-protector-strong"
  if [[ $fortify == ON ]] && ! grep -qE ' __[a-z_]+_chk(@|$)' <<<"$symbols"; then
    fail "$name uses none of glibc's checked functions (__*_chk): not built with -D_FORTIFY_SOURCE"
  fi
  if [[ $cet == ON ]] && ! readelf -nW "$elf" | grep -qE 'x86 feature: IBT, SHSTK'; then
    fail "$name lacks the IBT and SHSTK properties: an object linked into it was built without -fcf-protection"
  fi
done

# No absolute path of the build machine in any file, binaries included; the plugin's WARN and
# INFO lines name their source files relative to the source root.
for dir in "$source_dir" "$binary_dir"; do
  if hits=$(grep -rlF -- "$dir" "$root"); then
    fail "files of the packages hold the build path $dir (build with -ffile-prefix-map):" \
      "${hits//"$root"/}"
  fi
done
plugin_strings=$(strings -a "$root/${libdir#./}/libnccl-net-roce.so")
grep -qE '^plugin/core/[a-z_/]+\.cpp$' <<<"$plugin_strings" ||
  fail "the plugin names no source file relative to the source root (plugin/core/...cpp) for its log lines"
if bad=$(grep -E '^/.*/plugin/[a-z_/]+\.(cpp|h)$' <<<"$plugin_strings"); then
  fail "the plugin's log lines name absolute source paths: $bad"
fi

# lintian as the archive would run it, every tag at warning level or above failing, and the
# informational tags about hardening and build paths failing too.
if ! lintian --fail-on error,warning --display-info --no-tag-display-limit "${debs[@]}" \
     >"$work/lintian.log" 2>&1; then
  cat "$work/lintian.log"
  fail "lintian"
elif grep -E '(hardening-|file-references-package-build-path)' "$work/lintian.log"; then
  fail "lintian: hardening or build-path tags (above)"
fi
if [[ $status == 0 ]]; then
  echo "OK: $(basename "$main") ($(wc -l <<<"$main_files") entries; Depends: $depends)"
  echo "OK: $(basename "$link") ($(tr -s '\n ' ' ' <<<"$link_entries"))"
  [[ $with_gdr_check == ON ]] && echo "OK: $(basename "$gdr") (Depends: $gdr_depends)"
  echo "OK: ${#elfs[@]} ELF files with BIND_NOW, GNU_RELRO, stack protector" \
    "(_FORTIFY_SOURCE: $fortify, CET: $cet); no build path in any file; copyright files in DEP-5"
  echo "OK: lintian reports nothing at warning level or above, nor hardening or build-path tags"
fi
exit $status
