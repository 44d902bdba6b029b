# shellcheck shell=bash disable=SC2034 # the library sets globals its callers read
# Shared by configure_roce.sh, diagnose_roce.sh and roce-show-gids: where the node's facts are read
# from (every path under an overridable root, so tests point the scripts at fixture trees), the
# one function every external command goes through (so --dry-run can print instead of run),
# findings with severities and fixes, the GID table and the plugin's GID choice, and JSON text.
#
# Roots (environment):
#   ROCE_SYSFS_ROOT  default /sys   class/infiniband, class/net, module, kernel/mm, kernel/config
#   ROCE_PROC_ROOT   default /proc  driver/nvidia/version
#   ROCE_DEV_ROOT    default /dev   infiniband/uverbs*

ROCE_SYSFS_ROOT=${ROCE_SYSFS_ROOT:-/sys}
ROCE_PROC_ROOT=${ROCE_PROC_ROOT:-/proc}
ROCE_DEV_ROOT=${ROCE_DEV_ROOT:-/dev}

# 0: run every command. changes: print commands that change the node, run read-only queries.
# all: print every command, run none.
ROCE_DRY_RUN=${ROCE_DRY_RUN:-0}
# Where dry-run lines go: a copy of stdout made now, so that a query run inside $(...) still
# prints its DRY-RUN line to the terminal (scripts point it at stderr when stdout is JSON).
exec {roce_dry_run_fd}>&1
# Every command run is appended here when set (tests and audits).
ROCE_CMD_LOG=${ROCE_CMD_LOG:-}

roce_ib_root() { printf '%s/class/infiniband' "$ROCE_SYSFS_ROOT"; }
roce_net_root() { printf '%s/class/net' "$ROCE_SYSFS_ROOT"; }

roce_die() {
  printf '%s: %s\n' "${ROCE_PROG:-roce}" "$*" >&2
  exit "${ROCE_DIE_STATUS:-1}"
}

# Shell-quoted rendering of a command line, for dry-run output and logs: plain words stay
# as they are, anything else is single-quoted.
roce_quote() {
  if [[ $1 =~ ^[A-Za-z0-9_./:=,+@%-]+$ ]]; then
    printf '%s' "$1"
  else
    printf "'%s'" "${1//\'/\'\\\'\'}"
  fi
}

roce_render() {
  if [[ $1 == roce_write_file ]]; then
    printf 'echo %s > %s' "$(roce_quote "$3")" "$(roce_quote "$2")"
    return
  fi
  local out="" arg
  for arg in "$@"; do
    out+="${out:+ }$(roce_quote "$arg")"
  done
  printf '%s' "$out"
}

# roce_run read|change CMD [ARGS...]: the only way these scripts run a command.
# A "change" command is printed instead of run under --dry-run; a "read" command is printed
# instead of run only when ROCE_DRY_RUN=all. Returns the command's status (0 when not run).
roce_run() {
  local kind=$1
  shift
  if [[ $ROCE_DRY_RUN == all || ($ROCE_DRY_RUN == changes && $kind == change) ]]; then
    printf 'DRY-RUN: %s\n' "$(roce_render "$@")" >&"$roce_dry_run_fd"
    return 0
  fi
  if [[ -n $ROCE_CMD_LOG ]]; then
    printf '%s %s\n' "$kind" "$(roce_render "$@")" >>"$ROCE_CMD_LOG"
  fi
  "$@"
}

# True when a read-only query would really run (not suppressed by --dry-run).
roce_queries_run() { [[ $ROCE_DRY_RUN != all ]]; }

roce_have() { command -v "$1" >/dev/null 2>&1; }

# Writes VALUE into PATH (a sysfs or configfs attribute). Used through roce_run change.
roce_write_file() {
  printf '%s\n' "$2" >"$1"
}

# First line of a file, without trailing whitespace; fails when unreadable (EINVAL on
# gid_attrs/types of an unused GID entry, a missing file).
roce_read() {
  local line
  [[ -r $1 && -f $1 ]] || return 1
  IFS= read -r line <"$1" 2>/dev/null || [[ -n ${line:-} ]] || return 1
  line=${line%%[[:space:]]}
  printf '%s' "${line%$'\r'}"
}

# roce_read_v VAR FILE: like roce_read, into VAR without a subshell (hot loops).
roce_read_v() {
  local -n _dst=$1
  _dst=""
  [[ -r $2 && -f $2 ]] || return 1
  IFS= read -r _dst <"$2" 2>/dev/null || [[ -n $_dst ]] || return 1
  _dst=${_dst%%[[:space:]]}
}

roce_is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

# ---------------------------------------------------------------------------------------------
# Findings: one line each, OK / WARN / FAIL, with the fix for WARN and FAIL.

ROCE_JSON=${ROCE_JSON:-0}
roce_n_ok=0
roce_n_warn=0
roce_n_fail=0
roce_findings_json=()

# roce_json_str_v VAR TEXT: the JSON string literal of TEXT into VAR.
roce_json_str_v() {
  local -n _out=$1
  local s=$2
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\n'/\\n}
  s=${s//$'\t'/\\t}
  s=${s//$'\r'/\\r}
  _out="\"$s\""
}

roce_json_str() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\n'/\\n}
  s=${s//$'\t'/\\t}
  s=${s//$'\r'/\\r}
  printf '"%s"' "$s"
}

# roce_finding SEVERITY CHECK SUBJECT MESSAGE [FIX]
roce_finding() {
  local sev=$1 check=$2 subject=$3 msg=$4 fix=${5:-}
  case $sev in
    OK) roce_n_ok=$((roce_n_ok + 1)) ;;
    WARN) roce_n_warn=$((roce_n_warn + 1)) ;;
    FAIL) roce_n_fail=$((roce_n_fail + 1)) ;;
    *) roce_die "internal error: severity '$sev'" ;;
  esac
  if [[ $ROCE_JSON == 1 ]]; then
    local js jc ju jm jf
    roce_json_str_v js "$sev"
    roce_json_str_v jc "$check"
    roce_json_str_v ju "$subject"
    roce_json_str_v jm "$msg"
    roce_json_str_v jf "$fix"
    roce_findings_json+=("{\"severity\":$js,\"check\":$jc,\"subject\":$ju,\"message\":$jm,\"fix\":$jf}")
    return
  fi
  local tag
  case $sev in
    OK) tag='[ OK ]' ;;
    WARN) tag='[WARN]' ;;
    FAIL) tag='[FAIL]' ;;
  esac
  printf '%s %-9s %s: %s\n' "$tag" "$check" "$subject" "$msg"
  if [[ -n $fix ]]; then
    printf '       %-9s fix: %s\n' "" "$fix"
  fi
}

roce_section() {
  [[ $ROCE_JSON == 1 ]] && return
  printf '\n== %s\n' "$1"
}

# Joins the arguments as a JSON array of already-encoded values.
roce_json_array() {
  local IFS=,
  printf '[%s]' "$*"
}

# ---------------------------------------------------------------------------------------------
# RDMA devices, ports and netdevs.

roce_devices() {
  local d
  local root
  root=$(roce_ib_root)
  [[ -d $root ]] || return 0
  for d in "$root"/*; do
    [[ -e $d ]] || continue
    printf '%s\n' "${d##*/}"
  done | sort -V
}

roce_ports() {
  local p
  for p in "$(roce_ib_root)/$1/ports"/*; do
    [[ -d $p ]] || continue
    printf '%s\n' "${p##*/}"
  done | sort -n
}

roce_port_dir() { printf '%s/%s/ports/%s' "$(roce_ib_root)" "$1" "$2"; }

# The netdev behind DEV/PORT: the first GID entry that names one, else device/net/*.
roce_port_netdev() {
  local dev=$1 port=$2 f name
  local dir
  dir=$(roce_port_dir "$dev" "$port")
  local i
  local -a idx=()
  for f in "$dir/gid_attrs/ndevs"/*; do
    i=${f##*/}
    roce_is_uint "$i" && idx[i]=$i
  done
  for i in "${idx[@]}"; do
    roce_read_v name "$dir/gid_attrs/ndevs/$i" || continue
    if [[ -n $name ]]; then
      printf '%s' "$name"
      return 0
    fi
  done
  for f in "$(roce_ib_root)/$dev/device/net"/*; do
    [[ -e $f ]] || continue
    printf '%s' "${f##*/}"
    return 0
  done
  return 1
}

# The RoCE path MTU the kernel derives from a netdev MTU (iboe_get_mtu: 96 bytes of headers).
roce_mtu_from_netdev() {
  local m=$(($1 - 96))
  local v
  for v in 4096 2048 1024 512 256; do
    if ((m >= v)); then
      printf '%s' "$v"
      return
    fi
  done
  printf '0'
}

# ---------------------------------------------------------------------------------------------
# GIDs. A sysfs GID is 8 groups of 4 hex digits; an IPv4-mapped one ends 0000:ffff:aabb:ccdd.

roce_gid_is_zero() { [[ ${1//[0:]/} == "" ]]; }

roce_gid_is_v4mapped() { [[ ${1,,} == 0000:0000:0000:0000:0000:ffff:* ]]; }

roce_gid_is_linklocal() {
  local g=${1,,}
  [[ $g =~ ^fe[89ab] ]]
}

roce_gid_ipv4() {
  local g=${1,,}
  local a=${g:30:4} b=${g:35:4}
  printf '%d.%d.%d.%d' $((16#${a:0:2})) $((16#${a:2:2})) $((16#${b:0:2})) $((16#${b:2:2}))
}

# IPv6 text of a sysfs GID: leading zeros dropped, the longest run of zero groups as "::".
roce_gid_ipv6() {
  local -a grp
  local IFS=:
  read -r -a grp <<<"${1,,}"
  local i best_at=-1 best_len=0 run_at=-1 run_len=0
  for i in "${!grp[@]}"; do
    printf -v 'grp[i]' '%x' $((16#${grp[i]}))
    if [[ ${grp[i]} == 0 ]]; then
      ((run_len == 0)) && run_at=$i
      run_len=$((run_len + 1))
      if ((run_len > best_len)); then
        best_len=$run_len
        best_at=$run_at
      fi
    else
      run_len=0
    fi
  done
  if ((best_len < 2)); then
    printf '%s' "${grp[*]}"
    return
  fi
  local head="${grp[*]:0:best_at}" tail="${grp[*]:best_at+best_len}"
  printf '%s::%s' "$head" "$tail"
}

# The GID's address as text (IPv4 for mapped entries).
roce_gid_addr() {
  if roce_gid_is_v4mapped "$1"; then roce_gid_ipv4 "$1"; else roce_gid_ipv6 "$1"; fi
}

# "RoCE v2" -> v2, "IB/RoCE v1" or "RoCE v1" -> v1; anything else is printed as found.
roce_gid_type_short() {
  case $1 in
    *"RoCE v2"*) printf 'v2' ;;
    *"RoCE v1"*) printf 'v1' ;;
    *) printf '%s' "$1" ;;
  esac
}

# Expands IPv6 text (with ::, optional embedded IPv4) to 32 hex digits; fails on bad input.
roce_ipv6_hex() {
  local a=${1,,} head tail i
  local -a hg=() tg=()
  if [[ $a =~ ^(.*:)([0-9]+)\.([0-9]+)\.([0-9]+)\.([0-9]+)$ ]]; then
    a="${BASH_REMATCH[1]}$(printf '%x:%x' $((BASH_REMATCH[2] * 256 + BASH_REMATCH[3])) $((BASH_REMATCH[4] * 256 + BASH_REMATCH[5])))"
  fi
  [[ $a =~ ^[0-9a-f:]+$ ]] || return 1
  if [[ $a == *::* ]]; then
    head=${a%%::*}
    tail=${a#*::}
    [[ $tail != *::* ]] || return 1
  else
    head=$a
    tail=""
  fi
  [[ -n $head ]] && IFS=: read -r -a hg <<<"$head"
  [[ -n $tail ]] && IFS=: read -r -a tg <<<"$tail"
  local n=$((${#hg[@]} + ${#tg[@]}))
  if [[ $a == *::* ]]; then ((n <= 7)) || return 1; else ((n == 8)) || return 1; fi
  local out=""
  local h
  for i in "${hg[@]}"; do
    [[ $i =~ ^[0-9a-f]{1,4}$ ]] || return 1
    printf -v h '%04x' $((16#$i))
    out+=$h
  done
  for ((i = n; i < 8; i++)); do out+=0000; done
  for i in "${tg[@]}"; do
    [[ $i =~ ^[0-9a-f]{1,4}$ ]] || return 1
    printf -v h '%04x' $((16#$i))
    out+=$h
  done
  printf '%s' "$out"
}

roce_ipv4_int() {
  local a b c d
  [[ $1 =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)\.([0-9]+)$ ]] || return 1
  a=${BASH_REMATCH[1]} b=${BASH_REMATCH[2]} c=${BASH_REMATCH[3]} d=${BASH_REMATCH[4]}
  ((a < 256 && b < 256 && c < 256 && d < 256)) || return 1
  printf '%d' $(((a << 24) | (b << 16) | (c << 8) | d))
}

# Validates NCCL_IB_ADDR_RANGE text; prints nothing, fails with a message on stderr.
roce_cidr_valid() {
  local net=${1%/*} len=${1##*/}
  [[ $1 == */* ]] && roce_is_uint "$len" || return 1
  if [[ $net == *:* ]]; then
    ((len <= 128)) && roce_ipv6_hex "$net" >/dev/null
  else
    ((len <= 32)) && roce_ipv4_int "$net" >/dev/null
  fi
}

# roce_gid_in_range GID CIDR: true when the GID's address lies in CIDR (same family).
roce_gid_in_range() {
  local gid=$1 net=${2%/*} len=${2##*/}
  if [[ $net != *:* ]]; then
    roce_gid_is_v4mapped "$gid" || return 1
    local ip n mask
    ip=$(roce_ipv4_int "$(roce_gid_ipv4 "$gid")") || return 1
    n=$(roce_ipv4_int "$net") || return 1
    mask=$(((0xffffffff << (32 - len)) & 0xffffffff))
    (((ip & mask) == (n & mask)))
    return
  fi
  roce_gid_is_v4mapped "$gid" && return 1
  local gh nh full=$((len / 4)) rest=$((len % 4))
  gh=${gid//:/}
  gh=${gh,,}
  nh=$(roce_ipv6_hex "$net") || return 1
  [[ ${gh:0:full} == "${nh:0:full}" ]] || return 1
  ((rest == 0)) && return 0
  local gd=$((16#${gh:full:1})) nd=$((16#${nh:full:1})) m=$(((0xf << (4 - rest)) & 0xf))
  (((gd & m) == (nd & m)))
}

# Reads the GID table of DEV/PORT into the arrays roce_gid_idx, roce_gid_val, roce_gid_type
# (v1, v2, "" when the type cannot be read: unused entry), roce_gid_ndev.
roce_load_gids() {
  local dir
  dir=$(roce_port_dir "$1" "$2")
  roce_gid_idx=()
  roce_gid_val=()
  roce_gid_type=()
  roce_gid_ndev=()
  local f i g t n
  [[ -d $dir/gids ]] || return 0
  local -a idx=()
  for f in "$dir/gids"/*; do
    i=${f##*/}
    roce_is_uint "$i" && idx[i]=$i
  done
  for i in "${idx[@]}"; do
    roce_read_v g "$dir/gids/$i" || continue
    roce_read_v t "$dir/gid_attrs/types/$i" || t=""
    roce_read_v n "$dir/gid_attrs/ndevs/$i" || n=""
    case $t in
      *"RoCE v2"*) t=v2 ;;
      *"RoCE v1"*) t=v1 ;;
    esac
    roce_gid_idx+=("$i")
    roce_gid_val+=("${g,,}")
    roce_gid_type+=("$t")
    roce_gid_ndev+=("$n")
  done
}

# Whether table entry k is usable at all: non-zero GID with a readable type.
roce_gid_entry_valid() {
  local k=$1
  [[ -n ${roce_gid_type[k]} ]] && ! roce_gid_is_zero "${roce_gid_val[k]}"
}

# Whether entry k is of the wanted family (4 or 6) and not link-local.
roce_gid_entry_family_ok() {
  local k=$1 fam=$2 g=${roce_gid_val[$1]}
  roce_gid_is_linklocal "$g" && return 1
  if [[ $fam == 4 ]]; then roce_gid_is_v4mapped "$g"; else ! roce_gid_is_v4mapped "$g"; fi
}

# The plugin's automatic choice over the loaded table: the first valid RoCE v2 entry of the
# wanted family inside the range. Prints the table position k, or fails.
roce_gid_auto_choice() {
  local fam=$1 range=${2:-} k
  for k in "${!roce_gid_idx[@]}"; do
    roce_gid_entry_valid "$k" || continue
    [[ ${roce_gid_type[k]} == v2 ]] || continue
    roce_gid_entry_family_ok "$k" "$fam" || continue
    if [[ -n $range ]]; then roce_gid_in_range "${roce_gid_val[k]}" "$range" || continue; fi
    printf '%s' "$k"
    return 0
  done
  return 1
}

# Table position of GID index IDX, or fails.
roce_gid_pos() {
  local k
  for k in "${!roce_gid_idx[@]}"; do
    if [[ ${roce_gid_idx[k]} == "$1" ]]; then
      printf '%s' "$k"
      return 0
    fi
  done
  return 1
}

# Wanted address family from NCCL_IB_ADDR_FAMILY: prints 4 or 6, fails on other values.
roce_wanted_family() {
  case ${NCCL_IB_ADDR_FAMILY:-AF_INET} in
    AF_INET) printf '4' ;;
    AF_INET6) printf '6' ;;
    *) return 1 ;;
  esac
}

# ---------------------------------------------------------------------------------------------
# NCCL_IB_HCA, with NCCL's meaning: "^" excludes, "=" asks for exact names, ":port" limits.

roce_hca_matches() {
  local spec=${NCCL_IB_HCA:-} dev=$1 port=$2
  [[ -z $spec ]] && return 0
  local exclude=0 exact=0
  if [[ $spec == ^* ]]; then
    exclude=1
    spec=${spec:1}
  fi
  if [[ $spec == =* ]]; then
    exact=1
    spec=${spec:1}
  fi
  local hit=1 entry name eport
  local -a entries
  IFS=, read -r -a entries <<<"$spec"
  for entry in "${entries[@]}"; do
    name=${entry%%:*}
    eport=""
    [[ $entry == *:* ]] && eport=${entry#*:}
    if [[ $exact == 1 ]]; then
      [[ $dev == "$name" ]] || continue
    else
      [[ $dev == "$name"* ]] || continue
    fi
    [[ -z $eport || $eport == "$port" ]] || continue
    hit=0
    break
  done
  if [[ $exclude == 1 ]]; then ((hit != 0)); else ((hit == 0)); fi
}

# Validates NCCL_IB_HCA text; fails naming the bad entry.
roce_hca_valid() {
  local spec=${1#^}
  spec=${spec#=}
  local entry
  local -a entries
  IFS=, read -r -a entries <<<"$spec"
  for entry in "${entries[@]}"; do
    if [[ -z ${entry%%:*} ]] || { [[ $entry == *:* ]] && ! roce_is_uint "${entry#*:}"; }; then
      printf '%s' "$entry"
      return 1
    fi
  done
}

# ---------------------------------------------------------------------------------------------
# The traffic class the plugin would use, from the environment, with NCCL_ROCE_TC >
# NCCL_ROCE_DSCP (tc = dscp << 2) > NCCL_IB_TC. Sets roce_plugin_tc ("" when unset) and
# roce_plugin_tc_source; fails with a message on stderr for an out-of-range value.
roce_plugin_tc() {
  roce_plugin_tc=""
  roce_plugin_tc_source=""
  local name v
  # The plugin refuses NCCL_ROCE_TC and NCCL_ROCE_DSCP naming two different DSCPs.
  if [[ -n ${NCCL_ROCE_TC:-} && -n ${NCCL_ROCE_DSCP:-} ]] && roce_is_uint "$NCCL_ROCE_TC" &&
    roce_is_uint "$NCCL_ROCE_DSCP" && ((NCCL_ROCE_TC >> 2 != NCCL_ROCE_DSCP)); then
    printf 'NCCL_ROCE_TC=%s (DSCP %s) and NCCL_ROCE_DSCP=%s name different classes; the plugin refuses to start\n' \
      "$NCCL_ROCE_TC" "$((NCCL_ROCE_TC >> 2))" "$NCCL_ROCE_DSCP" >&2
    return 1
  fi
  for name in NCCL_ROCE_TC NCCL_ROCE_DSCP NCCL_IB_TC; do
    v=${!name:-}
    [[ -z $v ]] && continue
    if [[ $name == NCCL_ROCE_DSCP ]]; then
      if ! roce_is_uint "$v" || ((v > 63)); then
        printf '%s=%s is not a DSCP value (0..63)\n' "$name" "$v" >&2
        return 1
      fi
      roce_plugin_tc=$((v << 2))
    else
      if [[ $name == NCCL_IB_TC && $v == -1 ]]; then continue; fi
      if ! roce_is_uint "$v" || ((v > 255)); then
        printf '%s=%s is not a traffic class (0..255)\n' "$name" "$v" >&2
        return 1
      fi
      roce_plugin_tc=$v
    fi
    roce_plugin_tc_source=$name
    return 0
  done
}

# ---------------------------------------------------------------------------------------------
# QoS state of a netdev through mlnx_qos (preferred: what the article and MLNX_OFED use) or
# iproute2's dcb. Sets roce_qos_tool (mlnx_qos, dcb or ""), roce_qos_trust (dscp, pcp, ...),
# roce_qos_pfc (8 characters of 0/1, priority 0 first) and roce_qos_dscp2prio[dscp]=prio.
# Fails when no tool is usable or its output cannot be read; roce_qos_error says why.

roce_qos_read() {
  local ifc=$1 out line
  roce_qos_tool=""
  roce_qos_trust=""
  roce_qos_pfc=""
  roce_qos_error=""
  roce_qos_dscp2prio=()
  if roce_have mlnx_qos; then
    roce_qos_tool=mlnx_qos
    if ! out=$(roce_run read mlnx_qos -i "$ifc" 2>&1) || ! roce_queries_run; then
      roce_queries_run || { roce_qos_error="not run (--dry-run)"; return 1; }
      roce_qos_error="mlnx_qos -i $ifc failed: ${out##*$'\n'}"
      return 1
    fi
    local in_pfc=0 prio d
    while IFS= read -r line; do
      if [[ $line =~ [Tt]rust[[:space:]]state:[[:space:]]*([a-z]+) ]]; then
        roce_qos_trust=${BASH_REMATCH[1]}
      elif [[ $line =~ prio:([0-7])[[:space:]]+dscp:([0-9,]*) ]]; then
        prio=${BASH_REMATCH[1]}
        local -a ds
        IFS=, read -r -a ds <<<"${BASH_REMATCH[2]}"
        for d in "${ds[@]}"; do
          [[ -n $d ]] && roce_qos_dscp2prio[10#$d]=$prio
        done
      elif [[ $line =~ PFC[[:space:]]configuration ]]; then
        in_pfc=1
      elif [[ $in_pfc == 1 && $line =~ ^[[:space:]]*enabled[[:space:]]+([01])[[:space:]]+([01])[[:space:]]+([01])[[:space:]]+([01])[[:space:]]+([01])[[:space:]]+([01])[[:space:]]+([01])[[:space:]]+([01]) ]]; then
        roce_qos_pfc="${BASH_REMATCH[1]}${BASH_REMATCH[2]}${BASH_REMATCH[3]}${BASH_REMATCH[4]}${BASH_REMATCH[5]}${BASH_REMATCH[6]}${BASH_REMATCH[7]}${BASH_REMATCH[8]}"
        in_pfc=0
      fi
    done <<<"$out"
  elif roce_have dcb; then
    roce_qos_tool=dcb
    if ! out=$(roce_run read dcb pfc show dev "$ifc" prio-pfc 2>&1) || ! roce_queries_run; then
      roce_queries_run || { roce_qos_error="not run (--dry-run)"; return 1; }
      roce_qos_error="dcb pfc show dev $ifc failed: ${out##*$'\n'}"
      return 1
    fi
    local p v pfc=00000000
    while IFS= read -r p; do
      v=0
      [[ ${p#*:} == on ]] && v=1
      pfc=${pfc:0:${p%%:*}}$v${pfc:$((${p%%:*} + 1))}
    done < <(grep -oE '[0-7]:(on|off)' <<<"$out")
    grep -qE '[0-7]:(on|off)' <<<"$out" && roce_qos_pfc=$pfc
    if out=$(roce_run read dcb apptrust show dev "$ifc" order 2>&1); then
      # "order: dscp pcp": the first trusted selector decides.
      local sel
      sel=$(sed -nE 's/.*order:?[[:space:]]+([a-z-]+).*/\1/p' <<<"$out" | head -n1)
      roce_qos_trust=${sel:-none}
    fi
    # Without an APP-table entry the NIC uses its default map, DSCP d -> priority d/8.
    local d
    for ((d = 0; d < 64; d++)); do roce_qos_dscp2prio[d]=$((d >> 3)); done
    if out=$(roce_run read dcb app show dev "$ifc" dscp-prio 2>&1); then
      while IFS= read -r p; do
        roce_qos_dscp2prio[10#${p%%:*}]=${p#*:}
      done < <(grep -oE '\b[0-9]+:[0-7]\b' <<<"$out")
    fi
  else
    roce_qos_error="neither mlnx_qos (MLNX_OFED / mlnx-tools) nor dcb (iproute2 >= 5.11) is installed"
    return 1
  fi
  if [[ -z $roce_qos_pfc ]]; then
    roce_qos_error="could not read the PFC state of $ifc from $roce_qos_tool"
    return 1
  fi
  return 0
}
