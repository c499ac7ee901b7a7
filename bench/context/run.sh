#!/usr/bin/env bash
# Context parallelism side by side: the same model, data and sequence length
# trained on 1 rank (whole sequences; attention in key blocks, the
# memory-lean path) and on cp ranks (each holding 1/cp of every sequence,
# attention as a ring), interleaved over repetitions so that the machine's
# load falls on both. Prints per run tokens/s (summary.json) and the ratio
#   cp tokens/s / (min(cp, cores) x 1-rank tokens/s)
# i.e. against perfect scaling over the cores the ranks actually get (on a
# machine with fewer cores than ranks the ranks share them).
# Usage: bench/context/run.sh [--build-dir build] [--seq 4096] [--cp 4] [--reps 3]
#        [--steps 6] [--out DIR]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$ROOT/build"; seq=4096; cp=4; reps=3; steps=6; out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    --seq) seq="$2"; shift 2 ;;
    --cp) cp="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n 2,12p "$0"; exit 0 ;;
    *) echo "bench/context/run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
exe="$build/trainer/cmpi-train"
[ -x "$exe" ] || { echo "bench/context/run.sh: $exe not built" >&2; exit 2; }
out="${out:-$(mktemp -d /tmp/cmpi-context-bench.XXXXXX)}"
mkdir -p "$out"
cores=$(nproc)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# A NeoX-shaped model small enough that attention (quadratic in seq) is a
# large part of the step, as at long context.
common=(--config "$ROOT/configs/tiny.yaml" --set model.seq_len="$seq" --set model.hidden=128
        --set model.heads=4 --set model.layers=2 --set model.position=rotary
        --set model.parallel_residual=true --set model.tie_embeddings=false
        --set training.micro_batch=1 --set training.global_batch=1 --set training.steps="$steps"
        --set training.warmup_steps=0 --set training.threads=1 --set log.every=1000
        --set eval.every=0 --set checkpoint.every=0 --set run.dir="$out")
run() {  # name ranks context [extra --set ...]
  local name="$1" ranks="$2" context="$3"; shift 3
  mpirun -np "$ranks" --oversubscribe --bind-to none "$exe" "${common[@]}" \
    --set parallel.context="$context" --set run.name="$name" "$@" > "$out/$name.log" 2>&1 ||
    { echo "FAIL: $name (log: $out/$name.log)"; tail -5 "$out/$name.log"; exit 1; }
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['tokens_per_s'])" \
    "$out/$name/summary.json"
}
echo "seq_len $seq, cp $cp, $reps reps, $steps steps, $cores cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-5s %14s %14s %8s\n" rep "1 rank tok/s" "cp$cp tok/s" ratio
for r in $(seq 1 "$reps"); do
  one=$(run "one-$r" 1 1 --set model.attention_block_size=256)
  many=$(run "cp$cp-$r" "$cp" "$cp")
  ratio=$(python3 -c "print(f'{$many / (min($cp, $cores) * $one):.3f}')")
  printf "%-5s %14s %14s %8s\n" "$r" "$one" "$many" "$ratio"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); runs in $out"
