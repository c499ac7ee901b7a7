#!/usr/bin/env bash
# Remote-shell agent of the emulated cluster (see emulated_cluster.sh): mpirun
# calls it as `agent HOST COMMAND...` the way it would call ssh. HOST must be
# one of the emulated nodes' addresses (or namespace names); the command then
# runs through `sh -c` inside that node's network namespace, with the
# caller's environment. Any other host is refused, so the launcher can never
# reach a machine outside the emulation.
set -euo pipefail

state_dir=${CMPI_EMULATED_CLUSTER_STATE:-/run/cmpi-emulated-cluster}
# ssh-style options before the host name are accepted and ignored.
while (($#)) && [[ $1 == -* ]]; do shift; done
(($# >= 2)) || { echo "emulated_cluster_agent: usage: agent HOST COMMAND..." >&2; exit 255; }
host=$1
shift

[[ -f $state_dir/nodes ]] || {
  echo "emulated_cluster_agent: no emulated cluster is up ($state_dir/nodes missing)" >&2
  exit 255
}
namespace=$(awk -v h="$host" '$1 == h || $2 == h {print $2; exit}' "$state_dir/nodes")
[[ -n $namespace ]] || {
  echo "emulated_cluster_agent: '$host' is not a node of the emulated cluster" >&2
  exit 255
}
# Like ssh, hand the words to a shell as one command line. The node also gets
# its own host name (a UTS namespace): MPI tells nodes apart by host name, so
# MPI_COMM_TYPE_SHARED and the node-locality policy rules see one node per
# namespace, as on a real cluster.
exec ip netns exec "$namespace" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$namespace" "$*"
