#!/usr/bin/env bash
# A one-node Slurm (slurmctld + slurmd + munged from Debian's slurm-wlm and
# munge) in a private directory, for tests and for trying the README's srun
# and sbatch commands without a cluster. Nothing is installed system-wide and
# nothing listens beyond loopback ports; the daemons are stopped by pid.
#
#   scripts/local_slurm.sh start DIR   # prints `export SLURM_CONF=DIR/slurm.conf`
#   scripts/local_slurm.sh stop DIR
#
# start exits 77 (the "skip" code of the project's tests) with the reason on
# stderr when the daemons are missing or cannot run here (not root, say).
set -euo pipefail
action="${1:-}"; dir="${2:-}"
[ -n "$action" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

stop() {
  for name in slurmd slurmctld munged; do
    [ -f "$dir/$name.pid" ] || continue
    pid="$(cat "$dir/$name.pid")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/$name.pid"
  done
}

skip() { echo "local_slurm: skipped: $1" >&2; exit 77; }

if [ "$action" = stop ]; then stop; exit 0; fi
[ "$action" = start ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

for tool in munged slurmctld slurmd srun sbatch; do
  command -v "$tool" >/dev/null || skip "$tool not found (apt-get install slurm-wlm munge)"
done
[ "$(id -u)" -eq 0 ] || skip "the daemons need root here (slurmd runs jobs as their user)"

mkdir -p "$dir/state" "$dir/spool"
dir="$(cd "$dir" && pwd)"
host="$(hostname -s)"
cpus="$(nproc)"
memory_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
# Ports from the private range, derived from the directory so two test trees
# on one machine do not collide.
base=$(( 20000 + $(printf '%s' "$dir" | cksum | cut -d' ' -f1) % 20000 ))

dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge.key"
munged --force --socket="$dir/munge.socket" --key-file="$dir/munge.key" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge.seed" ||
  skip "munged did not start (see $dir/munged.log)"

cat > "$dir/slurm.conf" <<CONF
ClusterName=cmpilocal
SlurmctldHost=$host
SlurmctldPort=$base
SlurmdPort=$(( base + 1 ))
AuthType=auth/munge
# cred_expire: also how long Slurm holds a requeued job back (default 120 s).
AuthInfo=socket=$dir/munge.socket,cred_expire=10
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
KillWait=2
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmdSpoolDir=$dir/spool
StateSaveLocation=$dir/state
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$host CPUs=$cpus RealMemory=$memory_mb State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF

export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF" || { stop; skip "slurmctld did not start (see $dir/slurmctld.log)"; }
slurmd -f "$SLURM_CONF" || { stop; skip "slurmd did not start (see $dir/slurmd.log)"; }
for _ in $(seq 100); do
  if sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
    echo "export SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  sleep 0.2
done
state="$(sinfo -h -o '%T %E' 2>&1 || true)"
stop
skip "the node did not become idle within 20 s (sinfo: $state; logs in $dir)"
