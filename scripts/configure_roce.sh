#!/usr/bin/env bash
# configure_roce.sh: the host side of a lossless RoCEv2 class, per interface and idempotent:
# DSCP trust, DSCP 26 -> priority 3, PFC on priority 3, ECN/DCQCN on priority 3, the kernel's
# default RoCE traffic class (rdma_cm) and the mlx5 traffic-class override consistent with the
# plugin's class, the MTU, ARP sysctls for several NICs on one host, nvidia-peermem.
# Only settings that differ from the target are changed; --check reports them and changes
# nothing; --dry-run prints the commands instead of running them.
set -euo pipefail

ROCE_PROG=configure_roce.sh
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/roce_common.sh
source "$script_dir/lib/roce_common.sh"

ROCE_DSCP=${ROCE_DSCP:-26}
ROCE_PRIO=${ROCE_PRIO:-3}
ROCE_TC=${ROCE_TC:-}
ROCE_MTU=${ROCE_MTU:-9000}
ROCE_TC_OVERRIDE_POLICY=${ROCE_TC_OVERRIDE_POLICY:-clear}

readonly EXIT_DIFFERS=1 EXIT_USAGE=2 EXIT_NO_DEVICE=3 EXIT_NOT_ROOT=4 EXIT_NO_TOOL=5

usage() {
  cat <<EOF
Usage: configure_roce.sh [options] [INTERFACE...]

Brings each RoCE interface (default: the netdev of every RDMA port) to the lossless class the
RoCE plugin sends on, changing only what differs:
  DSCP trust; DSCP ${ROCE_DSCP} -> priority ${ROCE_PRIO}; PFC on priority ${ROCE_PRIO} (others kept);
  ECN/DCQCN (roce_np and roce_rp) on priority ${ROCE_PRIO}; MTU ${ROCE_MTU};
  rdma_cm's default RoCE TOS = the plugin's traffic class (default DSCP << 2);
  mlx5 traffic-class override cleared when it forces another class;
  net.ipv4.conf.all.arp_ignore=1 and arp_announce=2 when the host has several RoCE NICs;
  nvidia_peermem loaded when the NVIDIA driver is.
Settings are runtime state: run it at boot (a systemd oneshot unit) on every node. The switch
ports need the matching PFC and ECN configuration too.

Options:
  --check              report what differs from the target and change nothing (exit 1 if any)
  --dry-run            print every change command instead of running it (queries still run)
  --dscp N             DSCP of RoCE traffic (0..63)          [ROCE_DSCP=${ROCE_DSCP}]
  --prio N             lossless priority (0..7)              [ROCE_PRIO=${ROCE_PRIO}]
  --tc N               traffic class for rdma_cm and the override check (0..255)
                                                             [ROCE_TC, default DSCP << 2]
  --mtu N              interface MTU; 0 leaves the MTU alone [ROCE_MTU=${ROCE_MTU}]
  --tc-override POLICY clear (default), set (force the plugin's class host-wide) or keep
                                                             [ROCE_TC_OVERRIDE_POLICY]
  --no-peermem         do not load nvidia_peermem
  --no-sysctl          leave the ARP sysctls alone
  --acs-off            also clear ACS redirect on PCIe bridges (setpci; until reboot; the
                       BIOS setting is the durable fix)
  -h, --help           this text

Environment: ROCE_SYSFS_ROOT (default /sys) is where state is read and written.
Exit status: 0 all settings match (after changes); 1 differences (--check) or a change that did
not take; 2 bad usage; 3 no RDMA device or unknown interface; 4 not root; 5 a tool is missing.
EOF
}

mode=apply
peermem=1
do_sysctl=1
acs_off=0
ifaces=()
need_value() { [[ $# -ge 2 && -n $2 ]] || { printf 'configure_roce.sh: %s needs a value (see --help)\n' "$1" >&2; exit "$EXIT_USAGE"; }; }
while (($#)); do
  case $1 in
    --check) mode=check ;;
    --dry-run) ROCE_DRY_RUN=changes ;;
    --dscp) need_value "$@"; ROCE_DSCP=$2; shift ;;
    --prio) need_value "$@"; ROCE_PRIO=$2; shift ;;
    --tc) need_value "$@"; ROCE_TC=$2; shift ;;
    --mtu) need_value "$@"; ROCE_MTU=$2; shift ;;
    --tc-override) need_value "$@"; ROCE_TC_OVERRIDE_POLICY=$2; shift ;;
    --no-peermem) peermem=0 ;;
    --no-sysctl) do_sysctl=0 ;;
    --acs-off) acs_off=1 ;;
    -h | --help)
      usage
      exit 0
      ;;
    -*)
      printf 'configure_roce.sh: unknown option %s (see --help)\n' "$1" >&2
      exit "$EXIT_USAGE"
      ;;
    *) ifaces+=("$1") ;;
  esac
  shift
done

bad_value() {
  printf 'configure_roce.sh: %s\n' "$1" >&2
  exit "$EXIT_USAGE"
}
{ roce_is_uint "$ROCE_DSCP" && ((ROCE_DSCP <= 63)); } || bad_value "DSCP '$ROCE_DSCP' is outside 0..63"
{ roce_is_uint "$ROCE_PRIO" && ((ROCE_PRIO <= 7)); } || bad_value "priority '$ROCE_PRIO' is outside 0..7"
[[ -z $ROCE_TC ]] && ROCE_TC=$((ROCE_DSCP << 2))
{ roce_is_uint "$ROCE_TC" && ((ROCE_TC <= 255)); } || bad_value "traffic class '$ROCE_TC' is outside 0..255"
(((ROCE_TC >> 2) == ROCE_DSCP)) || bad_value "traffic class $ROCE_TC carries DSCP $((ROCE_TC >> 2)), not DSCP $ROCE_DSCP: use --tc $((ROCE_DSCP << 2)) or $(((ROCE_DSCP << 2) | 2)) (with ECT(0))"
{ roce_is_uint "$ROCE_MTU" && { ((ROCE_MTU == 0)) || ((ROCE_MTU >= 1280 && ROCE_MTU <= 9216)); }; } ||
  bad_value "MTU '$ROCE_MTU' is outside 1280..9216 (0 leaves it alone)"
case $ROCE_TC_OVERRIDE_POLICY in clear | set | keep) ;; *) bad_value "--tc-override '$ROCE_TC_OVERRIDE_POLICY' is not clear, set or keep" ;; esac

# Refuse before touching anything: changing NIC state needs root; --check and --dry-run do not.
if [[ $mode == apply && $ROCE_DRY_RUN == 0 && $EUID -ne 0 ]]; then
  printf 'configure_roce.sh: must run as root to change NIC settings (uid %s); use --check or --dry-run to look without changing, or run with sudo\n' "$EUID" >&2
  exit "$EXIT_NOT_ROOT"
fi

# ---------------------------------------------------------------------------------------------
# Which interfaces, behind which RDMA ports.

mapfile -t devices < <(roce_devices)
if ((${#devices[@]} == 0)); then
  printf 'configure_roce.sh: no RDMA device under %s: this node has no RDMA NIC, or its driver (e.g. mlx5_ib) is not loaded; nothing to configure\n' "$(roce_ib_root)" >&2
  exit "$EXIT_NO_DEVICE"
fi
declare -A port_of=()  # netdev -> "dev/port" (first port)
all_netdevs=()
for dev in "${devices[@]}"; do
  while IFS= read -r port; do
    ll=$(roce_read "$(roce_port_dir "$dev" "$port")/link_layer") || ll=""
    [[ $ll == Ethernet ]] || continue
    n=$(roce_port_netdev "$dev" "$port") || continue
    if [[ -z ${port_of[$n]:-} ]]; then
      port_of[$n]="$dev/$port"
      all_netdevs+=("$n")
    fi
  done < <(roce_ports "$dev")
done
if ((${#all_netdevs[@]} == 0)); then
  printf 'configure_roce.sh: no RDMA port with an Ethernet link layer and a netdev: nothing to configure (InfiniBand ports need no RoCE class)\n' >&2
  exit "$EXIT_NO_DEVICE"
fi
if ((${#ifaces[@]} == 0)); then
  ifaces=("${all_netdevs[@]}")
else
  for i in "${ifaces[@]}"; do
    if [[ -z ${port_of[$i]:-} ]]; then
      printf 'configure_roce.sh: %s is not the netdev of any RoCE port (RoCE netdevs here: %s)\n' "$i" "${all_netdevs[*]}" >&2
      exit "$EXIT_NO_DEVICE"
    fi
  done
fi

# ---------------------------------------------------------------------------------------------
# Tools: refuse up front, naming the package, rather than half-configure a node.

missing=()
if roce_have mlnx_qos; then
  qos_tool=mlnx_qos
elif roce_have dcb; then
  qos_tool=dcb
else
  qos_tool=""
  missing+=("mlnx_qos or dcb (MLNX_OFED's mlnx-tools, or iproute2 >= 5.11)")
fi
((ROCE_MTU == 0)) || roce_have ip || missing+=("ip (iproute2)")
if [[ $do_sysctl == 1 ]] && ((${#all_netdevs[@]} > 1)); then roce_have sysctl || missing+=("sysctl (procps)"); fi
nvidia_loaded=0
[[ -d $ROCE_SYSFS_ROOT/module/nvidia ]] && nvidia_loaded=1
peermem_loaded() {
  [[ -e $ROCE_SYSFS_ROOT/module/nvidia_peermem || -e $ROCE_SYSFS_ROOT/kernel/mm/memory_peers/nv_mem/version ]]
}
if [[ $peermem == 1 && $nvidia_loaded == 1 ]] && ! peermem_loaded; then roce_have modprobe || missing+=("modprobe (kmod)"); fi
if [[ $acs_off == 1 ]]; then
  roce_have lspci || missing+=("lspci (pciutils)")
  roce_have setpci || missing+=("setpci (pciutils)")
fi
if ((${#missing[@]} > 0)); then
  printf 'configure_roce.sh: missing tool: %s\n' "${missing[@]}" >&2
  printf 'configure_roce.sh: install it and re-run; nothing was changed\n' >&2
  exit "$EXIT_NO_TOOL"
fi

# ---------------------------------------------------------------------------------------------
# One setting at a time: compare, then report (--check) or change.

differences=0
changed=0
quiet=0

say() { [[ $quiet == 1 ]] || printf '%s\n' "$*"; }

# setting NAME SUBJECT CURRENT WANTED APPLY_FUNCTION [ARGS...]
setting() {
  local name=$1 subject=$2 cur=$3 want=$4
  shift 4
  if [[ $cur == "$want" ]]; then
    say "$(printf '  %-12s %-28s %-22s ok' "$name" "$subject" "$want")"
    return 0
  fi
  differences=$((differences + 1))
  if [[ $pass_mode == check ]]; then
    say "$(printf '  %-12s %-28s %-22s DIFFERS (want %s)' "$name" "$subject" "${cur:-unset}" "$want")"
    return 0
  fi
  say "$(printf '  %-12s %-28s %-22s -> %s' "$name" "$subject" "${cur:-unset}" "$want")"
  if ! "$@"; then
    printf 'configure_roce.sh: changing %s of %s failed; the settings before it were applied, the rest were not\n' "$name" "$subject" >&2
    exit "$EXIT_DIFFERS"
  fi
  changed=$((changed + 1))
}

qos_set_trust() {
  if [[ $qos_tool == mlnx_qos ]]; then roce_run change mlnx_qos -i "$1" --trust dscp; else roce_run change dcb apptrust set dev "$1" order dscp; fi
}
qos_set_dscp2prio() {
  if [[ $qos_tool == mlnx_qos ]]; then
    roce_run change mlnx_qos -i "$1" --dscp2prio "set,${ROCE_DSCP},${ROCE_PRIO}"
  else
    roce_run change dcb app replace dev "$1" dscp-prio "${ROCE_DSCP}:${ROCE_PRIO}"
  fi
}
qos_set_pfc() {
  if [[ $qos_tool == mlnx_qos ]]; then
    roce_run change mlnx_qos -i "$1" --pfc "$(sed 's/./&,/g; s/,$//' <<<"$2")"
  else
    roce_run change dcb pfc set dev "$1" prio-pfc "${ROCE_PRIO}:on"
  fi
}
set_mtu() { roce_run change ip link set dev "$1" mtu "$2"; }
write_attr() { roce_run change roce_write_file "$1" "$2"; }
set_roce_tos() {
  local dir=${1%/*}
  if [[ ! -d $ROCE_SYSFS_ROOT/kernel/config/rdma_cm ]]; then
    # rdma_cm's configfs group appears when the module is loaded and configfs is mounted.
    roce_run change modprobe rdma_cm
    if [[ $ROCE_DRY_RUN == 0 && ! -d $ROCE_SYSFS_ROOT/kernel/config/rdma_cm ]]; then
      printf 'configure_roce.sh: %s/kernel/config/rdma_cm is missing after modprobe rdma_cm: mount configfs (mount -t configfs none %s/kernel/config)\n' "$ROCE_SYSFS_ROOT" "$ROCE_SYSFS_ROOT" >&2
      return 1
    fi
  fi
  roce_run change mkdir -p "$dir" && roce_run change roce_write_file "$1" "$2"
}
sysctl_set() { roce_run change sysctl -q -w "$1=$2"; }
load_peermem() { roce_run change modprobe nvidia_peermem; }
acs_clear() { roce_run change setpci -s "$1" ECAP_ACS+0x6.w=0000; }

# The whole target, once. pass_mode is check (compare only) or apply.
configure_pass() {
  pass_mode=$1
  local ifc pp dev port cur prio vec
  for ifc in "${ifaces[@]}"; do
    pp=${port_of[$ifc]}
    dev=${pp%/*}
    port=${pp#*/}
    say "$ifc ($pp):"
    if ((ROCE_MTU != 0)); then
      cur=$(roce_read "$(roce_net_root)/$ifc/mtu") || cur=""
      setting mtu "$ifc" "$cur" "$ROCE_MTU" set_mtu "$ifc" "$ROCE_MTU"
    fi
    if ! roce_qos_read "$ifc"; then
      printf 'configure_roce.sh: %s: %s\n' "$ifc" "$roce_qos_error" >&2
      differences=$((differences + 1))
    else
      setting trust "$ifc" "$roce_qos_trust" dscp qos_set_trust "$ifc"
      prio=${roce_qos_dscp2prio[ROCE_DSCP]:-}
      setting dscp2prio "$ifc dscp ${ROCE_DSCP}" "${prio:+priority $prio}" "priority ${ROCE_PRIO}" qos_set_dscp2prio "$ifc"
      vec=${roce_qos_pfc:0:ROCE_PRIO}1${roce_qos_pfc:$((ROCE_PRIO + 1))}
      setting pfc "$ifc prio 0-7" "$roce_qos_pfc" "$vec" qos_set_pfc "$ifc" "$vec"
    fi
    local ecn role f
    ecn="$(roce_net_root)/$ifc/ecn"
    if [[ -d $ecn ]]; then
      for role in roce_np roce_rp; do
        f="$ecn/$role/enable/$ROCE_PRIO"
        cur=$(roce_read "$f") || cur=""
        setting ecn "$ifc $role prio ${ROCE_PRIO}" "$cur" 1 write_attr "$f" 1
      done
    else
      printf 'configure_roce.sh: %s: no %s: this driver exposes no ECN/DCQCN controls; enable congestion control in the NIC firmware\n' "$ifc" "$ecn" >&2
      differences=$((differences + 1))
    fi
    # Host-wide mlx5 override: it replaces every QP's traffic class on this port.
    local tcf raw ov
    tcf="$(roce_ib_root)/$dev/tc/$port/traffic_class"
    if [[ -f $tcf ]]; then
      raw=$(roce_read "$tcf") || raw=""
      ov=none
      if [[ $raw =~ (^|=)[[:space:]]*([0-9]+)[[:space:]]*$ ]]; then ov=${BASH_REMATCH[2]}; fi
      case $ROCE_TC_OVERRIDE_POLICY in
        clear)
          if [[ $ov == "$ROCE_TC" || $ov == none ]]; then
            setting tc-override "$pp" "$ov" "$ov" true
          else
            setting tc-override "$pp" "$ov" none write_attr "$tcf" -1
          fi ;;
        set) setting tc-override "$pp" "$ov" "$ROCE_TC" write_attr "$tcf" "$ROCE_TC" ;;
        keep) say "$(printf '  %-12s %-28s %-22s kept (--tc-override keep)' tc-override "$pp" "$ov")" ;;
      esac
    fi
    local tosf="$ROCE_SYSFS_ROOT/kernel/config/rdma_cm/$dev/ports/$port/default_roce_tos"
    cur=$(roce_read "$tosf") || cur=""
    setting roce-tos "$pp" "$cur" "$ROCE_TC" set_roce_tos "$tosf" "$ROCE_TC"
  done

  if [[ $do_sysctl == 1 ]] && ((${#all_netdevs[@]} > 1)); then
    say "host (${#all_netdevs[@]} RoCE NICs):"
    local kv k want
    for kv in net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2; do
      k=${kv%=*}
      want=${kv#*=}
      cur=$(roce_run read sysctl -n "$k" 2>/dev/null) || cur=""
      setting sysctl "$k" "$cur" "$want" sysctl_set "$k" "$want"
    done
  fi
  if [[ $peermem == 1 && $nvidia_loaded == 1 ]]; then
    cur=absent
    peermem_loaded && cur=loaded
    say "host:"
    setting module nvidia_peermem "$cur" loaded load_peermem
  fi
  if [[ $acs_off == 1 ]]; then
    local out line bdf is_bridge=0
    out=$(roce_run read lspci -D -vvv 2>/dev/null) || out=""
    while IFS= read -r line; do
      if [[ $line =~ ^([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])[[:space:]](.*)$ ]]; then
        bdf=${BASH_REMATCH[1]}
        is_bridge=0
        [[ ${BASH_REMATCH[2]} == *"PCI bridge"* ]] && is_bridge=1
      elif [[ $is_bridge == 1 && $line =~ ACSCtl: ]]; then
        cur=off
        [[ $line == *SrcValid+* || $line == *ReqRedir+* || $line == *CmpltRedir+* ]] && cur=on
        setting acs "$bdf" "$cur" off acs_clear "$bdf"
      fi
    done <<<"$out"
  fi
}

how=""
[[ $mode == check ]] && how=", check only"
[[ $ROCE_DRY_RUN != 0 ]] && how=", dry run"
mtu_text=$ROCE_MTU
((ROCE_MTU != 0)) || mtu_text=kept
printf 'configure_roce.sh: target DSCP %s -> priority %s, PFC and ECN on priority %s, TC %s, MTU %s (%s)%s\n' \
  "$ROCE_DSCP" "$ROCE_PRIO" "$ROCE_PRIO" "$ROCE_TC" "$mtu_text" "$qos_tool" "$how"

if [[ $mode == check ]]; then
  configure_pass check
  if ((differences > 0)); then
    printf 'configure_roce.sh: %s setting(s) differ from the target; nothing was changed\n' "$differences"
    exit "$EXIT_DIFFERS"
  fi
  printf 'configure_roce.sh: every setting matches the target\n'
  exit 0
fi

configure_pass apply
if [[ $ROCE_DRY_RUN != 0 ]]; then
  printf 'configure_roce.sh: dry run: nothing was changed\n'
  exit 0
fi
# Read everything back: a setting the driver refused must not pass silently.
differences=0
quiet=1
configure_pass check
if ((differences > 0)); then
  quiet=0
  differences=0
  printf 'configure_roce.sh: after the changes, these settings still differ:\n' >&2
  configure_pass check >&2
  exit "$EXIT_DIFFERS"
fi
printf 'configure_roce.sh: every setting matches the target\n'
