#!/usr/bin/env bash
# The demo config trains end to end on 4 MPI ranks and its loss falls:
# the final loss must be below the first by at least 10% of the gap to the
# data's entropy floor. Usage: demo_run_test.sh CMPI_TRAIN CONFIG RUN_ROOT [--set ...]
set -euo pipefail
exe="$1"; config="$2"; run_root="$3"; shift 3
rm -rf "$run_root/demo"
mpirun -np 4 --oversubscribe --bind-to none "$exe" --config "$config" \
  --set run.dir="$run_root" --set run.name=demo "$@"
summary="$run_root/demo/summary.json"
[ -s "$summary" ] || { echo "FAIL: no $summary"; exit 1; }
[ -s "$run_root/demo/metrics.jsonl" ] || { echo "FAIL: no metrics.jsonl"; exit 1; }
[ -s "$run_root/demo/config.yaml" ] || { echo "FAIL: no resolved config.yaml"; exit 1; }
field() { sed -E "s/.*\"$1\":([-0-9.e+]+).*/\1/" "$summary"; }
first=$(field first_loss); final=$(field final_loss); floor=$(field loss_floor)
steps=$(wc -l < "$run_root/demo/metrics.jsonl")
echo "first loss $first, final loss $final, floor $floor, $steps metric lines"
awk -v a="$first" -v b="$final" -v f="$floor" 'BEGIN { exit !(b < a - 0.1 * (a - f)) }' \
  || { echo "FAIL: loss did not fall enough"; exit 1; }
grep -q '"groups":{"dp"' "$run_root/demo/metrics.jsonl" || { echo "FAIL: no dp stats in metrics"; exit 1; }
echo PASS
