#!/usr/bin/env bash
# Context parallelism side by side: the same model, data and sequence length
# trained on 1 rank (whole sequences; attention in key blocks, the
# memory-lean path, which like the ring computes only the causal blocks
# needed) and on cp ranks (each holding 1/cp of every sequence, attention as
# a ring), interleaved over repetitions so that the machine's load falls on
# both. Per run and repetition it prints
#   tok/s       tokens/s by wall clock (summary.json);
#   tok/cpu-s   tokens per CPU-second of the whole job: a step's tokens over
#               ranks x rank 0's CPU time of the step (metrics.jsonl's cpu_ms,
#               median over the steps after the first; the cp ranks' work is
#               balanced), i.e. tokens/s per core the job really had, whatever
#               the machine's other load left it (waits that poll count);
# and two ratios of cp to 1 rank: by wall clock against perfect scaling over
# min(cp, cores) cores, and by CPU time (1 = the ring costs no more CPU per
# token than one rank: the per-core figure). Last the medians.
# Usage: bench/context/run.sh [--build-dir build] [--seq 4096] [--cp 4] [--reps 3]
#        [--steps 12] [--out DIR]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$ROOT/build"; seq=4096; cp=4; reps=3; steps=12; out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    --seq) seq="$2"; shift 2 ;;
    --cp) cp="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n 2,17p "$0"; exit 0 ;;
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
run() {  # name ranks context [extra --set ...]: prints "tok/s tok/cpu-s"
  local name="$1" ranks="$2" context="$3"; shift 3
  mpirun -np "$ranks" --oversubscribe --bind-to none "$exe" "${common[@]}" \
    --set parallel.context="$context" --set run.name="$name" "$@" > "$out/$name.log" 2>&1 ||
    { echo "FAIL: $name (log: $out/$name.log)"; tail -5 "$out/$name.log"; exit 1; }
  python3 - "$out/$name" "$ranks" "$seq" <<'PY'
import json, statistics, sys
run, ranks, seq = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
wall = json.load(open(run + "/summary.json"))["tokens_per_s"]
steps = [json.loads(line) for line in open(run + "/metrics.jsonl")]
cpu_s = statistics.median(s["cpu_ms"] for s in steps[1:] if "cpu_ms" in s) / 1e3
print(f"{wall:.1f} {seq / (ranks * cpu_s):.1f}")
PY
}
median() { printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }
echo "seq_len $seq, cp $cp, $reps reps, $steps steps, $cores cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
used=$(( cp < cores ? cp : cores ))
printf "%-4s %12s %14s %12s %14s %10s %10s\n" rep "1 rank tok/s" "1 rank tok/cpu-s" \
  "cp$cp tok/s" "cp$cp tok/cpu-s" "wall ratio" "cpu ratio"
walls=(); cpus=()
for r in $(seq 1 "$reps"); do
  res=$(run "one-$r" 1 1 --set model.attention_block_size=256); read -r one one_cpu <<< "$res"
  res=$(run "cp$cp-$r" "$cp" "$cp"); read -r many many_cpu <<< "$res"
  wall=$(python3 -c "print(f'{$many / ($used * $one):.3f}')")
  cpu=$(python3 -c "print(f'{$many_cpu / $one_cpu:.3f}')")
  walls+=("$wall"); cpus+=("$cpu")
  printf "%-4s %12s %14s %12s %14s %10s %10s\n" "$r" "$one" "$one_cpu" "$many" "$many_cpu" \
    "$wall" "$cpu"
done
echo "median wall ratio $(median "${walls[@]}") (cp$cp on $used cores against 1 rank on 1)," \
  "median cpu ratio $(median "${cpus[@]}")"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); runs in $out"
