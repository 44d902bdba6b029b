#!/usr/bin/env bash
# Installs exactly the Debian 12 packages that building and testing this project need.
# Idempotent and non-interactive; prints nothing when everything is already present.
set -euo pipefail

readonly PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config
  clang clang-format clang-tidy libclang-rt-14-dev
  # build-time headers and header-only libraries (nothing here is linked into the plugin)
  libibverbs-dev libspdlog-dev libfmt-dev nlohmann-json3-dev libexpected-dev zlib1g-dev catch2
  # tests: Debian's own verbs programs as ABI oracles, network namespaces (ethtool: the capture
  # test turns a veth's UDP segmentation offload off), captures, lint
  ibverbs-utils iproute2 ethtool nftables tshark shellcheck valgrind python3 procps util-linux
  # the package checks: cpack's dpkg-shlibdeps (dpkg-dev) and lintian on the .debs
  dpkg-dev lintian
  # the perftest fabric suite: unmodified third-party verbs programs over vroce
  perftest
  # the statistics in operators' tools: node_exporter's textfile collector serves the plugin's
  # .prom files and promtool (package prometheus) checks them (test/scripts/test_prometheus.py)
  prometheus-node-exporter prometheus
  # scripts/roce-plot draws its figures with matplotlib
  python3-matplotlib
)

case ${1:-} in
  -h | --help)
    sed -n '2,3s/^# //p' "$0"
    echo "Usage: scripts/install-deps.sh [-h|--help]; run as root when something is missing."
    exit 0
    ;;
  "") ;;
  *)
    printf 'install-deps: unknown argument %s (it takes none; see --help)\n' "$1" >&2
    exit 2
    ;;
esac

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run as root (or: sudo $0)" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer for it.
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
