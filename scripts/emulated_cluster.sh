#!/usr/bin/env bash
# Emulated slow cluster: K "nodes" as Linux network namespaces on one bridge,
# each behind a rate-limited (and optionally delayed) link, so that MPI jobs
# started with `run` talk over TCP across those links exactly as on a small
# cluster with a slow network. Only the namespaces hold addresses (a private
# test range, 10.77.0.0/24 by default); the bridge has none and no uplink, and
# mpirun itself runs inside node 0, so no packet can leave the emulation.
#
# How it works:
#   up       creates bridge cmpi-br0; for node i, namespace cmpi-node<i> holding
#            eth0 = <prefix>.<i+1>/24, joined to the bridge by a veth pair.
#            Each link is shaped in both directions with an HTB class at the
#            link rate: on eth0 inside the node (upload, plus the netem delay)
#            and on the bridge-side veth (download), like a switch port.
#   run      writes a hostfile of the node addresses and starts mpirun inside
#            cmpi-node0 with OpenMPI's rsh launcher pointed at
#            emulated_cluster_agent.sh, which starts orted in the namespace
#            owning the address. BTL and OOB are pinned to the test subnet and
#            the BTLs to tcp,self, so every rank-to-rank byte crosses the
#            shaped links (ranks on the same node talk over TCP inside it).
#   rate     changes the rate (and, with --delay, the delay) of every node
#            link of the running cluster in place: `tc class change` of the
#            HTB class on both sides of each link, and the netem leaf
#            changed, added or removed; running jobs keep their connections
#            (to emulate a link that slows down or recovers mid-run).
#   down     ends the processes left in the nodes (TERM, then KILL), deletes
#            the namespaces (their veth ends go with them), the bridge and the
#            state directory; safe to call when nothing is up.
#   session  up, run, down in one go; the teardown runs on any exit (trap).
#   check    runs emulated_cluster_whereami.c (built with mpicc) on every
#            node: each rank's namespace and address, gathered over MPI; then
#            times a 64 MiB TCP transfer node0 -> node1 for the achieved rate.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly SCRIPT_DIR
readonly AGENT="$SCRIPT_DIR/emulated_cluster_agent.sh"
readonly BRIDGE=cmpi-br0
readonly NS_PREFIX=cmpi-node
readonly VETH_PREFIX=cmpi-veth
readonly STATE_DIR=/run/cmpi-emulated-cluster
readonly MAX_NODES=250

usage() {
  cat <<'EOF'
usage: emulated_cluster.sh COMMAND ...
  up K [--rate 200mbit] [--delay 0ms] [--subnet 10.77.0]
        create K nodes (network namespaces cmpi-node0..K-1) on bridge cmpi-br0;
        every node link is limited to --rate in each direction and delays the
        node's outgoing packets by --delay (tc rate/time syntax)
  run K R [MPIRUN-OPTION ...] -- COMMAND [ARG ...]
        run COMMAND under mpirun on K nodes x R ranks per node over TCP
  session K R [--rate RATE] [--delay DELAY] [--subnet PREFIX] [MPIRUN-OPTION ...] -- COMMAND ...
        up + run + down; the cluster is torn down whatever happens
  check K
        print every rank's namespace and address (K nodes x 1 rank) and the
        achieved node0 -> node1 rate of a timed 64 MiB TCP transfer
  rate RATE [--delay DELAY]
        change every node link of the running cluster to RATE each way (and
        the uplink delay to DELAY) in place, while jobs run
  status
        show the nodes, their addresses and their qdiscs
  down  remove every namespace, veth, bridge and state file this script made
Needs root, iproute2 (ip, tc) and, for run/session/check, OpenMPI's mpirun.
EOF
}

die() {
  echo "emulated_cluster: $*" >&2
  exit 1
}

require_root_and_tools() {
  [[ ${EUID:-1} -eq 0 ]] || die "must run as root (creates network namespaces, a bridge and tc qdiscs)"
  local tool
  for tool in ip tc "$@"; do
    command -v "$tool" >/dev/null 2>&1 || die "required tool '$tool' is not installed or not on PATH"
  done
}

require_count() {  # require_count NAME VALUE MIN MAX
  [[ $2 =~ ^[0-9]+$ ]] || die "$1 must be a positive integer, got '$2'"
  ((10#$2 >= $3 && 10#$2 <= $4)) || die "$1 must be in [$3, $4], got '$2'"
}

state_value() {  # state_value KEY -> value recorded by `up`
  [[ -f $STATE_DIR/config ]] || die "no emulated cluster is up (run: emulated_cluster.sh up K)"
  sed -n "s/^$1=//p" "$STATE_DIR/config"
}

# The shaping of one link direction: an HTB class at the link rate, with a
# netem leaf when a delay is asked for (netem's own queue then holds the
# packets in flight; without delay the leaf stays HTB's default pfifo).
shape() {  # shape NETNS-OR-EMPTY DEV RATE DELAY
  local ns_exec=() dev=$2 rate=$3 delay=$4
  [[ -n $1 ]] && ns_exec=(ip netns exec "$1")
  "${ns_exec[@]}" tc qdisc add dev "$dev" root handle 1: htb default 10
  "${ns_exec[@]}" tc class add dev "$dev" parent 1: classid 1:10 htb rate "$rate" ceil "$rate" \
    quantum 60000
  if [[ $delay != 0 && $delay != 0ms && $delay != 0us ]]; then
    "${ns_exec[@]}" tc qdisc add dev "$dev" parent 1:10 handle 10: netem delay "$delay" limit 100000 ||
      die "--delay needs tc's netem qdisc (kernel module sch_netem), which this kernel does not provide"
  fi
}

# Sets a node link's uplink delay: changes, adds or removes its netem leaf.
set_delay() {  # set_delay NETNS DEV DELAY
  local ns=$1 dev=$2 delay=$3 has_netem=0
  ip netns exec "$ns" tc qdisc show dev "$dev" | grep -q '^qdisc netem 10:' && has_netem=1
  if [[ $delay == 0 || $delay == 0ms || $delay == 0us || $delay == 0s ]]; then
    ((has_netem)) && ip netns exec "$ns" tc qdisc del dev "$dev" parent 1:10 handle 10:
    return 0
  fi
  local verb=add
  ((has_netem)) && verb=change
  ip netns exec "$ns" tc qdisc "$verb" dev "$dev" parent 1:10 handle 10: netem delay "$delay" \
    limit 100000 ||
    die "--delay needs tc's netem qdisc (kernel module sch_netem), which this kernel does not provide"
}

cmd_rate() {
  (($# >= 1)) || die "rate: usage: rate RATE [--delay DELAY]"
  local rate=$1 delay=""
  shift
  while (($#)); do
    case $1 in
      --delay) delay=${2:?--delay needs a value}; shift 2 ;;
      *) die "rate: unknown option '$1'" ;;
    esac
  done
  require_root_and_tools
  [[ $rate =~ ^[0-9.]+([kmg]?bit|[kmg]?bps)$ ]] || die "rate must look like 200mbit or 1gbit, got '$rate'"
  [[ -z $delay || $delay =~ ^[0-9.]+(us|ms|s)?$ ]] || die "--delay must look like 0ms or 2ms, got '$delay'"
  local nodes i ns
  nodes=$(state_value nodes)
  for ((i = 0; i < nodes; ++i)); do
    ns=$NS_PREFIX$i
    ip netns exec "$ns" tc class change dev eth0 parent 1: classid 1:10 htb rate "$rate" \
      ceil "$rate" quantum 60000
    tc class change dev "$VETH_PREFIX$i" parent 1: classid 1:10 htb rate "$rate" ceil "$rate" \
      quantum 60000
  done
  sed -i "s/^rate=.*/rate=$rate/" "$STATE_DIR/config"
  # Delays after every rate: a kernel without netem fails here with the
  # rates already consistent on every link.
  if [[ -n $delay ]]; then
    for ((i = 0; i < nodes; ++i)); do set_delay "$NS_PREFIX$i" eth0 "$delay"; done
    sed -i "s/^delay=.*/delay=$delay/" "$STATE_DIR/config"
  fi
  echo "emulated cluster: $nodes node links now $rate each way${delay:+, +$delay on each uplink}"
}

cmd_up() {
  (($# >= 1)) || die "up: missing K (number of nodes)"
  local nodes=$1 rate=200mbit delay=0ms prefix=10.77.0
  shift
  while (($#)); do
    case $1 in
      --rate) rate=${2:?--rate needs a value}; shift 2 ;;
      --delay) delay=${2:?--delay needs a value}; shift 2 ;;
      --subnet) prefix=${2:?--subnet needs a value like 10.77.0}; shift 2 ;;
      *) die "up: unknown option '$1'" ;;
    esac
  done
  require_root_and_tools
  require_count K "$nodes" 1 "$MAX_NODES"
  [[ $prefix =~ ^(10|192\.168|172\.(1[6-9]|2[0-9]|3[01]))(\.[0-9]{1,3}){0,2}$ &&
     $(tr -cd . <<<"$prefix" | wc -c) -eq 2 ]] ||
    die "--subnet must be the first three octets of a private /24 (e.g. 10.77.0), got '$prefix'"
  [[ $rate =~ ^[0-9.]+([kmg]?bit|[kmg]?bps)$ ]] || die "--rate must look like 200mbit or 1gbit, got '$rate'"
  [[ $delay =~ ^[0-9.]+(us|ms|s)?$ ]] || die "--delay must look like 0ms or 2ms, got '$delay'"
  if [[ -e $STATE_DIR ]] || ip link show "$BRIDGE" >/dev/null 2>&1; then
    die "an emulated cluster is already up; run 'emulated_cluster.sh down' first"
  fi
  if ip -4 route show | grep -q "^$prefix\.0/24"; then
    die "subnet $prefix.0/24 is already routed in the root namespace; pick another with --subnet"
  fi

  # A half-built cluster is worse than none: undo everything on any failure.
  # (An EXIT trap, because set -e exits without running ERR traps set here
  # when the failure happens inside a function.)
  trap 'echo "emulated_cluster: up failed, tearing down" >&2; cmd_down >/dev/null 2>&1 || true' EXIT
  mkdir -p "$STATE_DIR"
  printf 'nodes=%s\nrate=%s\ndelay=%s\nprefix=%s\n' "$nodes" "$rate" "$delay" "$prefix" \
    >"$STATE_DIR/config"
  ip link add "$BRIDGE" type bridge
  ip link set "$BRIDGE" up
  local i ns veth
  for ((i = 0; i < nodes; ++i)); do
    ns=$NS_PREFIX$i
    veth=$VETH_PREFIX$i
    ip netns add "$ns"
    ip link add "$veth" type veth peer name "cmpi-peer$i"
    ip link set "cmpi-peer$i" netns "$ns"
    ip netns exec "$ns" ip link set "cmpi-peer$i" name eth0
    ip netns exec "$ns" ip addr add "$prefix.$((i + 1))/24" dev eth0
    ip netns exec "$ns" ip link set lo up
    ip netns exec "$ns" ip link set eth0 up
    ip link set "$veth" master "$BRIDGE"
    ip link set "$veth" up
    shape "$ns" eth0 "$rate" "$delay"
    shape "" "$veth" "$rate" 0ms
    echo "$prefix.$((i + 1)) $ns" >>"$STATE_DIR/nodes"
  done
  trap - EXIT
  echo "emulated cluster up: $nodes nodes ($NS_PREFIX""0..$((nodes - 1))), $prefix.1-$prefix.$nodes," \
    "links $rate each way, +$delay on each node's uplink"
}

cmd_down() {
  require_root_and_tools
  local ns
  # Deleting a namespace does not end the processes inside it: a job whose
  # launcher was killed (a benchmark stopped mid-cell) would leave its ranks
  # running on the host's cores. End them first, TERM then KILL.
  local namespaces pids
  namespaces=$(ip netns list | awk '{print $1}' | grep "^${NS_PREFIX}[0-9]*$" || true)
  for ns in $namespaces; do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [[ -z $pids ]] || kill -TERM $pids 2>/dev/null || true
  done
  for ns in $namespaces; do
    local tries=0
    while [[ -n $(ip netns pids "$ns" 2>/dev/null) ]] && ((tries++ < 20)); do sleep 0.1; done
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [[ -z $pids ]] || kill -KILL $pids 2>/dev/null || true
    ip netns delete "$ns"
  done
  # veths normally vanish with their namespace; remove any left by a broken up.
  local veth
  for veth in $(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' |
                grep "^${VETH_PREFIX}[0-9]*$" || true); do
    ip link delete "$veth" 2>/dev/null || true
  done
  if ip link show "$BRIDGE" >/dev/null 2>&1; then ip link delete "$BRIDGE"; fi
  rm -rf "$STATE_DIR"
  echo "emulated cluster down"
}

cmd_status() {
  require_root_and_tools
  if [[ ! -f $STATE_DIR/config ]]; then
    echo "no emulated cluster is up"
    return 0
  fi
  cat "$STATE_DIR/config"
  local addr ns
  while read -r addr ns; do
    echo "== $ns ($addr)"
    ip netns exec "$ns" tc qdisc show dev eth0
  done <"$STATE_DIR/nodes"
}

# Runs mpirun inside node 0 across the first K nodes, R ranks each.
run_mpi() {  # run_mpi K R MPIRUN-OPTIONS... -- COMMAND...
  local nodes=$1 per_node=$2
  shift 2
  local mpi_opts=()
  while (($#)) && [[ $1 != -- ]]; do
    mpi_opts+=("$1")
    shift
  done
  (($#)) || die "run: missing '--' before the command"
  shift
  (($#)) || die "run: missing the command after '--'"
  require_root_and_tools mpirun
  require_count K "$nodes" 1 "$MAX_NODES"
  require_count R "$per_node" 1 1024
  local up_nodes prefix
  up_nodes=$(state_value nodes)
  prefix=$(state_value prefix)
  ((nodes <= up_nodes)) || die "run: K=$nodes but only $up_nodes nodes are up"
  local hostfile="$STATE_DIR/hostfile.$$"
  head -n "$nodes" "$STATE_DIR/nodes" | awk -v r="$per_node" '{print $1 " slots=" r}' >"$hostfile"
  # All nodes share this machine's cores: with more ranks than cores, ranks
  # that busy-poll starve the ones holding the data, so let idle ranks yield.
  # CMPI_CLUSTER_WAIT picks what a yield is (emulated_cluster_sleep_wait.c):
  # yield (stays runnable, takes turns on the cores with the ranks that
  # compute), sleep (a 50 us sleep), or backoff (yields for the first
  # CMPI_CLUSTER_WAIT_YIELD_US of a wait, default 1000, then sleeps);
  # docs/emulated_cluster.md has what each measured.
  local yield_opts=()
  local wait_mode=${CMPI_CLUSTER_WAIT:-yield}
  case $wait_mode in
  yield | sleep | backoff) ;;
  *) die "run: CMPI_CLUSTER_WAIT=$wait_mode: expected yield, sleep or backoff" ;;
  esac
  if ((nodes * per_node > $(nproc))); then
    yield_opts=(--mca mpi_yield_when_idle 1)
    if [[ $wait_mode != yield ]]; then
      local shim="$STATE_DIR/sleep_wait.so" source="$SCRIPT_DIR/emulated_cluster_sleep_wait.c"
      if [[ ! -f $shim || $source -nt $shim ]]; then
        cc -O2 -shared -fPIC -o "$shim" "$source" ||
          die "run: could not build $source (CMPI_CLUSTER_WAIT=$wait_mode)"
      fi
      local yield_us=${CMPI_CLUSTER_WAIT_YIELD_US:-1000}
      [[ $wait_mode == sleep ]] && yield_us=0
      [[ $yield_us =~ ^[0-9]+$ ]] ||
        die "run: CMPI_CLUSTER_WAIT_YIELD_US=$yield_us: expected microseconds (a whole number)"
      yield_opts+=(-x "LD_PRELOAD=$shim" -x "CMPI_CLUSTER_WAIT_YIELD_US=$yield_us")
    fi
  fi
  local status=0
  # OpenMPI's own TCP settings (64 KiB eager limit): the compressed
  # algorithms keep their transfers moving while they encode and decode
  # (comm/algorithms/progress.h), so they need no larger eager limit. `--mca`
  # options given to `run` (or OMPI_MCA_* in the environment) still apply.
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 CMPI_EMULATED_CLUSTER_STATE=$STATE_DIR \
    OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} \
    ip netns exec "${NS_PREFIX}0" unshare --uts sh -c 'hostname "$0" && exec "$@"' "${NS_PREFIX}0" mpirun \
    --hostfile "$hostfile" -np $((nodes * per_node)) --map-by "ppr:$per_node:node" --bind-to none \
    --mca plm_rsh_agent "$AGENT" --mca plm_rsh_no_tree_spawn 1 \
    --mca btl tcp,self --mca btl_tcp_if_include "$prefix.0/24" \
    --mca oob_tcp_if_include "$prefix.0/24" "${yield_opts[@]}" \
    "${mpi_opts[@]}" "$@" || status=$?
  rm -f "$hostfile"
  return $status
}

cmd_session() {
  (($# >= 2)) || die "session: usage: session K R [--rate R] [--delay D] [--subnet P] [MPIRUN-OPTION ...] -- COMMAND ..."
  local nodes=$1 per_node=$2
  shift 2
  local up_opts=() mpi_args=()
  while (($#)) && [[ $1 != -- ]]; do
    case $1 in
      --rate | --delay | --subnet) up_opts+=("$1" "${2:?$1 needs a value}"); shift 2 ;;
      *) mpi_args+=("$1"); shift ;;
    esac
  done
  trap 'exit 130' INT TERM
  cmd_up "$nodes" "${up_opts[@]}"  # tears down itself if it fails
  trap 'cmd_down >/dev/null 2>&1 || true' EXIT
  run_mpi "$nodes" "$per_node" "${mpi_args[@]}" "$@"
}

# The rate check uses a plain TCP stream between two namespaces (no iperf
# needed): the receiver in node1 times from the first to the last byte.
cmd_check() {
  (($# == 1)) || die "check: usage: check K"
  local nodes=$1
  require_root_and_tools mpirun python3
  require_count K "$nodes" 1 "$MAX_NODES"
  echo "== where each rank runs"
  if command -v mpicc >/dev/null 2>&1; then
    # A real MPI program: the lines reach rank 0 through MPI_Gather.
    mpicc -O1 -o "$STATE_DIR/whereami" "$SCRIPT_DIR/emulated_cluster_whereami.c" ||
      die "check: could not compile $SCRIPT_DIR/emulated_cluster_whereami.c"
    run_mpi "$nodes" 1 -- "$STATE_DIR/whereami"
  else
    # shellcheck disable=SC2016  # expanded by each rank's shell
    run_mpi "$nodes" 1 -- sh -c 'echo "rank $OMPI_COMM_WORLD_RANK: namespace $(ip netns identify) address $(ip -4 -o addr show dev eth0 | awk "{print \$4}")"' |
      sort -n -k2
  fi
  ((nodes >= 2)) || return 0
  local prefix
  prefix=$(state_value prefix)
  echo "== achieved rate ${NS_PREFIX}0 -> ${NS_PREFIX}1 (64 MiB over TCP)"
  ip netns exec "${NS_PREFIX}1" python3 -c '
import socket, sys, time
server = socket.socket(); server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind((sys.argv[1], 5077)); server.listen(1); server.settimeout(30)
conn, _ = server.accept(); total = 0; start = None
while True:
    chunk = conn.recv(1 << 20)
    if not chunk: break
    if start is None: start = time.perf_counter()
    total += len(chunk)
elapsed = time.perf_counter() - start
print(f"received {total / 2**20:.0f} MiB in {elapsed:.2f} s = {total * 8 / elapsed / 1e6:.1f} Mbit/s")
' "$prefix.2" &
  local receiver=$!
  sleep 0.5
  ip netns exec "${NS_PREFIX}0" python3 -c '
import socket, sys
sock = socket.create_connection((sys.argv[1], 5077), timeout=30)
block = bytes(1 << 20)
for _ in range(64): sock.sendall(block)
sock.close()
' "$prefix.2"
  wait "$receiver"
}

main() {
  (($#)) || { usage; exit 2; }
  local command=$1
  shift
  case $command in
    up) cmd_up "$@" ;;
    down) cmd_down ;;
    run)
      (($# >= 2)) || die "run: usage: run K R [MPIRUN-OPTION ...] -- COMMAND ..."
      run_mpi "$@"
      ;;
    session) cmd_session "$@" ;;
    check) cmd_check "$@" ;;
    rate) cmd_rate "$@" ;;
    status) cmd_status ;;
    -h | --help | help) usage ;;
    *) usage >&2; die "unknown command '$command'" ;;
  esac
}

main "$@"
