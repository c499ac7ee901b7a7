#!/usr/bin/env bash
# cmpi-plot draws two run directories overlaid into a non-empty PNG; a run
# directory without metrics.jsonl is an error naming the file. The runs are
# written here (3 steps each of real-looking metrics lines, one with val_loss
# and a null loss), so the test needs no training.
# Usage: plot_test.sh WORK_DIR
set -euo pipefail
work="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
/usr/bin/python3 -c "import matplotlib" 2>/dev/null || python3 -c "import matplotlib" 2>/dev/null ||
  { echo "SKIP: no python3-matplotlib"; exit 77; }
rm -rf "$work"; mkdir -p "$work/a" "$work/b" "$work/empty"
for run in a b; do
  for step in 1 2 3; do
    val=""; [ "$step" = 3 ] && val=',"val_loss":2.5'
    loss="$((6 - step)).25"; [ "$run$step" = b2 ] && loss=null
    echo "{\"step\":$step,\"loss\":$loss,\"tokens_per_s\":1000.0$val,\"groups\":{\"dp\":{\"ratio\":1.5},\"tp\":{\"ratio\":2.0}}}"
  done >"$work/$run/metrics.jsonl"
done
"$root/scripts/cmpi-plot" "$work/a" "$work/b" -o "$work/plot.png"
[ -s "$work/plot.png" ] || { echo "FAIL: no PNG"; exit 1; }
head -c 8 "$work/plot.png" | od -An -c | grep -q 'P   N   G' || { echo "FAIL: not a PNG"; exit 1; }
set +e
"$root/scripts/cmpi-plot" "$work/empty" -o "$work/none.png" 2>"$work/err.txt"; code=$?
set -e
[ "$code" != 0 ] && grep -q "$work/empty/metrics.jsonl" "$work/err.txt" && [ ! -e "$work/none.png" ] ||
  { cat "$work/err.txt"; echo "FAIL: missing metrics.jsonl not reported"; exit 1; }
echo PASS
