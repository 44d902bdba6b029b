#!/usr/bin/env bash
# The plugin across two network namespaces joined by a veth pair, as two nodes would run it:
# each namespace runs one fabric_peer (one vroce device on its veth address), the receiver's
# handle goes to the sender, and both verify their traffic. With --capture, tshark records the
# veth and every RoCE packet must carry the configured class (NCCL_ROCE_TC=106: DSCP 26 +
# ECT(0)). With --fifo-capture, NCCL_IB_FIFO_TC=186 (DSCP 46 + ECT(0)) is set too, and as in
# NCCL's IB transport the receiver's QPs carry it: every packet the receiver sends (its
# clear-to-send RDMA WRITEs and the ACKs of the data) is on DSCP 46, every packet the sender
# sends (the data, and the ACKs of the clear-to-send writes) on DSCP 26. With --ar-capture the
# sender sets NCCL_IB_ADAPTIVE_ROUTING=1 and every receive takes one message (--max-recvs 1): as
# in NCCL's IB transport, a message above NCCL_IB_AR_THRESHOLD (8192) goes as plain RDMA WRITE
# packets followed by a zero-length WRITE Only with Immediate, and one at or below it ends in a
# WRITE with Immediate that carries data.
#
# Usage: netns_run.sh <fabric_peer> <libnccl-net-roce.so> <vroce libibverbs.so.1>
#        [--capture | --fifo-capture | --ar-capture]
# Namespaces are named pc-<pid>-a/b and removed on exit, whatever happens. Exits 77 (skipped)
# when network namespaces cannot be created here.
set -euo pipefail

peer=${1:?usage: netns_run.sh <fabric_peer> <plugin.so> <libibverbs.so.1> [--capture]}
plugin=${2:?plugin path}
verbs=${3:?vroce library path}
capture=0
fifo=0
ar=0
[[ ${4:-} == --capture ]] && capture=1
[[ ${4:-} == --fifo-capture ]] && capture=1 && fifo=1
[[ ${4:-} == --ar-capture ]] && capture=1 && ar=1

# shellcheck source-path=SCRIPTDIR source=netns_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/netns_lib.sh"
netns_setup pc a b
ns_a="pc-$id-a"
ns_b="pc-$id-b"
veth_a="pc${id}a"
veth_b="pc${id}b"
addr_a=10.84.0.1
addr_b=10.84.0.2
ip link add "$veth_a" netns "$ns_a" type veth peer name "$veth_b" netns "$ns_b"
ip -n "$ns_a" addr add "$addr_a/24" dev "$veth_a"
ip -n "$ns_b" addr add "$addr_b/24" dev "$veth_b"
ip -n "$ns_a" link set "$veth_a" up
ip -n "$ns_b" link set "$veth_b" up

common_env=(NCCL_IBVERBS_LIB="$verbs" ROCE_PLUGIN_PATH="$plugin" NCCL_DEBUG=INFO)
if ((capture)); then
  common_env+=(NCCL_ROCE_TC=106)
  ((fifo)) && common_env+=(NCCL_IB_FIFO_TC=186)
fi
shape=(--groups 80)
send_env=()
if ((ar)); then
  shape+=(--max-recvs 1)
  send_env+=(NCCL_IB_ADAPTIVE_ROUTING=1)
fi
if ((capture)); then
  # vroce sends runs of packets as UDP GSO bursts: segmented before the veth, each reaches the
  # capture as the packet a NIC would put on the wire, not as one large datagram.
  command -v ethtool >/dev/null || fail "ethtool missing (scripts/install-deps.sh)"
  ip netns exec "$ns_a" ethtool -K "$veth_a" tx-udp-segmentation off
  ip netns exec "$ns_b" ethtool -K "$veth_b" tx-udp-segmentation off
  ip netns exec "$ns_a" tshark -i "$veth_a" -f "udp port 4791" -w "$tmp/roce.pcap" \
    >"$tmp/tshark.out" 2>&1 &
  pids+=($!)
  for _ in $(seq "$roce_hang_polls"); do
    grep -q "Capturing on" "$tmp/tshark.out" 2>/dev/null && break
    sleep 0.1
  done
  grep -q "Capturing on" "$tmp/tshark.out" || fail "tshark did not start capturing"
fi

mkfifo "$tmp/recv.in"
ip netns exec "$ns_a" env "${common_env[@]}" VROCE_DEVICES="pcb=$addr_a" \
  "$peer" recv --device pcb --api v11 --seed 21 "${shape[@]}" --wait-before-close \
  <"$tmp/recv.in" >"$tmp/recv.out" 2>&1 &
pids+=($!)
recv_pid=$!
exec 3>"$tmp/recv.in"

handle=$(wait_for_handle "$recv_pid")

ip netns exec "$ns_b" env "${common_env[@]}" "${send_env[@]}" VROCE_DEVICES="pca=$addr_b" \
  "$peer" send --device pca --api v11 --seed 21 "${shape[@]}" --handle "$handle" \
  >"$tmp/send.out" 2>&1 &
send_pid=$!
pids+=("$send_pid")
verify_sender "$send_pid"
close_receiver "$recv_pid"
echo "two namespaces: $(grep '^OK' "$tmp/send.out") / $(grep '^OK' "$tmp/recv.out")"

if ((capture)); then
  sleep 0.5
  kill -INT "${pids[0]}" 2>/dev/null || true
  wait "${pids[0]}" 2>/dev/null || true
  fields=$(tshark -r "$tmp/roce.pcap" -Y "udp.dstport == 4791" -T fields \
    -e ip.dsfield.dscp -e ip.dsfield.ecn -e infiniband.bth.opcode -e ip.src \
    -e infiniband.bth.destqp -e infiniband.reth.dmalen 2>/dev/null)
  total=$(grep -c . <<<"$fields" || true)
  ((total > 100)) || fail "only $total RoCE packets captured"
  decoded=$(awk -F'\t' '$3 != ""' <<<"$fields" | grep -c . || true)
  ((decoded == total)) || fail "$((total - decoded)) of $total packets did not decode as RoCE"
  if ((ar)); then
    # RC opcodes: 6 WRITE First, 8 WRITE Last, 9 WRITE Last with Immediate, 10 WRITE Only,
    # 11 WRITE Only with Immediate. Per destination QP, the message a packet belongs to is the
    # length in the RETH of its First or Only packet.
    verdict=$(awk -F'\t' -v b="$addr_b" -v t=8192 '
      $4 != b { next }
      $3 == 6 || $3 == 10 { len[$5] = $6 + 0; if ($6 + 0 > t) big++ }
      $3 == 9 && len[$5] > t { bad++ }
      $3 == 11 && $6 + 0 == 0 { zero_imm++ }
      ($3 == 11 && $6 + 0 > 0) || ($3 == 9 && len[$5] <= t) { small_imm++ }
      END { printf "%d %d %d %d\n", big, zero_imm, small_imm, bad }' <<<"$fields")
    read -r big zero_imm small_imm bad <<<"$verdict"
    ((bad == 0)) || fail "$bad messages above 8192 bytes ended in a WRITE with Immediate carrying data"
    ((big > 0)) || fail "no message above the 8192-byte threshold was captured"
    ((zero_imm >= big)) ||
      fail "$big messages above the threshold but only $zero_imm zero-length WRITE Only with Immediate"
    ((small_imm > 0)) || fail "no message at or below the threshold ended in a WRITE with Immediate"
    echo "capture: $big messages above 8192 bytes as RDMA WRITE + $zero_imm zero-length WRITE" \
      "with Immediate; $small_imm smaller ones in one WRITE with Immediate each"
  elif ((fifo)); then
    # RC opcodes: 10 RDMA WRITE Only, 11 RDMA WRITE Only with Immediate, 9 RDMA WRITE Last with
    # Immediate, 17 Acknowledge.
    from_recv=$(awk -F'\t' -v a="$addr_a" '$4 == a' <<<"$fields")
    from_send=$(awk -F'\t' -v b="$addr_b" '$4 == b' <<<"$fields")
    wrong=$(awk -F'\t' '$1 != 46 || $2 != 2' <<<"$from_recv" | head -n5)
    [[ -z $wrong ]] || fail "receiver packets off the FIFO class (DSCP 46 / ECT(0)): $wrong"
    wrong=$(awk -F'\t' '$1 != 26 || $2 != 2' <<<"$from_send" | head -n5)
    [[ -z $wrong ]] || fail "sender packets off the data class (DSCP 26 / ECT(0)): $wrong"
    count() { awk -F'\t' -v op="$2" '$3 == op' <<<"$1" | grep -c . || true; }
    cts=$(count "$from_recv" 10)
    data_acks=$(count "$from_recv" 17)
    data=$(($(count "$from_send" 11) + $(count "$from_send" 9)))
    cts_acks=$(count "$from_send" 17)
    ((cts > 0 && data_acks > 0)) ||
      fail "receiver sent $cts clear-to-send writes and $data_acks ACKs (both must be > 0)"
    ((data > 0 && cts_acks > 0)) ||
      fail "sender sent $data data writes with immediate and $cts_acks ACKs (both must be > 0)"
    echo "capture: receiver's $cts clear-to-send writes and $data_acks ACKs on DSCP 46 (tc 186);" \
      "sender's $data data writes and $cts_acks ACKs on DSCP 26 (tc 106)"
  else
    wrong=$(awk -F'\t' '$1 != 26 || $2 != 2' <<<"$fields" | head -n5)
    [[ -z $wrong ]] || fail "packets without DSCP 26 / ECT(0): $wrong"
    echo "capture: all $total RoCE packets carry DSCP 26 + ECT(0) (tc 106)"
  fi
fi
