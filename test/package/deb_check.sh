#!/usr/bin/env bash
# Packages this build tree with cpack into a temporary folder and checks the two .debs:
#   - nccl-net-roce: the plugin and vroce under /usr/lib/<triplet>, the tools in /usr/bin, no
#     libnccl-net.so; Depends names what the binaries link (libc6, libgcc-s1, libstdc++6) as
#     dpkg-shlibdeps computed it, and python3 for the Python scripts; libibverbs1 recommended
#     (the plugin dlopens it; gdr-check, when built, links it and so makes it a Depends);
#   - nccl-net-roce-default: only the libnccl-net.so link to libnccl-net-roce.so (and its doc
#     folder), depending on the same version of nccl-net-roce;
#   - lintian reports nothing at warning level or above for either.
#   deb_check.sh CPACK_CONFIG VERSION TRIPLET
set -euo pipefail
config=${1:?usage: deb_check.sh CPACK_CONFIG VERSION TRIPLET}
version=${2:?} triplet=${3:?}
for tool in cpack dpkg-deb dpkg-shlibdeps lintian; do
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
status=0
fail() {
  echo "FAIL: $*" >&2
  status=1
}
for deb in "$main" "$link"; do
  [[ -f $deb ]] || { fail "$(basename "$deb") was not built ($(ls "$work"))"; exit 1; }
done

libdir=./usr/lib/$triplet
main_files=$(dpkg-deb -c "$main" | awk '{print $6}')
for want in "$libdir/libnccl-net-roce.so" "$libdir/nccl-net-roce/vroce/libibverbs.so.1" \
            ./usr/bin/roce-bench ./usr/bin/pcap-icrc-check ./usr/share/doc/nccl-net-roce/copyright \
            ./usr/share/doc/nccl-net-roce/changelog.gz; do
  grep -qxF "$want" <<<"$main_files" || fail "nccl-net-roce lacks $want"
done
if grep -E 'libnccl-net\.so$' <<<"$main_files"; then
  fail "nccl-net-roce ships libnccl-net.so: that name belongs to nccl-net-roce-default only"
fi
if grep -E '^\./usr/lib/[^/]*\.so' <<<"$main_files"; then
  fail "nccl-net-roce has libraries outside the multiarch path $libdir (a build folder configured" \
    "before the multiarch default keeps CMAKE_INSTALL_LIBDIR=lib in its cache: reconfigure it" \
    "with -DCMAKE_INSTALL_LIBDIR=lib/$triplet, or use a fresh one)"
fi

depends=$(dpkg-deb -f "$main" Depends)
for want in libc6 libgcc-s1 libstdc++6 python3; do
  [[ ", $depends," == *", $want "* || ", $depends," == *", $want,"* ]] ||
    fail "nccl-net-roce's Depends ($depends) lacks $want"
done
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

# lintian as the archive would run it, every tag at warning level or above failing.
if ! lintian --fail-on error,warning --no-tag-display-limit "$main" "$link" >"$work/lintian.log" 2>&1; then
  cat "$work/lintian.log"
  fail "lintian"
fi
if [[ $status == 0 ]]; then
  echo "OK: $(basename "$main") ($(wc -l <<<"$main_files") entries; Depends: $depends)"
  echo "OK: $(basename "$link") ($(tr -s '\n ' ' ' <<<"$link_entries"))"
  echo "OK: lintian reports nothing at warning level or above"
fi
exit $status
