#!/usr/bin/env bash
# One call on the GPU machine: cmpi-train on its GPU, side by side with the
# CPU and with PyTorch eager, in under 10 minutes. Prepare HERE first:
#   bash bench/gpu/prepare_train_carry.sh        # -> .gpucarry/ (git-ignored)
# then, through the device tool, in the repository root, carrying .gpucarry:
#   bash bench/gpu/train_on_device.sh            # logs and figures under $OUT
# What runs (each step under its own time limit, so that one hang costs
# only its share; the script goes on and says which failed):
#   0. the GPU, cmpi-train --version;
#   1. the CUDA tests (ctest label cuda): one rank on the GPU against the
#      same run on the CPU (fp32, bf16), dp2 (none, zhybrid), tp2 and pp2
#      on the one GPU against the CPU runs of their layouts, and the fused
#      attention against the unfused on the CPU;
#   2. (a) configs/neox-scaled.yaml, 50 steps on one rank, on the CPU and on
#      the GPU: both loss curves in neox_scaled_cpu_vs_cuda.csv;
#   3. (b) GPT-NeoX at Pythia-1.4B's shape (bench/gpu/neox-1.4b.yaml), bf16,
#      seq 2048, one rank: cmpi-train against the same model in PyTorch
#      eager (bench/gpu/eager_neox.py) on the same GPU, interleaved twice:
#      tokens/s, MFU and peak device memory in gpu_throughput.csv;
#   4. a checkpoint saved on the GPU resumed on the CPU (and back), against
#      the uninterrupted run;
#   5. (c) dp2 with both ranks on the one GPU, none and zhybrid: tokens/s and
#      the share of the step in communication (dp2_one_gpu.csv).
# Environment: CMPI_GPU_PYTHON (default python3: the one holding PyTorch).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CARRY="${CMPI_GPU_CARRY:-/tmp/cmpi-gpucarry}"
OUT="${OUT:-$ROOT/gpu-out}"
PY="${CMPI_GPU_PYTHON:-python3}"
WORK="$(mktemp -d)"
mkdir -p "$OUT"
failed=()
step() {  # step NAME SECONDS COMMAND...: runs it, logs to $OUT/NAME.log
  local name="$1" seconds="$2"
  shift 2
  local start=$SECONDS
  echo "== $name (limit ${seconds} s)"
  timeout --kill-after=10 "$seconds" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  tail -n 15 "$OUT/$name.log"
  echo "-- $name: exit $rc, $((SECONDS - start)) s"
  [ "$rc" -eq 0 ] || failed+=("$name (exit $rc)")
  return "$rc"
}

if [ -f "$ROOT/.gpucarry/bundle.tar.xz" ]; then
  rm -rf "$CARRY" && mkdir -p "$CARRY" && tar -xJf "$ROOT/.gpucarry/bundle.tar.xz" -C "$CARRY"
fi
[ -x "$CARRY/bin/cmpi-train" ] || {
  echo "train_on_device.sh: no $CARRY/bin/cmpi-train: run bench/gpu/prepare_train_carry.sh" \
    "on the build machine and carry .gpucarry" >&2
  exit 2
}
TORCH_LIB="$("$PY" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')"
# The CUDA runtime libraries of the wheel's nvidia packages (cmpi-train links
# libcudart itself, not only through libtorch_cuda's own search path).
NVIDIA_LIBS="$(find "$TORCH_LIB/../../nvidia" -name 'lib*.so*' -printf '%h\n' 2>/dev/null | sort -u | paste -sd:)"
export OPAL_PREFIX="$CARRY/ompi/usr"
export PATH="$CARRY/bin:$CARRY/ompi/usr/bin:$PATH"
export LD_LIBRARY_PATH="$CARRY/lib:$CARRY/ompi/usr/lib/x86_64-linux-gnu:$TORCH_LIB${NVIDIA_LIBS:+:$NVIDIA_LIBS}:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
one_rank=(orterun -np 1)  # singleton MPI_Init would need orted on the PATH the same way

echo "== GPU"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
cmpi-train --version | tee "$OUT/version.txt"

# 1. The CUDA tests (ctest label cuda), and the attention backends on the CPU.
step cuda_tests_np1 150 "${one_rank[@]}" "$CARRY/bin/cmpi_device_mpi_tests"
step cuda_tests_np2 150 orterun -np 2 "$CARRY/bin/cmpi_device_mpi_tests" \
  --gtest_filter='DeviceLayouts.*'

# 2. (a) neox-scaled, 50 steps, one rank: CPU then GPU.
scaled=(--config "$ROOT/configs/neox-scaled.yaml" --set parallel.data=1 --set parallel.zero_stage=0
  --set training.steps=50 --set training.threads=16 --set eval.every=25 --set log.every=10
  --set data.paths="$CARRY/data/kjv_bytes" --set run.dir="$WORK")
step neox_scaled_cpu 200 "${one_rank[@]}" cmpi-train "${scaled[@]}" --set run.name=cpu --set run.device=cpu
step neox_scaled_cuda 120 "${one_rank[@]}" cmpi-train "${scaled[@]}" --set run.name=cuda --set run.device=cuda
"$PY" - "$WORK" "$OUT/neox_scaled_cpu_vs_cuda.csv" <<'EOF'
import json, sys
work, out = sys.argv[1], sys.argv[2]
def losses(name):
    try:
        with open(f"{work}/{name}/metrics.jsonl") as f:
            rows = [json.loads(line) for line in f if line.strip()]
    except OSError:
        return {}
    return {r["step"]: r for r in rows if "loss" in r and r.get("kind", "train") == "train"}
cpu, cuda = losses("cpu"), losses("cuda")
with open(out, "w") as f:
    f.write("step,loss_cpu,loss_cuda,relative_difference,tokens_per_s_cpu,tokens_per_s_cuda\n")
    for step in sorted(set(cpu) | set(cuda)):
        a, b = cpu.get(step, {}), cuda.get(step, {})
        la, lb = a.get("loss"), b.get("loss")
        rel = abs(la - lb) / abs(la) if la is not None and lb is not None else ""
        f.write(f"{step},{la if la is not None else ''},{lb if lb is not None else ''},{rel},"
                f"{a.get('tokens_per_s', '')},{b.get('tokens_per_s', '')}\n")
print(open(out).read()[-1200:])
EOF

# 3. (b) Pythia-1.4B's shape, bf16, seq 2048: cmpi-train and PyTorch eager, interleaved.
big=(--config "$ROOT/bench/gpu/neox-1.4b.yaml" --set run.dir="$WORK")
cmpi-train "${big[@]}" --print-config >"$WORK/neox-1.4b.resolved.yaml" 2>"$OUT/print_config.log"
for round in 1 2; do
  step "cmpi_1.4b_round$round" 180 "${one_rank[@]}" cmpi-train "${big[@]}" --set run.name="big$round"
  step "eager_1.4b_round$round" 120 "$PY" "$ROOT/bench/gpu/eager_neox.py" \
    --config "$WORK/neox-1.4b.resolved.yaml" --steps 10 --warmup 2 --peak 989.4e12 \
    --out "$WORK/eager$round.json"
done
"$PY" - "$WORK" "$OUT/gpu_throughput.csv" <<'EOF'
import json, statistics, sys
work, out = sys.argv[1], sys.argv[2]
rows = []
for round in (1, 2):
    try:
        with open(f"{work}/big{round}/metrics.jsonl") as f:
            steps = [json.loads(l) for l in f if l.strip()]
        steps = [s for s in steps if "tokens_per_s" in s][2:]  # the first two warm up
        with open(f"{work}/big{round}/summary.json") as f:
            summary = json.load(f)
        rows.append(("cmpi-train", round, statistics.median(s["tokens_per_s"] for s in steps),
                     statistics.median(s.get("mfu", -1) for s in steps),
                     summary["memory"]["stages"][0].get("max_device_allocated_bytes", "")))
    except (OSError, ValueError, statistics.StatisticsError) as e:
        print(f"cmpi-train round {round}: {e}")
    try:
        with open(f"{work}/eager{round}.json") as f:
            e = json.load(f)
        rows.append(("pytorch-eager", round, e["tokens_per_s"], e["mfu"], e["peak_memory_bytes"]))
    except (OSError, ValueError) as e:
        print(f"eager round {round}: {e}")
with open(out, "w") as f:
    f.write("subject,round,tokens_per_s,mfu,peak_device_bytes\n")
    for r in rows:
        f.write(",".join(str(x) for x in r) + "\n")
print(open(out).read())
EOF

# 4. A checkpoint saved on the GPU resumed on the CPU: the same 8-step run
# twice on the GPU (checkpoints at steps 4 and 8); the second's step-8
# checkpoint is removed and it resumes from step 4 on the CPU. Steps 5-8 of
# both are compared.
tiny=(--config "$ROOT/configs/neox-scaled.yaml" --set parallel.data=1 --set parallel.zero_stage=0
  --set training.steps=8 --set training.warmup_steps=2 --set training.threads=16
  --set eval.every=0 --set log.every=1 --set data.paths="$CARRY/data/kjv_bytes"
  --set run.dir="$WORK" --set checkpoint.every=4 --set checkpoint.keep_last=0)
step ckpt_whole_cuda 90 "${one_rank[@]}" cmpi-train "${tiny[@]}" --set run.name=whole_cuda --set run.device=cuda
step ckpt_saved_on_cuda 90 "${one_rank[@]}" cmpi-train "${tiny[@]}" --set run.name=gpu_to_cpu --set run.device=cuda
rm -rf "$WORK"/gpu_to_cpu/checkpoints/step_00000008
step ckpt_resumed_on_cpu 90 "${one_rank[@]}" cmpi-train "${tiny[@]}" --set run.name=gpu_to_cpu --set run.device=cpu \
  --resume auto
"$PY" - "$WORK" <<'EOF' | tee "$OUT/checkpoint_gpu_to_cpu.txt"
import json, sys
work = sys.argv[1]
def last(name):
    with open(f"{work}/{name}/metrics.jsonl") as f:
        rows = [json.loads(l) for l in f if l.strip()]
    return {r["step"]: r["loss"] for r in rows if "loss" in r}
whole, resumed = last("whole_cuda"), last("gpu_to_cpu")
for step in sorted(whole):
    if step in resumed:
        print(f"step {step}: uninterrupted cuda {whole[step]:.6f}, saved on cuda at 4, resumed on cpu: "
              f"{resumed[step]:.6f}, relative {abs(whole[step] - resumed[step]) / whole[step]:.2e}")
EOF

# 5. (c) dp2 with both ranks on the one GPU, none and zhybrid: tokens/s and
# the share of the step spent in communication (the staged dp buckets with
# their CPU codecs).
dp2=(--config "$ROOT/configs/neox-scaled.yaml" --set parallel.data=2 --set parallel.zero_stage=0
  --set training.steps=30 --set training.threads=8 --set eval.every=0 --set log.every=10
  --set data.paths="$CARRY/data/kjv_bytes" --set run.dir="$WORK" --set run.device=cuda
  --set compression.preset_locality=any)
for preset in none zhybrid; do
  step "dp2_one_gpu_$preset" 150 orterun -np 2 cmpi-train "${dp2[@]}" --set run.name="dp2_$preset" \
    --set compression.preset="$preset"
done
"$PY" - "$WORK" "$OUT/dp2_one_gpu.csv" <<'EOF'
import json, statistics, sys
work, out = sys.argv[1], sys.argv[2]
with open(out, "w") as f:
    f.write("preset,final_loss,tokens_per_s,step_ms,comm_ms,comm_share\n")
    for preset in ("none", "zhybrid"):
        try:
            with open(f"{work}/dp2_{preset}/metrics.jsonl") as m:
                rows = [json.loads(l) for l in m if l.strip()][3:]
        except OSError as e:
            print(f"{preset}: {e}")
            continue
        step_ms = statistics.median(r["step_ms"] for r in rows)
        comm_ms = statistics.median(r["comm_ms"] for r in rows)
        f.write(f"{preset},{rows[-1]['loss']},{statistics.median(r['tokens_per_s'] for r in rows)},"
                f"{step_ms},{comm_ms},{comm_ms / step_ms:.3f}\n")
print(open(out).read())
EOF

echo "== done in ${SECONDS} s; failed: ${failed[*]:-none}"
# Every step's log in one file, every run's metrics and summary in one archive
# (what comes back from $OUT is a few files).
for log in "$OUT"/*.log; do echo "##### $(basename "$log")"; cat "$log"; done >"$OUT/steps.txt"
rm -f "$OUT"/*.log
(cd "$WORK" && find . -name metrics.jsonl -o -name summary.json | tar czf "$OUT/runs.tgz" -T -)
[ "${#failed[@]}" -eq 0 ]
