#!/usr/bin/env bash
# Memory and throughput of the ResNet trainer's model-parallel layouts on large images: layer
# parallelism (pp4), spatial + layer parallelism (sp2 x pp2 with both stages on tiles, sp4 with
# the whole model on tiles) and spatial + bi-directional pipeline (sp2 x pp2 bidirectional). All
# on 4 ranks, the same model, global batch and micro-batch size. Per layout: images/s (from
# summary.json) and every rank's peak resident memory (max RSS, /usr/bin/time), whose largest is
# what a rank must have, and rank 0's activation estimate (the trainer's, from the layer plan and
# the schedule's micro-batches in flight: memory.activation_estimate_bytes in metrics.jsonl; rank 0
# holds the first, full-resolution stage). Memory is the robust figure on a shared machine; images/s is printed
# with the load average and means little when ranks share cores.
# Usage: bench/cnn/run.sh [BUILD_DIR] [IMAGE_SIZE] [STEPS]   (default: build 128 4)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$ROOT/build}"; size="${2:-128}"; steps="${3:-4}"
source "$ROOT/scripts/mpi_env.sh"
work=$(mktemp -d /tmp/cmpi-cnn-bench.XXXXXX)
common=(--config "$ROOT/configs/resnet-tiny.yaml" --set model.image_size="$size"
        --set model.depth=11 --set model.width=8 --set training.steps="$steps"
        --set training.global_batch=8 --set training.micro_batch=2 --set training.warmup_steps=1
        --set log.every=1000 --set log.metrics_jsonl=true --set eval.every=0 --set run.dir="$work")
echo "# bench/cnn/run.sh: ResNet-11 width 8, ${size}x${size}x3 images, global batch 8 in micro-batches of 2, $steps steps, 4 ranks"
echo "# $(date -u '+%F %T UTC'), $(getconf _NPROCESSORS_ONLN) cores online ($(nproc) usable), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-26s %9s %12s %12s %18s\n' layout images/s "max RSS MiB" "min RSS MiB" "rank-0 act. MiB"
run() {  # name, then --set overrides
  local name=$1; shift
  mpirun -np 4 --oversubscribe --bind-to none /usr/bin/time -f "rss_kib %M" -a -o "$work/$name.rss" \
    "$build/trainer/cmpi-train" "${common[@]}" --set run.name="$name" "$@" >"$work/$name.log" 2>&1 \
    || { cat "$work/$name.log"; exit 1; }
  local ips act
  ips=$(sed -E 's/.*"images_per_s":([^,}]+).*/\1/' "$work/$name/summary.json")
  act=$(tail -1 "$work/$name/metrics.jsonl" | sed -E 's/.*"activation_estimate_bytes":([0-9]+).*/\1/')
  awk -v n="$name" -v ips="$ips" -v act="$act" '/rss_kib/ { r = $2 / 1024; if (r > max) max = r; if (min == 0 || r < min) min = r }
    END { printf "%-26s %9.1f %12.0f %12.0f %18.1f\n", n, ips, max, min, act / 1048576 }' "$work/$name.rss"
}
run pp4 --set parallel.pipeline=4 --set parallel.stage_layers="[2,1,1,1]"
run sp2xpp2 --set parallel.pipeline=2 --set parallel.spatial=2 --set parallel.stage_layers="[2,3]"
run sp4 --set parallel.spatial=4 --set parallel.spatial_slicing=square
run sp2xpp2-bidirectional --set parallel.pipeline=2 --set parallel.spatial=2 \
  --set parallel.stage_layers="[2,3]" --set parallel.bidirectional=true
run dp4-whole-image-per-rank --set parallel.data=4
rm -rf "$work"
