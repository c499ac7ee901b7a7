#!/usr/bin/env bash
# scripts/demo.sh end to end on the tiny config, briefly and on this machine
# (no setup, no build, no emulated cluster): both runs (uncompressed and
# zhybrid) leave their run directories, the overlay plot is a PNG, and the
# outcome line reports fewer bytes for zhybrid.
# Usage: demo_script_test.sh BUILD_DIR CONFIG RUN_ROOT
set -euo pipefail
build="$1"; config="$2"; run_root="$3"
root="$(cd "$(dirname "$0")/../.." && pwd)"
/usr/bin/python3 -c "import matplotlib" 2>/dev/null || python3 -c "import matplotlib" 2>/dev/null ||
  { echo "SKIP: no python3-matplotlib (the demo plots)"; exit 77; }
rm -rf "$run_root"; mkdir -p "$run_root"
CMPI_DEMO_NO_BUILD=1 CMPI_DEMO_CLUSTER=off CMPI_BUILD_DIR="$build" \
  bash "$root/scripts/demo.sh" "$config" --set run.dir="$run_root" --set run.name=demo \
  --set training.steps=6 --set training.warmup_steps=2 --set log.every=100 | tee "$run_root/out.txt"
for run in demo_none demo_zhybrid; do
  [ -s "$run_root/$run/summary.json" ] || { echo "FAIL: no $run_root/$run/summary.json"; exit 1; }
done
grep -q "^demo: no emulated cluster: CMPI_DEMO_CLUSTER=off" "$run_root/out.txt" ||
  { echo "FAIL: no line saying why there is no emulated cluster"; exit 1; }
line=$(grep "^demo: zhybrid .* fewer bytes" "$run_root/out.txt") || { echo "FAIL: no outcome line"; exit 1; }
factor=$(sed -E 's/.* sending ([0-9.]+)x fewer bytes.*/\1/' <<<"$line")
awk -v f="$factor" 'BEGIN { exit !(f > 2) }' || { echo "FAIL: zhybrid sent only ${factor}x fewer bytes"; exit 1; }
head -c 8 "$run_root/demo_demo.png" | od -An -c | grep -q 'P   N   G' || { echo "FAIL: no PNG plot"; exit 1; }
echo PASS
