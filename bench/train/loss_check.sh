#!/usr/bin/env bash
# Convergence under compression: trains the benchmark GPT (bench/train/gpt-3m.yaml) for STEPS
# steps on dp4 with each preset and prints the final losses and their relative difference to
# the uncompressed run. Each rank is its own node (compression.ranks_per_node=1), so the presets
# compress the dp traffic as they would across 4 nodes; the network is this machine's loopback,
# since the loss does not depend on the link rate.
# Usage: bench/train/loss_check.sh [BUILD_DIR] [STEPS] [POLICY ...]   (default: build 200 zhybrid mzhybrid)
# A POLICY is a preset name or, as run.sh's --policy-def, LABEL='KEY=VALUE;KEY=VALUE' (--set
# overrides), e.g. psgd4='compression.rules=[{match: {group: dp, op: allreduce, role: gradient},
# codec: {name: powersgd, rank: 4}}]'.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$ROOT/build}"; steps="${2:-200}"; shift $(( $# >= 2 ? 2 : $# ))
presets=("$@"); ((${#presets[@]})) || presets=(zhybrid mzhybrid)
source "$ROOT/scripts/mpi_env.sh"
work=$(mktemp -d /tmp/cmpi-loss-check.XXXXXX)
final_loss() { sed -E 's/.*"final_loss":([^,]+),.*/\1/' "$work/$1/summary.json"; }
echo "# loss_check: $steps steps, dp4, bench/train/gpt-3m.yaml, $(date -u '+%F %T UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
labels=()
for policy in none "${presets[@]}"; do
  sets=()
  if [[ "$policy" == *=* ]]; then
    label="${policy%%=*}"
    IFS=';' read -r -a items <<<"${policy#*=}"
    for item in "${items[@]}"; do [[ -n "$item" ]] && sets+=(--set "$item"); done
  else
    label="$policy"; sets=(--set compression.preset="$policy")
  fi
  labels+=("$label")
  mpirun -np 4 --oversubscribe --bind-to none "$build/trainer/cmpi-train" \
    --config "$ROOT/bench/train/gpt-3m.yaml" --set training.steps="$steps" \
    "${sets[@]}" --set compression.ranks_per_node=1 \
    --set run.dir="$work" --set run.name="$label" --set log.every=50 >"$work/$label.log" 2>&1 \
    || { cat "$work/$label.log"; exit 1; }
done
base=$(final_loss none)
for label in "${labels[@]}"; do
  awk -v p="$label" -v a="$base" -v b="$(final_loss "$label")" \
    'BEGIN { printf "%-9s final loss %.4f  vs none %+.2f %%\n", p, b, 100 * (b - a) / a }'
done
