#!/usr/bin/env bash
# ZHybrid (lossy zfp with error feedback on DP gradients, high-rate zfp on TP
# and PP traffic) must not cost convergence: on the 8-rank NeoX-shaped layout
# (dp2 x tp2 x pp2), after the demo's step count (150), the final loss is
# within 2% of the uncompressed run. Both curves are printed.
# Usage: zhybrid_convergence_test.sh CMPI_TRAIN CONFIG WORKDIR [extra --set ...]
set -euo pipefail
exe="$1"; config="$2"; work="$3"; shift 3
rm -rf "$work"; mkdir -p "$work"
run() {
  local name="$1"; shift
  mpirun -np 8 --oversubscribe --bind-to none "$exe" --config "$config" --set run.dir="$work" \
    --set run.name="$name" "$@" > "$work/$name.log" 2>&1 || { cat "$work/$name.log"; exit 1; }
}
run none --set compression.preset=none "$@"
run zhybrid --set compression.preset=zhybrid "$@"
# The dp gradients: an allreduce over dp (ZeRO 0), or a reduce-scatter over
# the zero group (ZeRO 1-3; the zero group's weight all-gathers stay raw).
grep -qE '"dp":\{[^}]*"ratio":[2-9]|"reduce_scatter":\{[^}]*"ratio":[2-9]' \
  "$work/zhybrid/metrics.jsonl" || { echo "FAIL: zhybrid did not compress dp gradients"; exit 1; }
# With ranks grouped into nodes (compression.ranks_per_node), the preset
# compresses only inter-node traffic: tp pairs inside a node stay raw.
if [[ " $* " == *"ranks_per_node"* ]]; then
  tail -1 "$work/zhybrid/metrics.jsonl" | grep -q '"tp":{"calls":[0-9]*,"compressed_calls":0,' \
    || { echo "FAIL: zhybrid compressed intra-node tp traffic"; exit 1; }
fi
loss() { sed -E 's/.*"loss":([^,]+),.*/\1/' "$work/$1/metrics.jsonl"; }
echo "step  none  zhybrid"
paste <(loss none) <(loss zhybrid) | awk '(NR % 10 == 0 || NR == 1) { printf "%4d  %s  %s\n", NR, $1, $2 }'
a=$(loss none | tail -1); b=$(loss zhybrid | tail -1)
awk -v a="$a" -v b="$b" 'BEGIN { d = (b - a) / a; printf "final: none %s, zhybrid %s, relative difference %+.4f\n", a, b, d; exit !(d <= 0.02 && d >= -0.02) }' \
  || { echo "FAIL: zhybrid final loss not within 2% of the uncompressed run"; exit 1; }
echo PASS
