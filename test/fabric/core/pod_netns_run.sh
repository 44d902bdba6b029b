#!/usr/bin/env bash
# A receiver in a "pod": its process uses the host's RDMA device (the vroce device on the host
# namespace's RoCE address) from another network namespace where that address does not exist,
# as Kubernetes pods do when they share the host's RDMA device. Three namespaces:
#
#   pp-<pid>-host  ppH<pid> 10.91.0.1/24 ─── veth ─── ppS<pid> 10.91.0.2/24  pp-<pid>-peer
#   pp-<pid>-pod   ppP<pid> 10.92.0.1/24 ─── veth ─── ppQ<pid> 10.92.0.2/24  pp-<pid>-peer
#
# The receiver starts in the host namespace (vroce opens its device on 10.91.0.1), then moves to
# the pod namespace (fabric_peer --enter-netns) before listening. The GID's address is not an
# address there, so the listener must bind the pod's 10.92.0.1: with --socket-ifname through
# NCCL_SOCKET_IFNAME, with --default-route through the pod's default route. The sender, in the
# peer namespace, reaches the listener over the pod link and the RoCE traffic goes host to peer
# as the GIDs in the handshake say.
#
# Usage: pod_netns_run.sh <fabric_peer> <libnccl-net-roce.so> <vroce libibverbs.so.1>
#        --socket-ifname | --default-route
# Exits 77 (skipped) when network namespaces cannot be created here.
set -euo pipefail

peer=${1:?usage: pod_netns_run.sh <fabric_peer> <plugin.so> <libibverbs.so.1> <mode>}
plugin=${2:?plugin path}
verbs=${3:?vroce library path}
mode=${4:?--socket-ifname or --default-route}

# shellcheck source-path=SCRIPTDIR source=netns_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/netns_lib.sh"
netns_setup pp host pod peer
ns_host="pp-$id-host"
ns_pod="pp-$id-pod"
ns_peer="pp-$id-peer"
roce_host=10.91.0.1
roce_peer=10.91.0.2
pod_addr=10.92.0.1
pod_peer=10.92.0.2
ip link add "ppH$id" netns "$ns_host" type veth peer name "ppS$id" netns "$ns_peer"
ip link add "ppP$id" netns "$ns_pod" type veth peer name "ppQ$id" netns "$ns_peer"
ip -n "$ns_host" addr add "$roce_host/24" dev "ppH$id"
ip -n "$ns_peer" addr add "$roce_peer/24" dev "ppS$id"
ip -n "$ns_pod" addr add "$pod_addr/24" dev "ppP$id"
ip -n "$ns_peer" addr add "$pod_peer/24" dev "ppQ$id"
ip -n "$ns_host" link set "ppH$id" up
ip -n "$ns_peer" link set "ppS$id" up
ip -n "$ns_pod" link set "ppP$id" up
ip -n "$ns_peer" link set "ppQ$id" up

recv_env=(NCCL_IBVERBS_LIB="$verbs" ROCE_PLUGIN_PATH="$plugin" NCCL_DEBUG=INFO
  "NCCL_DEBUG_SUBSYS=INIT,NET" VROCE_DEVICES="pph=$roce_host")
case $mode in
  --socket-ifname)
    recv_env+=(NCCL_SOCKET_IFNAME="ppP")
    expect_why="NCCL_SOCKET_IFNAME=ppP selects ppP$id"
    ;;
  --default-route)
    ip -n "$ns_pod" route add default via "$pod_peer" dev "ppP$id"
    expect_why="NCCL_SOCKET_IFNAME is unset and the default route is on ppP$id"
    ;;
  *) fail "unknown mode $mode" ;;
esac

mkfifo "$tmp/recv.in"
ip netns exec "$ns_host" env "${recv_env[@]}" \
  "$peer" recv --device pph --api v9 --seed 31 --groups 60 --wait-before-close \
  --enter-netns "/var/run/netns/$ns_pod" <"$tmp/recv.in" >"$tmp/recv.out" 2>&1 &
pids+=($!)
recv_pid=$!
exec 3>"$tmp/recv.in"

handle=$(wait_for_handle "$recv_pid")
listening=$(grep -m1 "listening on pph at" "$tmp/recv.out" || true)
[[ $listening == *"at $pod_addr:"* ]] || fail "the listener is not on the pod's $pod_addr: $listening"
[[ $listening == *"GID address $roce_host is not an address of this network namespace"* ]] ||
  fail "the listener's line does not say the GID address is absent: $listening"
[[ $listening == *"$expect_why"* ]] || fail "the listener's line does not say '$expect_why'"

ip netns exec "$ns_peer" env NCCL_IBVERBS_LIB="$verbs" ROCE_PLUGIN_PATH="$plugin" \
  VROCE_DEVICES="pps=$roce_peer" \
  "$peer" send --device pps --api v9 --seed 31 --groups 60 --handle "$handle" \
  >"$tmp/send.out" 2>&1 &
send_pid=$!
pids+=("$send_pid")
verify_sender "$send_pid"
close_receiver "$recv_pid"
grep -q "accepted on pph from .*gid ::ffff:$roce_peer" "$tmp/recv.out" ||
  fail "the receiver's accept line does not name the sender's RoCE GID $roce_peer"
echo "pod listener: $listening"
echo "pod: $(grep '^OK' "$tmp/send.out") / $(grep '^OK' "$tmp/recv.out")"
