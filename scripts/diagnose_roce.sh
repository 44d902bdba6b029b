#!/usr/bin/env bash
# diagnose_roce.sh: one report per node on everything the RoCE plugin depends on: RDMA ports,
# the GID the plugin would choose, the lossless class (trust, DSCP-to-priority, PFC, ECN), the
# traffic-class overrides, GPUDirect (peermem, dma-buf, ACS, GPU-to-NIC paths), congestion
# counters and the plugin's own init check. Each finding is OK, WARN or FAIL, with the fix.
set -euo pipefail

ROCE_PROG=diagnose_roce.sh
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/roce_common.sh
source "$script_dir/lib/roce_common.sh"

# Targets, overridable from the environment; configure_roce.sh uses the same defaults.
ROCE_DSCP=${ROCE_DSCP:-26}
ROCE_PRIO=${ROCE_PRIO:-3}
ROCE_MIN_MTU=${ROCE_MIN_MTU:-4096}
# Tools the report runs when found: the plugin's init check and the GPUDirect probe.
ROCE_BENCH=${ROCE_BENCH:-}
ROCE_PLUGIN=${ROCE_PLUGIN:-}
ROCE_GDR_CHECK=${ROCE_GDR_CHECK:-}
ROCE_KERNEL_RELEASE=${ROCE_KERNEL_RELEASE:-}

usage() {
  cat <<EOF
Usage: diagnose_roce.sh [--json] [--dry-run] [--no-init-check] [--no-gdr-check]

Checks this node for what the RoCE NCCL plugin needs and prints one finding per line:
OK, WARN or FAIL, each WARN and FAIL with its fix.
  RDMA devices and ports (state, link layer, speed, MTU), NCCL_IB_HCA
  GID table and the GID the plugin would choose; NCCL_IB_GID_INDEX naming a RoCE v1 entry
  DSCP trust, DSCP ${ROCE_DSCP} -> priority ${ROCE_PRIO}, PFC and ECN (DCQCN) on that priority
  the plugin's traffic class, the mlx5 traffic-class override, rdma_cm's default RoCE TOS
  multi-NIC ARP sysctls, /dev/infiniband, nvidia-peermem and dma-buf (GPUDirect RDMA)
  ACS on PCIe bridges, GPU-to-NIC paths (nvidia-smi topo -m: PIX/PXB/PHB versus SYS)
  congestion counters (hw_counters, ethtool -S pause counters)
  the plugin's own init check (roce-bench --init-check) and GPUDirect probe (gdr-check)

Options:
  --json            one JSON document on stdout instead of the text report
  --dry-run         print the commands the report would run instead of running them
  --no-init-check   skip roce-bench --init-check
  --no-gdr-check    skip gdr-check
  -h, --help        this text

Environment (defaults in brackets):
  ROCE_DSCP [26]  ROCE_PRIO [3]  ROCE_MIN_MTU [4096]   the lossless class to check for
  ROCE_SYSFS_ROOT [/sys]  ROCE_PROC_ROOT [/proc]  ROCE_DEV_ROOT [/dev]   where facts are read
  ROCE_BENCH      roce-bench to run (default: on PATH, or next to this script's build tree)
  ROCE_PLUGIN     the plugin .so for the init check (default: NCCL_NET_PLUGIN when a path)
  ROCE_GDR_CHECK  gdr-check to run (default: on PATH or in the build tree)
  ROCE_PLUGIN_SEARCH=0  do not look for the plugin in the build tree and library directories
  NCCL_IB_HCA, NCCL_IB_GID_INDEX, NCCL_IB_ADDR_FAMILY, NCCL_IB_ADDR_RANGE,
  NCCL_ROCE_TC, NCCL_ROCE_DSCP, NCCL_IB_TC, NCCL_ROCE_REQUIRE_GDR: read as the plugin reads them

Exit status: 0 no FAIL; 1 at least one FAIL; 2 bad usage or settings; 3 no RDMA device (none in
sysfs, and the plugin's init check did not find one either).
EOF
}

run_init_check=1
run_gdr_check=1
init_passed=0 # the plugin's init check ran and passed
sysfs_blind=0 # no device in sysfs, yet the init check passed
while (($#)); do
  case $1 in
    --json) ROCE_JSON=1 ;;
    --dry-run) ROCE_DRY_RUN=all ;;
    --no-init-check) run_init_check=0 ;;
    --no-gdr-check) run_gdr_check=0 ;;
    -h | --help)
      usage
      exit 0
      ;;
    *)
      printf 'diagnose_roce.sh: unknown argument %s (see --help)\n' "$1" >&2
      exit 2
      ;;
  esac
  shift
done
[[ $ROCE_JSON == 1 ]] && roce_dry_run_fd=2

for v in ROCE_DSCP ROCE_PRIO ROCE_MIN_MTU; do
  roce_is_uint "${!v}" || { printf 'diagnose_roce.sh: %s=%s is not a number\n' "$v" "${!v}" >&2; exit 2; }
done
((ROCE_DSCP <= 63)) || { printf 'diagnose_roce.sh: ROCE_DSCP=%s is outside 0..63\n' "$ROCE_DSCP" >&2; exit 2; }
((ROCE_PRIO <= 7)) || { printf 'diagnose_roce.sh: ROCE_PRIO=%s is outside 0..7\n' "$ROCE_PRIO" >&2; exit 2; }

hostname_s=$(hostname 2>/dev/null || echo unknown)
if [[ $ROCE_JSON == 0 ]]; then
  printf 'diagnose_roce.sh on %s: sysfs %s, lossless class DSCP %s -> priority %s\n' \
    "$hostname_s" "$ROCE_SYSFS_ROOT" "$ROCE_DSCP" "$ROCE_PRIO"
fi

# ---------------------------------------------------------------------------------------------
# Settings the plugin reads: bad values are reported the way the plugin would refuse them.

roce_section "plugin settings"
settings_ok=1
if ! family=$(roce_wanted_family); then
  roce_finding FAIL settings NCCL_IB_ADDR_FAMILY "'${NCCL_IB_ADDR_FAMILY}' is neither AF_INET nor AF_INET6" \
    "unset it (AF_INET) or set AF_INET6"
  family=4
  settings_ok=0
fi
range=${NCCL_IB_ADDR_RANGE:-}
if [[ -n $range ]] && ! roce_cidr_valid "$range"; then
  roce_finding FAIL settings NCCL_IB_ADDR_RANGE "'$range' is not a CIDR" "use e.g. 10.0.0.0/8 or fd00::/8, or unset it"
  range=""
  settings_ok=0
fi
gid_override=${NCCL_IB_GID_INDEX:-}
[[ $gid_override == -1 ]] && gid_override=""
if [[ -n $gid_override ]] && ! roce_is_uint "$gid_override"; then
  roce_finding FAIL settings NCCL_IB_GID_INDEX "'$gid_override' is not an index" "unset it (automatic choice) or give a number from roce-show-gids"
  gid_override=""
  settings_ok=0
fi
if [[ -n ${NCCL_IB_HCA:-} ]] && ! bad=$(roce_hca_valid "$NCCL_IB_HCA"); then
  roce_finding FAIL settings NCCL_IB_HCA "entry '$bad' of '$NCCL_IB_HCA' is malformed" "use name[:port] entries, e.g. mlx5_0:1,mlx5_1"
  settings_ok=0
fi
if tc_err=$(roce_plugin_tc 2>&1); then
  roce_plugin_tc
else
  roce_finding FAIL settings traffic-class "${tc_err}" "fix the variable; NCCL_ROCE_DSCP=${ROCE_DSCP} gives TC $((ROCE_DSCP << 2))"
  roce_plugin_tc=""
  settings_ok=0
fi
if [[ -n $roce_plugin_tc ]]; then
  roce_finding OK settings traffic-class "the plugin will use TC ${roce_plugin_tc} (DSCP $((roce_plugin_tc >> 2)), from ${roce_plugin_tc_source})"
elif [[ $settings_ok == 1 ]]; then
  roce_finding WARN settings traffic-class "no NCCL_ROCE_TC, NCCL_ROCE_DSCP or NCCL_IB_TC: the plugin uses the communicator's traffic class, else 0 (best effort, lossy)" \
    "export NCCL_ROCE_DSCP=${ROCE_DSCP} in the job environment"
fi
if [[ $settings_ok == 1 ]]; then
  roce_finding OK settings environment "NCCL_IB_HCA='${NCCL_IB_HCA:-}' NCCL_IB_GID_INDEX='${NCCL_IB_GID_INDEX:-auto}' family IPv${family}${range:+ range $range}"
fi
# The DSCP the checks below follow: the plugin's when set, else the target.
check_dscp=$ROCE_DSCP
[[ -n $roce_plugin_tc ]] && check_dscp=$((roce_plugin_tc >> 2))

if [[ $EUID -ne 0 ]]; then
  roce_finding WARN privileges "$(id -un 2>/dev/null || echo "uid $EUID")" "not root: ACS (lspci) and some QoS queries may be incomplete" \
    "run as root for a complete report"
fi

# ---------------------------------------------------------------------------------------------
# RDMA devices, ports and GIDs.

mapfile -t devices < <(roce_devices)
used_ports=()      # dev/port pairs the plugin would use
netdevs=()         # netdevs behind those ports, unique
netdev_of=()       # parallel to used_ports

add_netdev() {
  local n
  for n in "${netdevs[@]}"; do [[ $n == "$1" ]] && return; done
  netdevs+=("$1")
}

if ((${#devices[@]} == 0)); then
  # Reported after the plugin's init check: a verbs library that sysfs does not show (vroce, the
  # userspace RoCE NIC) still gives the plugin devices, and the report must not contradict it.
  no_rdma=1
else
  no_rdma=0
fi

gid_json=()
port_json=()
for dev in "${devices[@]}"; do
  roce_section "device $dev"
  mapfile -t ports < <(roce_ports "$dev")
  if ((${#ports[@]} == 0)); then
    roce_finding FAIL port "$dev" "no ports under $(roce_ib_root)/$dev/ports" "reload the NIC driver; check dmesg for mlx5 errors"
    continue
  fi
  for port in "${ports[@]}"; do
    subj="$dev/$port"
    pdir=$(roce_port_dir "$dev" "$port")
    if ! roce_hca_matches "$dev" "$port"; then
      roce_finding OK hca "$subj" "excluded by NCCL_IB_HCA='${NCCL_IB_HCA}'"
      continue
    fi
    state=$(roce_read "$pdir/state") || state="unknown"
    phys=$(roce_read "$pdir/phys_state") || phys="unknown"
    ll=$(roce_read "$pdir/link_layer") || ll="unknown"
    rate=$(roce_read "$pdir/rate") || rate="unknown"
    ndev=$(roce_port_netdev "$dev" "$port") || ndev=""
    mtu=""
    [[ -n $ndev ]] && { mtu=$(roce_read "$(roce_net_root)/$ndev/mtu") || mtu=""; }
    port_json+=("{\"device\":$(roce_json_str "$dev"),\"port\":$port,\"state\":$(roce_json_str "$state"),\"phys_state\":$(roce_json_str "$phys"),\"link_layer\":$(roce_json_str "$ll"),\"rate\":$(roce_json_str "$rate"),\"netdev\":$(roce_json_str "$ndev"),\"netdev_mtu\":$(roce_json_str "$mtu")}")

    if [[ $ll != Ethernet ]]; then
      roce_finding WARN port "$subj" "link layer ${ll}: not a RoCE port; the RoCE plugin only uses Ethernet ports" \
        "use NCCL's IB transport for InfiniBand, or exclude the port with NCCL_IB_HCA"
      continue
    fi
    if [[ $state == *ACTIVE* ]]; then
      roce_finding OK port "$subj" "${state#*: } (${phys#*: }), ${rate}, netdev ${ndev:-none}"
    else
      roce_finding FAIL port "$subj" "state '${state}', physical '${phys}': the plugin only uses ACTIVE ports" \
        "check the cable and switch port; ip link set dev ${ndev:-<netdev>} up; ethtool ${ndev:-<netdev>}"
      continue
    fi
    if [[ -z $ndev ]]; then
      roce_finding FAIL port "$subj" "no netdev bound to the port: RoCE GIDs come from the netdev's IP addresses" \
        "check that the mlx5_core Ethernet driver is loaded and the interface exists (ip link)"
      continue
    fi
    used_ports+=("$subj")
    netdev_of+=("$ndev")
    add_netdev "$ndev"
    if roce_is_uint "$mtu"; then
      pmtu=$(roce_mtu_from_netdev "$mtu")
      if ((pmtu >= ROCE_MIN_MTU)); then
        roce_finding OK mtu "$ndev" "MTU ${mtu}: RoCE path MTU ${pmtu}"
      else
        roce_finding WARN mtu "$ndev" "MTU ${mtu} gives RoCE path MTU ${pmtu} (below ${ROCE_MIN_MTU}): more packets and headers per message" \
          "ip link set dev $ndev mtu 9000 (and the same MTU on the switch ports), or configure_roce.sh $ndev"
      fi
    else
      roce_finding WARN mtu "$ndev" "cannot read $(roce_net_root)/$ndev/mtu" "check that $ndev exists (ip link show $ndev)"
    fi

    # The GID table and the plugin's choice.
    roce_load_gids "$dev" "$port"
    for k in "${!roce_gid_idx[@]}"; do
      roce_gid_entry_valid "$k" || continue
      gid_json+=("{\"device\":$(roce_json_str "$dev"),\"port\":$port,\"index\":${roce_gid_idx[k]},\"gid\":$(roce_json_str "${roce_gid_val[k]}"),\"address\":$(roce_json_str "$(roce_gid_addr "${roce_gid_val[k]}")"),\"type\":$(roce_json_str "${roce_gid_type[k]}"),\"netdev\":$(roce_json_str "${roce_gid_ndev[k]}")}")
      if [[ $ROCE_JSON == 0 ]]; then
        printf '       gid %-3s %-3s %-39s %s\n' "${roce_gid_idx[k]}" "${roce_gid_type[k]}" \
          "$(roce_gid_addr "${roce_gid_val[k]}")" "${roce_gid_ndev[k]}"
      fi
    done
    auto=""
    auto=$(roce_gid_auto_choice "$family" "$range") || auto=""
    if [[ -n $gid_override ]]; then
      if ! pos=$(roce_gid_pos "$gid_override"); then
        roce_finding FAIL gid "$subj" "NCCL_IB_GID_INDEX=${gid_override} is beyond the GID table (${#roce_gid_idx[@]} entries)" \
          "$( [[ -n $auto ]] && echo "use NCCL_IB_GID_INDEX=${roce_gid_idx[auto]}, or unset it (the plugin then chooses ${roce_gid_idx[auto]})" || echo "unset NCCL_IB_GID_INDEX; see roce-show-gids")"
      elif ! roce_gid_entry_valid "$pos"; then
        roce_finding FAIL gid "$subj" "NCCL_IB_GID_INDEX=${gid_override} names an unused (empty) GID entry" \
          "$( [[ -n $auto ]] && echo "use NCCL_IB_GID_INDEX=${roce_gid_idx[auto]}, or unset it" || echo "assign an IPv${family} address to $ndev; see roce-show-gids")"
      elif [[ ${roce_gid_type[pos]} != v2 ]]; then
        roce_finding FAIL gid "$subj" "NCCL_IB_GID_INDEX=${gid_override} is a RoCE ${roce_gid_type[pos]} entry ($(roce_gid_addr "${roce_gid_val[pos]}")): RoCE v1 is not routable and the plugin refuses it" \
          "$( [[ -n $auto ]] && echo "use NCCL_IB_GID_INDEX=${roce_gid_idx[auto]} (RoCE v2, $(roce_gid_addr "${roce_gid_val[auto]}")), or unset it" || echo "assign an IPv${family} address to $ndev; see roce-show-gids")"
      elif ! roce_gid_entry_family_ok "$pos" "$family"; then
        # The plugin uses an explicit index as given (as NCCL does) and warns: so does this report.
        roce_finding WARN gid "$subj" "NCCL_IB_GID_INDEX=${gid_override} ($(roce_gid_addr "${roce_gid_val[pos]}")) is not a routable IPv${family} GID (link-local or another family): the plugin uses it as given, as NCCL does, and warns; it reaches no peer beyond this L2 segment or family" \
          "$( [[ -n $auto ]] && echo "use NCCL_IB_GID_INDEX=${roce_gid_idx[auto]}, or unset it" || echo "set NCCL_IB_ADDR_FAMILY to match, or see roce-show-gids")"
      else
        roce_finding OK gid "$subj" "NCCL_IB_GID_INDEX=${gid_override}: RoCE v2 $(roce_gid_addr "${roce_gid_val[pos]}") on ${roce_gid_ndev[pos]:-$ndev}"
      fi
    elif [[ -n $auto ]]; then
      roce_finding OK gid "$subj" "the plugin would choose GID index ${roce_gid_idx[auto]}: RoCE v2 $(roce_gid_addr "${roce_gid_val[auto]}") on ${roce_gid_ndev[auto]:-$ndev}"
    else
      roce_finding FAIL gid "$subj" "no valid RoCE v2 IPv${family} GID${range:+ in $range}: the plugin cannot use this port" \
        "assign an IPv${family} address${range:+ in $range} to $ndev (ip addr add ... dev $ndev); check roce-show-gids $dev $port"
    fi
  done
done

if [[ $no_rdma == 0 ]] && ((${#used_ports[@]} == 0)); then
  roce_finding FAIL rdma "$hostname_s" "no ACTIVE RoCE port is left for the plugin${NCCL_IB_HCA:+ (NCCL_IB_HCA=$NCCL_IB_HCA)}" \
    "fix the ports above or widen NCCL_IB_HCA"
fi

uverbs_found=0
for f in "$ROCE_DEV_ROOT"/infiniband/uverbs*; do [[ -e $f ]] && uverbs_found=1; done
if [[ $no_rdma == 0 ]]; then
  if [[ $uverbs_found == 1 ]]; then
    roce_finding OK rdma "$ROCE_DEV_ROOT/infiniband" "verbs device files present"
  else
    roce_finding FAIL rdma "$ROCE_DEV_ROOT/infiniband" "no uverbs device files: libibverbs cannot open the NICs (typical in a container started without them)" \
      "modprobe ib_uverbs on the host; in a container: --device=/dev/infiniband (and --cap-add=IPC_LOCK, --ulimit memlock=-1)"
  fi
fi

# ---------------------------------------------------------------------------------------------
# The lossless class on every netdev the plugin uses.

for ndev in "${netdevs[@]}"; do
  roce_section "lossless class on $ndev"
  if roce_qos_read "$ndev"; then
    if [[ $roce_qos_trust == dscp ]]; then
      roce_finding OK trust "$ndev" "DSCP trust (${roce_qos_tool})"
    else
      roce_finding FAIL trust "$ndev" "trust state '${roce_qos_trust:-unknown}': the NIC ignores the DSCP of RoCE packets, so they do not reach the lossless priority" \
        "$([[ $roce_qos_tool == mlnx_qos ]] && echo "mlnx_qos -i $ndev --trust dscp" || echo "dcb apptrust set dev $ndev order dscp"), or configure_roce.sh $ndev"
    fi
    prio=${roce_qos_dscp2prio[check_dscp]:-}
    if [[ $prio == "$ROCE_PRIO" ]]; then
      roce_finding OK dscp2prio "$ndev" "DSCP ${check_dscp} -> priority ${prio}"
    else
      roce_finding FAIL dscp2prio "$ndev" "DSCP ${check_dscp} -> priority ${prio:-unmapped}, not the lossless priority ${ROCE_PRIO}" \
        "$([[ $roce_qos_tool == mlnx_qos ]] && echo "mlnx_qos -i $ndev --dscp2prio set,${check_dscp},${ROCE_PRIO}" || echo "dcb app replace dev $ndev dscp-prio ${check_dscp}:${ROCE_PRIO}")"
    fi
    if [[ ${roce_qos_pfc:ROCE_PRIO:1} == 1 ]]; then
      roce_finding OK pfc "$ndev" "PFC on priority ${ROCE_PRIO} (priorities 0-7: ${roce_qos_pfc})"
    else
      vec=${roce_qos_pfc:0:ROCE_PRIO}1${roce_qos_pfc:$((ROCE_PRIO + 1))}
      roce_finding FAIL pfc "$ndev" "PFC off on priority ${ROCE_PRIO} (priorities 0-7: ${roce_qos_pfc}): RoCE loses packets under congestion and Go-Back-N retransmits" \
        "$([[ $roce_qos_tool == mlnx_qos ]] && echo "mlnx_qos -i $ndev --pfc $(sed 's/./&,/g; s/,$//' <<<"$vec")" || echo "dcb pfc set dev $ndev prio-pfc ${ROCE_PRIO}:on"); the switch ports need PFC on priority ${ROCE_PRIO} too"
    fi
  else
    roce_finding WARN qos "$ndev" "cannot read trust/PFC state: ${roce_qos_error}" \
      "install mlnx-tools (mlnx_qos) or iproute2 >= 5.11 (dcb), run as root, then re-run"
  fi

  # ECN / DCQCN: without it PFC alone spreads congestion (PFC storms).
  ecn_dir="$(roce_net_root)/$ndev/ecn"
  if [[ -d $ecn_dir ]]; then
    np=$(roce_read "$ecn_dir/roce_np/enable/$ROCE_PRIO") || np="?"
    rp=$(roce_read "$ecn_dir/roce_rp/enable/$ROCE_PRIO") || rp="?"
    if [[ $np == 1 && $rp == 1 ]]; then
      roce_finding OK ecn "$ndev" "ECN/DCQCN on priority ${ROCE_PRIO} (notification point and reaction point)"
    else
      roce_finding FAIL ecn "$ndev" "ECN/DCQCN off on priority ${ROCE_PRIO} (roce_np=${np}, roce_rp=${rp}): with PFC alone a congested port pauses the fabric (PFC storm)" \
        "echo 1 > $ecn_dir/roce_np/enable/$ROCE_PRIO; echo 1 > $ecn_dir/roce_rp/enable/$ROCE_PRIO (or configure_roce.sh $ndev)"
    fi
  else
    roce_finding WARN ecn "$ndev" "no $ecn_dir: the driver does not expose ECN/DCQCN controls here" \
      "check the NIC firmware's congestion control (mlxconfig / mlxreg) and that mlx5_core is the driver"
  fi

  # Pause counters: storms and the lossless priority's pause activity.
  if roce_have ethtool; then
    if stats=$(roce_run read ethtool -S "$ndev" 2>/dev/null) && roce_queries_run; then
      get() { sed -nE "s/^[[:space:]]*$1:[[:space:]]*([0-9]+).*/\1/p" <<<"$stats" | head -n1; }
      storm_err=$(get tx_pause_storm_error_events)
      storm_warn=$(get tx_pause_storm_warning_events)
      rxp=$(get "rx_prio${ROCE_PRIO}_pause")
      txp=$(get "tx_prio${ROCE_PRIO}_pause")
      disc=$(get rx_discards_phy)
      detail="rx_prio${ROCE_PRIO}_pause=${rxp:-n/a} tx_prio${ROCE_PRIO}_pause=${txp:-n/a} rx_discards_phy=${disc:-n/a}"
      if [[ -n $storm_err && $storm_err != 0 ]]; then
        roce_finding FAIL pause "$ndev" "PFC storm protection fired ${storm_err} times (tx_pause_storm_error_events): the NIC stopped honouring pauses; ${detail}" \
          "find the stuck receiver (a host not draining its queue, or a switch loop); check ECN on every host (diagnose_roce.sh) and the switch's ECN thresholds below its PFC xoff"
      elif [[ -n $storm_warn && $storm_warn != 0 ]]; then
        roce_finding WARN pause "$ndev" "pause storm warnings ${storm_warn} (tx_pause_storm_warning_events); ${detail}" \
          "check ECN/DCQCN on all hosts and the switch's ECN marking thresholds"
      else
        roce_finding OK pause "$ndev" "no pause storms; ${detail}"
      fi
    else
      roce_finding WARN pause "$ndev" "ethtool -S $ndev gave no counters$(roce_queries_run || echo " (not run: --dry-run)")" "run as root; check the interface name"
    fi
  else
    roce_finding WARN pause "$ndev" "ethtool not installed: pause counters not read" "apt-get install ethtool"
  fi
done

# ---------------------------------------------------------------------------------------------
# Traffic-class overrides: mlx5's host-wide override and rdma_cm's default TOS.

want_tc=${roce_plugin_tc:-$((ROCE_DSCP << 2))}
for pp in "${used_ports[@]}"; do
  dev=${pp%/*}
  port=${pp#*/}
  roce_section "traffic class on $pp"
  tcf="$(roce_ib_root)/$dev/tc/$port/traffic_class"
  if [[ -f $tcf ]]; then
    raw=$(roce_read "$tcf") || raw=""
    ov=""
    if [[ $raw =~ (^|=)[[:space:]]*([0-9]+)[[:space:]]*$ ]]; then ov=${BASH_REMATCH[2]}; fi
    if [[ -z $ov ]]; then
      roce_finding OK tc-override "$pp" "no mlx5 traffic-class override: each QP's own TC goes on the wire"
    elif ((ov == want_tc)); then
      roce_finding OK tc-override "$pp" "mlx5 override forces TC ${ov} on every QP, the same as the plugin's"
    else
      roce_finding FAIL tc-override "$pp" "mlx5 override ($tcf: '${raw}') forces TC ${ov} (DSCP $((ov >> 2))) on every QP, not the plugin's TC ${want_tc}: the plugin's traffic class never reaches the wire" \
        "echo -1 > $tcf to clear it (or echo ${want_tc} > $tcf), or configure_roce.sh"
    fi
  else
    roce_finding OK tc-override "$pp" "no mlx5 traffic-class override file"
  fi
  tosf="$ROCE_SYSFS_ROOT/kernel/config/rdma_cm/$dev/ports/$port/default_roce_tos"
  if [[ -f $tosf ]]; then
    tos=$(roce_read "$tosf") || tos=""
    if roce_is_uint "$tos" && (((tos >> 2) == (want_tc >> 2))); then
      roce_finding OK roce-tos "$pp" "rdma_cm default RoCE TOS ${tos} (DSCP $((tos >> 2))), consistent with the plugin"
    else
      roce_finding WARN roce-tos "$pp" "rdma_cm default RoCE TOS '${tos}' (DSCP $((${tos:-0} >> 2))) differs from the plugin's TC ${want_tc}: rdma_cm users on this host (storage, MPI) land on another class" \
        "echo ${want_tc} > $tosf (or cma_roce_tos -d $dev -t ${want_tc}, or configure_roce.sh)"
    fi
  else
    roce_finding WARN roce-tos "$pp" "rdma_cm default RoCE TOS not set (0): rdma_cm users on this host send on the best-effort class" \
      "mkdir -p ${tosf%/ports/*} && echo ${want_tc} > $tosf (needs configfs and rdma_cm loaded), or configure_roce.sh"
  fi
done

# ---------------------------------------------------------------------------------------------
# Counters that show loss and congestion on the RoCE path.

for pp in "${used_ports[@]}"; do
  dev=${pp%/*}
  port=${pp#*/}
  hc="$(roce_port_dir "$dev" "$port")/hw_counters"
  [[ -d $hc ]] || { roce_finding WARN counters "$pp" "no hw_counters directory" "the driver does not expose RoCE counters (mlx5_ib does)"; continue; }
  vals=""
  loss=0
  for c in out_of_sequence packet_seq_err local_ack_timeout_err np_cnp_sent rp_cnp_handled np_ecn_marked_roce_packets; do
    v=$(roce_read "$hc/$c") || v="n/a"
    vals+="${vals:+ }$c=$v"
    if [[ $c == out_of_sequence || $c == packet_seq_err || $c == local_ack_timeout_err ]] && roce_is_uint "$v" && ((v > 0)); then
      loss=1
    fi
  done
  if [[ $loss == 1 ]]; then
    roce_finding WARN counters "$pp" "packets were lost on the RoCE path since boot: $vals" \
      "a lossless fabric shows none: check PFC on the switch ports for priority ${ROCE_PRIO}, cabling (ethtool -S: rx_crc_errors_phy), and that DSCP ${check_dscp} is trusted end to end"
  else
    roce_finding OK counters "$pp" "$vals"
  fi
done

# ---------------------------------------------------------------------------------------------
# Host settings for several NICs on one subnet: each NIC must answer ARP only for its own
# address, or RoCE packets for one NIC's GID are delivered to another NIC's MAC.

if ((${#netdevs[@]} > 1)); then
  roce_section "multi-NIC host settings"
  if roce_have sysctl; then
    for kv in net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2; do
      k=${kv%=*}
      want=${kv#*=}
      cur=""
      cur=$(roce_run read sysctl -n "$k" 2>/dev/null) || cur=""
      if [[ $cur == "$want" ]]; then
        roce_finding OK sysctl "$k" "$cur"
      else
        roce_finding WARN sysctl "$k" "is '${cur:-unknown}', want ${want} with ${#netdevs[@]} RoCE NICs: ARP answers can send one NIC's traffic to another" \
          "sysctl -w ${k}=${want} (or configure_roce.sh)"
      fi
    done
  else
    roce_finding WARN sysctl host "sysctl not installed: ARP settings not checked" "apt-get install procps"
  fi
fi

# ---------------------------------------------------------------------------------------------
# GPUDirect RDMA: peermem, dma-buf, ACS, topology.

roce_section "GPUDirect RDMA"
nvidia_loaded=0
[[ -d $ROCE_SYSFS_ROOT/module/nvidia ]] && nvidia_loaded=1
require_gdr=${NCCL_ROCE_REQUIRE_GDR:-0}
peermem=0
peermem_path=""
for f in "$ROCE_SYSFS_ROOT/kernel/mm/memory_peers/nv_mem/version" \
  "$ROCE_SYSFS_ROOT/kernel/mm/memory_peers/nv_mem_nc/version" \
  "$ROCE_SYSFS_ROOT/module/nvidia_peermem/version" "$ROCE_SYSFS_ROOT/module/nvidia_peermem"; do
  if [[ -e $f ]]; then
    peermem=1
    peermem_path=$f
    break
  fi
done
dmabuf=0
dmabuf_why=""
if [[ $nvidia_loaded == 1 ]]; then
  kver=${ROCE_KERNEL_RELEASE:-$(uname -r)}
  kmaj=${kver%%.*}
  kmin=${kver#*.}
  kmin=${kmin%%[!0-9]*}
  drv=$(roce_read "$ROCE_PROC_ROOT/driver/nvidia/version") || drv=""
  if ! roce_is_uint "$kmaj" || ! roce_is_uint "$kmin" || ((kmaj < 5 || (kmaj == 5 && kmin < 12))); then
    dmabuf_why="kernel ${kver} is older than 5.12 (no RDMA dma-buf import)"
  elif [[ $drv != *"Open Kernel Module"* ]]; then
    dmabuf_why="the NVIDIA driver is not the open kernel module flavour (${drv:-version unknown}), which dma-buf export needs"
  else
    dmabuf=1
  fi
  if [[ $peermem == 1 ]]; then
    roce_finding OK peermem host "nvidia-peermem loaded ($peermem_path): GPU memory registers by pointer"
  else
    sev=WARN
    [[ $dmabuf == 0 ]] && sev=FAIL
    roce_finding "$sev" peermem host "nvidia-peermem not loaded: ibv_reg_mr on GPU memory fails$([[ $dmabuf == 1 ]] && echo "; dma-buf still gives GPUDirect" || echo ", and without dma-buf GPUDirect is off: NCCL stages through host memory")" \
      "modprobe nvidia_peermem (and add it to /etc/modules-load.d), or configure_roce.sh"
  fi
  if [[ $dmabuf == 1 ]]; then
    roce_finding OK dmabuf host "kernel ${kver} and the open NVIDIA kernel module: dma-buf registration is possible"
  else
    roce_finding WARN dmabuf host "dma-buf registration unavailable: ${dmabuf_why}" \
      "use a kernel >= 5.12 and the open NVIDIA kernel modules (nvidia-open), or rely on nvidia-peermem"
  fi
  if [[ $require_gdr == 1 && $peermem == 0 && $dmabuf == 0 ]]; then
    roce_finding FAIL gdr host "NCCL_ROCE_REQUIRE_GDR=1 and neither GPUDirect mode is available: the plugin will refuse to initialise" \
      "load nvidia_peermem, or unset NCCL_ROCE_REQUIRE_GDR to accept host staging"
  fi
else
  roce_finding WARN gdr host "no NVIDIA driver loaded ($ROCE_SYSFS_ROOT/module/nvidia): GPUDirect checks skipped" \
    "on a GPU node, load the NVIDIA driver (nvidia-smi should list the GPUs)"
fi

# gdr-check measures what the heuristics above can only guess.
find_tool() {
  local name=$1 given=$2 c
  if [[ -n $given ]]; then
    printf '%s' "$given"
    return 0
  fi
  if c=$(command -v "$name" 2>/dev/null); then
    printf '%s' "$c"
    return 0
  fi
  for c in "$script_dir/../build/release/bin/$name" "$script_dir/../build/ci/bin/$name" \
    "$script_dir/../build/release/tools/$name/$name" "$script_dir/../build/ci/tools/$name/$name" \
    "$script_dir/../../../bin/$name"; do
    if [[ -x $c ]]; then
      printf '%s' "$c"
      return 0
    fi
  done
  return 1
}

if [[ $run_gdr_check == 1 ]] && gdr=$(find_tool gdr-check "$ROCE_GDR_CHECK"); then
  set +e
  gout=$(roce_run read "$gdr" --brief 2>&1)
  grc=$?
  set -e
  if ! roce_queries_run; then
    :
  elif [[ $grc == 3 ]]; then
    roce_finding WARN gdr-check host "gdr-check: no CUDA GPU usable here, GPUDirect not measured ($(tail -n1 <<<"$gout"))" \
      "run on a GPU node with the NVIDIA driver loaded"
  elif [[ $grc == 4 ]]; then
    roce_finding WARN gdr-check host "gdr-check: no RDMA device to test with ($(tail -n1 <<<"$gout"))" "see the RDMA findings above"
  else
    while IFS= read -r line; do
      [[ $line =~ ^mode=([a-z-]+)[[:space:]]+status=([a-z]+)(.*)$ ]] || continue
      mode=${BASH_REMATCH[1]}
      st=${BASH_REMATCH[2]}
      rest=${BASH_REMATCH[3]# }
      if [[ $st == ok ]]; then
        roce_finding OK gdr-check "$mode" "RDMA WRITE and READ through GPU memory verified; $rest"
      else
        sev=WARN
        [[ $require_gdr == 1 ]] && sev=FAIL
        roce_finding "$sev" gdr-check "$mode" "GPUDirect by $mode does not work: $rest" \
          "$([[ $mode == pointer ]] && echo "modprobe nvidia_peermem" || echo "kernel >= 5.12 with the open NVIDIA kernel modules")"
      fi
    done <<<"$gout"
    if ! grep -q '^mode=' <<<"$gout"; then
      roce_finding WARN gdr-check host "gdr-check exited ${grc} without results: $(tail -n1 <<<"$gout")" "run $gdr by hand to see why"
    fi
  fi
fi

# ACS on PCIe bridges redirects peer-to-peer DMA (GPU <-> NIC) through the root complex.
roce_section "PCIe"
if roce_have lspci; then
  if lsout=$(roce_run read lspci -D -vvv 2>/dev/null) && roce_queries_run; then
    acs_on=()
    denied=0
    bdf=""
    is_bridge=0
    while IFS= read -r line; do
      if [[ $line =~ ^([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])[[:space:]](.*)$ ]]; then
        bdf=${BASH_REMATCH[1]}
        is_bridge=0
        [[ ${BASH_REMATCH[2]} == *"PCI bridge"* ]] && is_bridge=1
      elif [[ $line == *"<access denied>"* ]]; then
        denied=1
      elif [[ $is_bridge == 1 && $line =~ ACSCtl: ]]; then
        # NCCL's troubleshooting guide reads SrcValid+ as "ACS enabled"; the redirects are
        # what actually sends peer-to-peer requests and completions up to the root complex.
        if [[ $line == *SrcValid+* || $line == *ReqRedir+* || $line == *CmpltRedir+* ]]; then
          acs_on+=("$bdf")
        fi
      fi
    done <<<"$lsout"
    if ((${#acs_on[@]} > 0)); then
      sev=WARN
      [[ $nvidia_loaded == 1 ]] && sev=FAIL
      fixes=""
      for b in "${acs_on[@]}"; do fixes+="${fixes:+; }setpci -s $b ECAP_ACS+0x6.w=0000"; done
      roce_finding "$sev" acs pcie "ACS redirect enabled on ${#acs_on[@]} PCIe bridge(s): ${acs_on[*]}: GPU<->NIC peer-to-peer traffic detours through the root complex (GPUDirect slow or downgraded)" \
        "disable ACS in the BIOS (durable), or at run time: ${fixes} (configure_roce.sh --acs-off); keep ACS where VMs need isolation"
    elif [[ $denied == 1 ]]; then
      roce_finding WARN acs pcie "lspci could not read extended capabilities (not root): ACS state unknown" "run diagnose_roce.sh as root"
    else
      roce_finding OK acs pcie "no PCIe bridge with ACS redirect enabled"
    fi
  else
    roce_finding WARN acs pcie "lspci -D -vvv failed or was not run" "run as root; apt-get install pciutils"
  fi
else
  roce_finding WARN acs pcie "lspci not installed: ACS not checked" "apt-get install pciutils"
fi

# GPU-to-NIC paths: NCCL uses GPUDirect RDMA up to NCCL_NET_GDR_LEVEL (default PXB).
if roce_have nvidia-smi; then
  if topo=$(roce_run read nvidia-smi topo -m 2>/dev/null) && roce_queries_run; then
    declare -A nic_name=()
    while IFS= read -r line; do
      if [[ $line =~ ^[[:space:]]*(NIC[0-9]+):[[:space:]]*([^[:space:]]+) ]]; then
        nic_name[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
      fi
    done <<<"$topo"
    header=""
    header=$(grep -m1 -E '^[[:space:]]*GPU0' <<<"$topo" || true)
    read -r -a cols <<<"$header"
    ngpu=0
    while IFS= read -r line; do
      [[ $line =~ ^GPU[0-9]+[[:space:]] ]] || continue
      read -r -a cells <<<"$line"
      gpu=${cells[0]}
      ngpu=$((ngpu + 1))
      best=""
      best_rank=99
      best_nic=""
      for ci in "${!cols[@]}"; do
        [[ ${cols[ci]} == NIC* ]] || continue
        cell=${cells[ci + 1]:-}
        # The cell for GPU-to-itself is "X"; shift by one because cells[0] is the row label.
        case $cell in
          PIX) r=1 ;; PXB) r=2 ;; PHB) r=3 ;; NODE) r=4 ;; SYS) r=5 ;; *) continue ;;
        esac
        nic=${nic_name[${cols[ci]}]:-${cols[ci]}}
        # Only NICs the plugin would use count.
        if ((${#used_ports[@]} > 0)); then
          usable=0
          for pp in "${used_ports[@]}"; do [[ ${pp%/*} == "$nic" ]] && usable=1; done
          [[ $usable == 1 ]] || continue
        fi
        if ((r < best_rank)); then
          best_rank=$r
          best=$cell
          best_nic=$nic
        fi
      done
      if [[ -z $best ]]; then
        roce_finding WARN topo "$gpu" "no RoCE NIC in nvidia-smi topo -m" "check that the NIC's RDMA device is listed in the NIC legend"
      elif ((best_rank <= 2)); then
        roce_finding OK topo "$gpu" "nearest NIC ${best_nic} via ${best}: GPUDirect RDMA used"
      elif ((best_rank <= 4)); then
        roce_finding WARN topo "$gpu" "nearest NIC ${best_nic} via ${best} (through the CPU's host bridge): NCCL's default NCCL_NET_GDR_LEVEL=PXB turns GPUDirect off for this path" \
          "set NCCL_NET_GDR_LEVEL=PHB if peer-to-peer through the host bridge performs well here; better, put the NIC under the GPU's PCIe switch"
      else
        roce_finding FAIL topo "$gpu" "nearest NIC ${best_nic} via SYS (across CPU sockets): no GPUDirect, traffic is staged through host memory" \
          "use a NIC on the GPU's socket (NCCL_IB_HCA), or move the NIC; see nvidia-smi topo -m"
      fi
    done <<<"$topo"
    ((ngpu > 0)) || roce_finding WARN topo host "nvidia-smi topo -m listed no GPU" "check nvidia-smi"
  else
    roce_finding WARN topo host "nvidia-smi topo -m failed or was not run" "check the NVIDIA driver (nvidia-smi)"
  fi
else
  roce_finding WARN topo host "nvidia-smi not found: GPU-to-NIC paths not checked" "on a GPU node, install the NVIDIA driver utilities"
fi

# ---------------------------------------------------------------------------------------------
# The plugin's own init check: loads the .so, runs init, prints the device/GID/TC/GPUDirect
# banner and fails on what the plugin itself refuses.

roce_section "plugin init check"
if [[ $run_init_check == 1 ]]; then
  plugin=$ROCE_PLUGIN
  if [[ -z $plugin && ${NCCL_NET_PLUGIN:-} == */* ]]; then plugin=$NCCL_NET_PLUGIN; fi
  if [[ -z $plugin && ${ROCE_PLUGIN_SEARCH:-1} != 0 ]]; then
    for c in "$script_dir/../build/release/lib/libnccl-net-roce.so" "$script_dir/../build/ci/lib/libnccl-net-roce.so" \
      "$script_dir/../../../lib/x86_64-linux-gnu/libnccl-net-roce.so" "$script_dir/../../../lib/libnccl-net-roce.so" \
      /usr/lib/x86_64-linux-gnu/libnccl-net-roce.so /usr/local/lib/libnccl-net-roce.so; do
      if [[ -f $c ]]; then
        plugin=$c
        break
      fi
    done
  fi
  if bench=$(find_tool roce-bench "$ROCE_BENCH") && [[ -n $plugin ]]; then
    set +e
    iout=$(roce_run read "$bench" --init-check --plugin "$plugin" 2>&1)
    irc=$?
    set -e
    if ! roce_queries_run; then
      :
    elif [[ $irc == 0 ]]; then
      init_passed=1
      roce_finding OK init "$plugin" "$(grep -v '^[[:space:]]*$' <<<"$iout" | tail -n1)"
      [[ $ROCE_JSON == 0 ]] && printf '       %s\n' "${iout//$'\n'/$'\n'       }"
    else
      # roce-bench prints each problem as "FAIL: <why>" and ends with "init-check: FAIL".
      why=""
      while IFS= read -r line; do
        [[ $line == "FAIL: "* ]] && why+="${why:+; }${line#FAIL: }"
      done <<<"$iout"
      [[ -n $why ]] || why=$(grep -v '^[[:space:]]*$' <<<"$iout" | tail -n1)
      roce_finding FAIL init "$plugin" "plugin init failed (exit ${irc}): ${why}" \
        "read the lines above; docs/troubleshooting.md lists each init error and its fix"
      [[ $ROCE_JSON == 0 ]] && printf '       %s\n' "${iout//$'\n'/$'\n'       }"
    fi
  else
    roce_finding WARN init plugin "init check skipped: $([[ -z $plugin ]] && echo "libnccl-net-roce.so not found (set ROCE_PLUGIN)" || echo "roce-bench not found (set ROCE_BENCH)")" \
      "build the project (cmake --preset release -G Ninja && cmake --build --preset release) or set ROCE_PLUGIN and ROCE_BENCH"
  fi
fi

# ---------------------------------------------------------------------------------------------
# No RDMA device in sysfs: a plain FAIL, unless the plugin's init check found devices anyway.

if ((no_rdma == 1)); then
  roce_section "RDMA devices"
  if ((init_passed == 1)); then
    roce_finding WARN rdma "$(roce_ib_root)" "no RDMA device in sysfs, but the plugin's init check passed: its verbs library has devices that sysfs does not list (vroce, the userspace RoCE NIC, or a container without /sys/class/infiniband), so the port, GID and QoS checks had nothing to read" \
      "with vroce, set VROCE_SYSFS_ROOT and ROCE_SYSFS_ROOT to one directory (vroce writes its tree there); in a container, pass /sys/class/infiniband in"
    no_rdma=0
    sysfs_blind=1
  else
    roce_finding FAIL rdma "$(roce_ib_root)" "no RDMA device: this node has no RDMA NIC, or its driver is not loaded, so the RoCE plugin has nothing to use" \
      "check 'lspci | grep -i -e mellanox -e connectx', load the driver (modprobe mlx5_ib); in a container pass /sys/class/infiniband and /dev/infiniband in"
  fi
fi

status=0
((roce_n_fail > 0)) && status=1
((no_rdma == 1)) && status=3
if [[ $ROCE_JSON == 1 ]]; then
  printf '{"tool":"diagnose_roce.sh","host":%s,"sysfs_root":%s,"target":{"dscp":%s,"priority":%s,"traffic_class":%s},"plugin_traffic_class":%s,"summary":{"ok":%s,"warn":%s,"fail":%s},"rdma_devices":%s,"ports":%s,"gids":%s,"findings":%s,"exit_status":%s}\n' \
    "$(roce_json_str "$hostname_s")" "$(roce_json_str "$ROCE_SYSFS_ROOT")" "$ROCE_DSCP" "$ROCE_PRIO" "$want_tc" \
    "${roce_plugin_tc:-null}" "$roce_n_ok" "$roce_n_warn" "$roce_n_fail" "${#devices[@]}" \
    "$(roce_json_array "${port_json[@]}")" "$(roce_json_array "${gid_json[@]}")" \
    "$(roce_json_array "${roce_findings_json[@]}")" "$status"
else
  printf '\ndiagnose_roce.sh: %s OK, %s WARN, %s FAIL\n' "$roce_n_ok" "$roce_n_warn" "$roce_n_fail"
  if ((no_rdma == 1)); then
    printf 'No RDMA device on this node: the RoCE plugin cannot run here.\n'
  elif ((sysfs_blind == 1)); then
    printf 'No RDMA device in sysfs, but the plugin runs here on the devices of its verbs library (init check passed).\n'
  fi
fi
exit "$status"
