#!/usr/bin/env bash
# The ResNet configs through cmpi-train: configs/resnet-dp2pp2.yaml trains on
# 4 ranks (dp2 x pp2, ZeRO 1) with the loss falling and accuracy and images/s
# in the progress line, metrics.jsonl and summary.json; a ResNet config the
# trainer cannot run ends every rank with exit 2 and one message naming the
# key. Usage: resnet_cli_test.sh CMPI_TRAIN CONFIG RUN_ROOT
set -euo pipefail
exe="$1"; config="$2"; run_root="$3"
run() { mpirun -np 4 --oversubscribe --bind-to none "$exe" --config "$config" \
  --set run.dir="$run_root" --set run.name=resnet "$@"; }
rm -rf "$run_root/resnet"
out=$(run --set training.steps=12 --set log.every=4)
echo "$out" | tail -4
echo "$out" | grep -qE '^step 12/12 \| loss [0-9.]+ \| lr .* \| acc [0-9.]+ \| [0-9]+ img/s' \
  || { echo "FAIL: no progress line with accuracy and images/s"; exit 1; }
summary="$run_root/resnet/summary.json"
[ -s "$summary" ] || { echo "FAIL: no $summary"; exit 1; }
field() { sed -E "s/.*\"$1\":([-0-9.e+]+).*/\1/" "$summary"; }
first=$(field first_loss); final=$(field final_loss); accuracy=$(field final_accuracy)
echo "first loss $first, final loss $final, final accuracy $accuracy"
awk -v a="$first" -v b="$final" 'BEGIN { exit !(b < 0.9 * a) }' \
  || { echo "FAIL: loss did not fall"; exit 1; }
[ "$(wc -l < "$run_root/resnet/metrics.jsonl")" -eq 12 ] || { echo "FAIL: metric lines"; exit 1; }
grep -q '"accuracy":[0-9.]*,"images_per_s":[0-9.]*' "$run_root/resnet/metrics.jsonl" \
  || { echo "FAIL: no accuracy/images_per_s in metrics.jsonl"; exit 1; }
grep -q '"pp":{' "$run_root/resnet/metrics.jsonl" || { echo "FAIL: no pp stats"; exit 1; }

set +e
err=$(run --set parallel.stage_layers=[2,2] 2>&1 >/dev/null); code=$?
set -e
echo "bad stage_layers: exit $code: $err"
[ "$code" -eq 2 ] || { echo "FAIL: exit $code, expected 2"; exit 1; }
echo "$err" | grep -q "parallel.stage_layers: \[2, 2\]: .*model.depth 11 makes 5 layers" \
  || { echo "FAIL: key and layer count not named"; exit 1; }
[ "$(echo "$err" | grep -c "parallel.stage_layers")" -eq 1 ] || { echo "FAIL: not one message"; exit 1; }
echo PASS
