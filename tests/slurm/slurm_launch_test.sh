#!/usr/bin/env bash
# cmpi-train under a real one-node Slurm (scripts/local_slurm.sh starts
# munged, slurmctld and slurmd in WORKDIR and this test stops them by pid):
#  * srun --mpi=pmix -n 4 trains and writes its summary;
#  * sbatch --wait with scripts/slurm/train.sbatch trains and returns 0;
#  * a train.sbatch job requeued mid-run (scontrol requeue) resumes from its
#    newest checkpoint and finishes;
#  * a bad config exits 2 with one message;
#  * a rank killed mid-run ends the whole step within seconds, nonzero.
# Exits 77 (skipped) with the reason when Slurm cannot run here.
# Usage: slurm_launch_test.sh CMPI_TRAIN CONFIG WORKDIR
set -uo pipefail
exe="$1"; config="$2"; work="$3"
root="$(cd "$(dirname "$0")/../.." && pwd)"
rm -rf "$work"; mkdir -p "$work"
"$root/scripts/local_slurm.sh" start "$work/slurm" > "$work/env.sh"
code=$?
[ "$code" -eq 0 ] || exit "$code"
trap '"$root/scripts/local_slurm.sh" stop "$work/slurm"' EXIT
source "$work/env.sh"
fail() { echo "FAIL: $1"; cat "$work/out.txt"; exit 1; }
short=(--set training.steps=3 --set training.warmup_steps=1)
cd "$work"

# -O: more tasks than the machine's cores (the CI machine has 2).
timeout 120 srun --mpi=pmix -n 4 -O "$exe" --config "$config" "${short[@]}" \
  --set run.dir="$work/runs" --set run.name=srun > "$work/out.txt" 2>&1
code=$?
[ "$code" -eq 0 ] || fail "srun run: exit $code"
grep -q '"layout":"dp=4' "$work/runs/srun/summary.json" || fail "srun run: no 4-rank summary"

CMPI_TRAIN="$exe" timeout 180 sbatch --wait --nodes=1 --ntasks=4 -O --output="$work/sbatch.out" \
  "$root/scripts/slurm/train.sbatch" "$config" "${short[@]}" --set run.dir="$work/runs" \
  --set run.name=sbatch > "$work/out.txt" 2>&1
code=$?
cat "$work/sbatch.out" >> "$work/out.txt" 2>/dev/null
[ "$code" -eq 0 ] || fail "sbatch --wait: exit $code"
[ -s "$work/runs/sbatch/summary.json" ] || fail "sbatch job wrote no summary"

# Requeue (as after a node failure or a preemption): train.sbatch passes
# --resume auto, so the requeued job continues from its newest checkpoint.
small=(--set model.hidden=32 --set model.vocab_size=64 --set model.seq_len=16
       --set training.global_batch=8 --set training.micro_batch=2 --set training.warmup_steps=2
       --set training.steps=100 --set checkpoint.every=10 --set log.every=10)
CMPI_TRAIN="$exe" sbatch --parsable --nodes=1 --ntasks=4 -O --output="$work/requeue.out" \
  "$root/scripts/slurm/train.sbatch" "$config" "${small[@]}" --set run.dir="$work/runs" \
  --set run.name=requeue > "$work/jobid" 2> "$work/out.txt" || fail "sbatch of the requeue job"
job=$(cut -d';' -f1 "$work/jobid")
for _ in $(seq 600); do
  [ "$(cat "$work/runs/requeue/metrics.jsonl" 2>/dev/null | grep -c .)" -ge 25 ] && break
  sleep 0.1
done
scontrol requeue "$job" > "$work/out.txt" 2>&1 || fail "scontrol requeue $job"
# Slurm holds a requeued job back for AuthInfo cred_expire (10 s in local_slurm.sh).
for _ in $(seq 900); do squeue -h -j "$job" 2>/dev/null | grep -q . || break; sleep 0.2; done
squeue -h -j "$job" 2>/dev/null | grep -q . && { scancel "$job"; fail "requeued job still queued or running after 180 s"; }
cp "$work/requeue.out" "$work/out.txt"
grep -q "restart count 1" "$work/out.txt" || fail "the job was not requeued"
grep -q "checkpoint: resumed at step [1-9]" "$work/out.txt" || fail "the requeued job did not resume"
[ -s "$work/runs/requeue/summary.json" ] || fail "the requeued job did not finish"
[ "$(grep -c '"loss"' "$work/runs/requeue/metrics.jsonl")" -eq 100 ] || fail "metrics.jsonl: not 100 steps"
echo "requeued job resumed: $(grep -o 'resumed at step [0-9]*' "$work/out.txt")"

timeout 60 srun --mpi=pmix -n 4 -O "$exe" --config "$config" --set training.micro_batch=-3 \
  > "$work/out.txt" 2>&1
code=$?
[ "$code" -eq 2 ] || fail "bad config: exit $code (want 2)"
[ "$(grep -c 'training.micro_batch' "$work/out.txt")" -eq 1 ] || fail "bad config: message not printed once"

timeout 120 srun --mpi=pmix --kill-on-bad-exit=1 -n 4 -O "$exe" --config "$config" \
  --set training.steps=1000000 --set run.dir="$work/runs" --set run.name=killed \
  > "$work/out.txt" 2>&1 &
launcher=$!
victim=""
for _ in $(seq 200); do
  [ -s "$work/runs/killed/metrics.jsonl" ] && victim="$(pgrep -f -- 'run.name=killed' | while read -r pid; do
      grep -qz '^SLURM_PROCID=2$' "/proc/$pid/environ" 2>/dev/null && echo "$pid"; done | head -1)"
  [ -n "$victim" ] && break
  sleep 0.1
done
[ -n "$victim" ] || { kill "$launcher"; fail "rank 2 never started training"; }
start=$(date +%s.%N)
kill -9 "$victim"
wait "$launcher"
code=$?
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
[ "$code" -ne 0 ] && [ "$code" -ne 124 ] || fail "killed rank: exit $code"
(( $(echo "$elapsed < 15" | bc) )) || fail "killed rank: the step took ${elapsed}s to end"
sleep 1
pgrep -f -- 'run.name=killed' > /dev/null && fail "ranks left running after a killed rank"
echo "PASS (killed rank ended the step in ${elapsed}s)"
