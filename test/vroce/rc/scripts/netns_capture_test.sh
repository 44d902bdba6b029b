#!/usr/bin/env bash
# RC traffic between two network namespaces joined by a veth pair (MTU 1500, so path MTU 1024),
# captured with tshark on the veth, then checked packet by packet:
#   - nothing but RoCEv2 on UDP 4791 leaves vroce, and tshark decodes all of it as InfiniBand;
#   - the opcodes of every operation the scenario runs appear;
#   - DSCP/ECN equal the QP's traffic class (106: DSCP 26, ECT(0)) and the TTL its hop limit on
#     every packet, and VROCE_TC_OVERRIDE (184: DSCP 46) rewrites the class on the wire;
#   - every packet carries a valid ICRC (tools/pcap-icrc-check);
#   - vroce's UDP GSO bursts reach the wire as real segments (the veths' tx-udp-segmentation is
#     off, so the kernel splits them before the capture sees them): over IPv4 segment j carries
#     ID j (1..7 after the first), and the ICRC check proves the patched ICRCs exact;
#   - the same over IPv6 (traffic class in the IPv6 header);
#   - with the veths' GRO on, the segments coalesced again reach vroce as one buffer and verify.
# Namespaces are named vr-<pid>-a/b and removed on exit, whatever happens.
#
#   netns_capture_test.sh <vroce_rc_peer> <pcap-icrc-check>
set -euo pipefail
# shellcheck source=../../../support/hang_bound.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../support/hang_bound.sh"

usage() { echo "usage: $0 <vroce_rc_peer> <pcap-icrc-check>" >&2; exit 2; }
[[ $# -eq 2 && -x $1 && -x $2 ]] || usage
peer=$(realpath "$1")
checker=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
for tool in ip tshark python3 ethtool; do
  command -v "$tool" >/dev/null || { echo "$tool missing (scripts/install-deps.sh)" >&2; exit 1; }
done

tag=$$
ns_a=vr-$tag-a
ns_b=vr-$tag-b
if_a=vr${tag}a
if_b=vr${tag}b
net=$((tag % 250))
work=$(mktemp -d /tmp/vr-netns.XXXXXX)
capture_pid=""
capture_file=""

cleanup() {
  if [[ -n $capture_pid ]]; then
    kill -INT "$capture_pid" 2>/dev/null || true
    wait "$capture_pid" 2>/dev/null || true
  fi
  ip netns del "$ns_a" 2>/dev/null || true
  ip netns del "$ns_b" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

ip netns add "$ns_a"
ip netns add "$ns_b"
ip link add "$if_a" type veth peer name "$if_b"
ip link set "$if_a" netns "$ns_a"
ip link set "$if_b" netns "$ns_b"
ip -n "$ns_a" addr add "10.78.$net.1/24" dev "$if_a"
ip -n "$ns_b" addr add "10.78.$net.2/24" dev "$if_b"
ip -n "$ns_a" -6 addr add "fd00:78:$net::1/64" dev "$if_a" nodad
ip -n "$ns_b" -6 addr add "fd00:78:$net::2/64" dev "$if_b" nodad
for ns in "$ns_a" "$ns_b"; do ip -n "$ns" link set lo up; done
ip -n "$ns_a" link set "$if_a" up
ip -n "$ns_b" link set "$if_b" up
# Segment GSO sends in software before the veth, so the capture sees each datagram with the IPv4
# ID the kernel gave it (with the offload on, a burst crosses the veth, and is captured, as one).
ip netns exec "$ns_a" ethtool -K "$if_a" tx-udp-segmentation off
ip netns exec "$ns_b" ethtool -K "$if_b" tx-udp-segmentation off

start_capture() {  # $1: pcap file
  # A 64 MiB capture buffer holds a whole scenario (about 2 MB of frames), so a capture process
  # that a loaded machine does not schedule loses nothing to the kernel's default 2 MiB.
  capture_file=$1
  ip netns exec "$ns_a" tshark -i "$if_a" -B 64 -w "$1" >"$work/tshark.log" 2>&1 &
  capture_pid=$!
  for _ in $(seq "$roce_hang_polls"); do
    grep -q "Capturing on" "$work/tshark.log" && return 0
    sleep 0.1
  done
  fail "tshark did not start: $(cat "$work/tshark.log")"
}

stop_capture() {
  # Stopped once the capture has written a TCP SYN sent after the traffic (to a closed port:
  # refused at once): frames are read in the order they crossed the veth, so every RoCEv2 frame
  # before it is in the file. A fixed wait lost all but 21 of 1818 frames on a loaded machine.
  # The checks read UDP only; the SYN and its reset are other IP to the ICRC check.
  for _ in $(seq "$roce_hang_polls"); do
    ip netns exec "$ns_b" python3 -c 'import socket, sys
s = socket.socket()
s.settimeout(1)
s.connect_ex((sys.argv[1], 9))' "10.78.$net.1" || true
    if [[ -n $(tshark -r "$capture_file" -Y "tcp.flags.syn == 1 && tcp.dstport == 9" 2>/dev/null) ]]; then
      break
    fi
    sleep 0.1
  done
  kill -INT "$capture_pid"
  wait "$capture_pid" || true
  capture_pid=""
}

# $1 name, $2 requester address, $3 responder address, $4.. extra run_pair arguments
run_traffic() {
  local name=$1 addr_a=$2 addr_b=$3; shift 3
  python3 "$here/run_pair.py" "$peer" opcodes --req-netns "$ns_a" --resp-netns "$ns_b" \
    --req-env "VROCE_DEVICES=vrA=$addr_a" --resp-env "VROCE_DEVICES=vrB=$addr_b" \
    --timeout 120 "$@" -- --max-size $((256 << 10)) --mtu 3 --tclass 106 \
    >"$work/$name.out" 2>&1 || { cat "$work/$name.out" >&2; fail "$name: traffic failed"; }
  grep -q "requester: size_ok=262144" "$work/$name.out" || fail "$name: transfers incomplete"
}

# $1 pcap, $2 name, $3 ip|ipv6, $4 expected DSCP, $5 expected ECN
check_capture() {
  local pcap=$1 name=$2 family=$3 dscp=$4 ecn=$5
  local dsfield=ip.dsfield ttl=ip.ttl
  if [[ $family == ipv6 ]]; then dsfield=ipv6.tclass; ttl=ipv6.hlim; fi
  # One tshark pass; the checks run over its fields.
  tshark -r "$pcap" -Y udp -T fields -E "separator=;" -e frame.protocols -e udp.srcport \
    -e udp.dstport -e infiniband.bth.opcode -e "$dsfield.dscp" -e "$dsfield.ecn" -e "$ttl" \
    -e ip.id -e infiniband.bth.psn \
    >"$work/$name.fields" 2>/dev/null || fail "$name: tshark could not read the capture"
  python3 - "$work/$name.fields" "$dscp" "$ecn" "$family" <<'PY' || fail "$name: capture check"
import sys
path, dscp, ecn, family = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
rows = [(line.rstrip("\n").split(";") + [""] * 9)[:9] for line in open(path) if line.strip()]
roce = [r for r in rows if r[1] == "4791" and r[2] == "4791"]
stray = [r for r in rows if r not in roce]
assert not stray, f"{len(stray)} UDP packets not between two ports 4791, e.g. {stray[0]}"
undecoded = [r for r in roce if ":infiniband" not in r[0]]
assert not undecoded, f"{len(undecoded)} packets on 4791 that tshark does not decode as RoCEv2"
assert len(roce) > 1000, f"only {len(roce)} RoCEv2 packets captured"
# SEND first/middle/last-imm/only-imm, WRITE first/middle/last/last-imm/only/only-imm, READ
# request, READ responses first/middle/last/only, ACK.
seen = {int(r[3]) for r in roce}
missing = {0, 1, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17} - seen
assert not missing, f"opcodes never on the wire: {sorted(missing)} (seen {sorted(seen)})"
wrong = [r for r in roce if (r[4], r[5], r[6]) != (dscp, ecn, "64")]
assert not wrong, f"{len(wrong)} packets without DSCP {dscp}, ECN {ecn}, hop limit 64: {wrong[0][4:]}"
print(f"{len(roce)} RoCEv2 packets, opcodes {sorted(seen)}, DSCP {dscp} ECN {ecn} hop limit 64 on all")
if family == "ip":
    # A datagram sent alone has ID 0; segment j of a GSO burst (at most 8) ID j.
    ids = [(int(r[7], 0), int(r[8], 0)) for r in roce]
    stray_ids = [(i, p) for i, p in ids if i >= 8]
    assert not stray_ids, f"{len(stray_ids)} packets whose IPv4 ID is not 0..7, e.g. (ID, PSN) {stray_ids[0]}"
    in_bursts = sum(1 for i, _ in ids if i != 0)
    assert in_bursts > 100, f"only {in_bursts} packets with a non-zero IPv4 ID: no GSO bursts on the wire"
    unaligned = sum(1 for i, p in ids if i != 0 and i != p % 8)
    print(f"{in_bursts} packets left in GSO bursts (IPv4 ID 1..7), {unaligned} of them in bursts "
          "that did not start at a PSN that is a multiple of 8")
PY
  # A valid ICRC on every packet.
  "$checker" "$pcap" >"$work/$name.icrc" 2>&1 || { cat "$work/$name.icrc" >&2; fail "$name: invalid ICRCs"; }
  echo "ok: $name: ICRC valid on every packet"
}

start_capture "$work/v4.pcap"
run_traffic v4 "10.78.$net.1" "10.78.$net.2"
stop_capture
check_capture "$work/v4.pcap" ipv4 ip 26 2

start_capture "$work/override.pcap"
run_traffic override "10.78.$net.1" "10.78.$net.2" \
  --req-env VROCE_TC_OVERRIDE=184 --resp-env VROCE_TC_OVERRIDE=184
stop_capture
check_capture "$work/override.pcap" tc-override ip 46 0

start_capture "$work/v6.pcap"
run_traffic v6 "fd00:78:$net::1" "fd00:78:$net::2"
stop_capture
check_capture "$work/v6.pcap" ipv6 ipv6 26 2

# The veths' GRO on, for UDP too (no capture: it would see the merged buffers): the datagrams the
# kernel segmented before the veth are coalesced again on the receiving side and reach vroce's
# UDP_GRO socket as one buffer, as from a NIC with GRO. Every datagram's ICRC still checks out.
ip netns exec "$ns_a" ethtool -K "$if_a" gro on rx-udp-gro-forwarding on
ip netns exec "$ns_b" ethtool -K "$if_b" gro on rx-udp-gro-forwarding on
run_traffic gro "10.78.$net.1" "10.78.$net.2" \
  --req-env "VROCE_STATS_FILE=$work/gro-req.json" --resp-env "VROCE_STATS_FILE=$work/gro-resp.json"
python3 - "$work/gro-req.json" "$work/gro-resp.json" <<'PY' || fail "gro: counters"
import json, sys
for side, path in zip(("requester", "responder"), sys.argv[1:]):
    s = json.load(open(path))
    bad = s["drops"]["bad_icrc"]
    assert bad == 0, f"{side}: {bad} packets with a bad ICRC"
    assert s["gso_sends"] > 0, f"{side}: no GSO sends"
    assert s["gro_buffers"] > 0, f"{side}: nothing arrived coalesced by the veth's GRO"
    print(f"{side}: {s['gso_sends']} GSO sends; received {s['gro_segments']} datagrams in "
          f"{s['gro_buffers']} coalesced buffers, no bad ICRC")
PY
echo "ok: gro: bursts segmented on the way and coalesced again verify"
