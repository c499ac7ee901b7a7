#!/usr/bin/env bash
# Quick start #1: set up, build, prepare the real-text dataset (the King
# James Bible, byte tokens) and train the same small GPT twice on 4 MPI ranks:
# uncompressed (compression.preset none) and with the zhybrid preset (zfp at
# 8 bits per value with error feedback on the dp gradients; docs/policy.md).
# Then one plot overlays both runs and one line says what compression did.
#   scripts/demo.sh                       # configs/real_text.yaml
#   scripts/demo.sh configs/tiny.yaml     # the synthetic Markov-chain demo
# Extra arguments after the config go to cmpi-train (e.g. --set training.steps=50).
#
# Where it can (root, network namespaces, tc, no emulated cluster already up),
# both runs go over an emulated 2-node cluster whose links are shaped to
# CMPI_DEMO_LINK (default 200mbit; scripts/emulated_cluster.sh), so that
# tokens/s shows what fewer bytes buy on a slow link. Elsewhere both run on
# this machine's shared memory, and the output says why in one line.
# Environment:
#   CMPI_RANKS          ranks (default 4; the emulated cluster needs an even count)
#   CMPI_DEMO_LINK      emulated link rate, tc syntax (default 200mbit)
#   CMPI_DEMO_CLUSTER   auto (default) | off: never build the emulated cluster
#   CMPI_DEMO_NO_BUILD  1: skip scripts/setup.sh and scripts/build.sh (tests)
#   CMPI_BUILD_DIR      build directory (default build/)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
if [ "${CMPI_DEMO_NO_BUILD:-0}" != 1 ]; then
  "$ROOT/scripts/setup.sh"
  "$ROOT/scripts/build.sh"
fi
source "$ROOT/scripts/mpi_env.sh"
BUILD="${CMPI_BUILD_DIR:-$ROOT/build}"
TRAIN="$BUILD/trainer/cmpi-train"
[ -x "$TRAIN" ] || { echo "demo: no $TRAIN: build first (scripts/build.sh)" >&2; exit 1; }

config="${1:-configs/real_text.yaml}"
[ -f "$config" ] || { echo "demo: no config file $config" >&2; exit 1; }
shift $(($# > 0 ? 1 : 0))
if grep -q "kjv_bytes" "$config"; then CMPI_DATA="$BUILD/data/cmpi-data" "$ROOT/scripts/prepare_real_text.sh"; fi

ranks="${CMPI_RANKS:-4}"
link="${CMPI_DEMO_LINK:-200mbit}"
# The run directory and name, as the trainer resolves them (with any --set).
resolved=$("$TRAIN" --config "$config" "$@" --print-config)
run_dir=$(awk '/^run:/ {r = 1; next} /^[^ ]/ {r = 0} r && $1 == "dir:" {print $2}' <<<"$resolved")
run_name=$(awk '/^run:/ {r = 1; next} /^[^ ]/ {r = 0} r && $1 == "name:" {print $2}' <<<"$resolved")
[ -n "$run_dir" ] && [ -n "$run_name" ] || { echo "demo: could not read run.dir and run.name of $config" >&2; exit 1; }

# Can this machine build the emulated cluster? Each "no" names its reason.
cluster_reason=""
if [ "${CMPI_DEMO_CLUSTER:-auto}" = off ]; then
  cluster_reason="CMPI_DEMO_CLUSTER=off"
elif [ "$(id -u)" -ne 0 ]; then
  cluster_reason="not root (it creates network namespaces)"
elif ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
  cluster_reason="no ip/tc (package iproute2)"
elif [ $((ranks % 2)) -ne 0 ]; then
  cluster_reason="CMPI_RANKS=$ranks is odd (2 nodes need an even count)"
elif ip link show cmpi-br0 >/dev/null 2>&1 || [ -e /run/cmpi-emulated-cluster ]; then
  cluster_reason="an emulated cluster is already up (another job's?); left alone"
elif ! probe_err=$(ip netns add "cmpi-demo-probe$$" 2>&1); then
  cluster_reason="network namespaces not permitted here ($probe_err)"
else
  ip netns delete "cmpi-demo-probe$$"
fi

cluster_up=0
if [ -z "$cluster_reason" ]; then
  # Whatever ends the demo (an error, Ctrl-C), the cluster it built goes.
  trap 'exit 130' INT TERM
  trap '[ "$cluster_up" = 1 ] && "$ROOT/scripts/emulated_cluster.sh" down >/dev/null 2>&1 || true' EXIT
  if up_log=$("$ROOT/scripts/emulated_cluster.sh" up 2 --rate "$link" 2>&1); then
    cluster_up=1
    echo "demo: $up_log"
  else
    cluster_reason="scripts/emulated_cluster.sh up failed: $(tail -n 1 <<<"$up_log")"
  fi
fi
if [ "$cluster_up" = 1 ]; then
  where="an emulated 2-node cluster, $link links"
else
  where="this machine (shared memory)"
  echo "demo: no emulated cluster: $cluster_reason; both runs on $where, so tokens/s shows no slow link"
fi

train() {  # train NAME [--set ...]: one run of the config as run NAME
  local name=$1
  shift
  echo "demo: training $name on $ranks ranks, $where"
  if [ "$cluster_up" = 1 ]; then
    "$ROOT/scripts/emulated_cluster.sh" run 2 $((ranks / 2)) -- \
      "$TRAIN" --config "$config" "$@" --set run.name="$name"
  else
    mpirun -np "$ranks" --oversubscribe --bind-to none \
      "$TRAIN" --config "$config" "$@" --set run.name="$name"
  fi
}

# One model, one data order, one seed: only the wire format differs.
# preset_locality any: the preset also compresses ranks of one node (by
# default it compresses inter-node traffic only; docs/policy.md).
train "${run_name}_none" "$@" --set compression.preset=none
train "${run_name}_zhybrid" "$@" --set compression.preset=zhybrid \
  --set compression.preset_locality=any
if [ "$cluster_up" = 1 ]; then
  "$ROOT/scripts/emulated_cluster.sh" down >/dev/null
  cluster_up=0
fi

plain="$run_dir/${run_name}_none"
zhybrid="$run_dir/${run_name}_zhybrid"
plot="$run_dir/${run_name}_demo.png"
"$ROOT/scripts/cmpi-plot" "$plain" "$zhybrid" -o "$plot"

# The outcome in one line, from the two summary.json files.
field() {  # field SUMMARY KEY: the first number after "KEY": (top level first)
  sed -E "s/.*\"$2\":([-0-9.e+]+).*/\1/;t;s/.*/nan/" "$1/summary.json"
}
dp_field() {  # dp_field SUMMARY KEY: KEY of the dp group's totals
  sed -E "s/.*\"groups\":\\{\"dp\":\\{[^}]*\"$2\":([0-9.e+]+).*/\1/;t;s/.*/nan/" "$1/summary.json"
}
loss_a=$(field "$plain" final_loss); loss_b=$(field "$zhybrid" final_loss)
val_a=$(field "$plain" val_loss); val_b=$(field "$zhybrid" val_loss)
wire_a=$(dp_field "$plain" wire_bytes); wire_b=$(dp_field "$zhybrid" wire_bytes)
tps_a=$(field "$plain" tokens_per_s); tps_b=$(field "$zhybrid" tokens_per_s)
awk -v la="$loss_a" -v lb="$loss_b" -v va="$val_a" -v vb="$val_b" -v wa="$wire_a" -v wb="$wire_b" \
    -v ta="$tps_a" -v tb="$tps_b" -v where="$where" 'BEGIN {
  # Compare the validation loss where the config has one, else the last training loss.
  if (va != "nan" && vb != "nan") { a = va; b = vb; what = "validation loss" }
  else { a = la; b = lb; what = "loss" }
  d = b - a; if (d < 0) d = -d
  verdict = d <= 0.02 * a ? "reaches the same" : "ends at a different"
  printf "demo: zhybrid %s %s (%.2f vs %.2f uncompressed) sending %.1fx fewer bytes (%.0f MB vs %.0f MB of dp traffic)\n", verdict, what, b, a, wa / wb, wb / 1e6, wa / 1e6
  printf "demo: tokens/s %.0f zhybrid vs %.0f uncompressed, on %s\n", tb, ta, where
}'
echo "demo: plot of both runs (loss, validation loss, tokens/s, wire ratio): $plot"
echo "demo: runs in $plain and $zhybrid (metrics.jsonl, summary.json)"
# A config that checkpoints (configs/real_text.yaml, at its last step) leaves a model to read.
if [ -d "$plain/checkpoints" ]; then
  echo "demo: text from the trained model: $BUILD/generate/cmpi-generate --model $plain --prompt 'And God said' --max-new-tokens 200 --temperature 0.8 --top-k 40"
fi
