#!/usr/bin/env bash
# One message per error: each bad config or data case below (an unknown
# key, a bad value, a layout, a model too big for memory, a missing
# dataset, run.device cuda without a GPU: the stages main.cpp agrees on one
# by one) ends a 4-rank
# job with exit code 2 and exactly one "cmpi-train:" line, however mpirun
# terminates the ranks that have not exited yet (they know the job is
# failing and end quietly with 2 instead of "stopped by SIGTERM").
# Usage: one_message_test.sh CMPI_TRAIN CONFIG WORKDIR
set -uo pipefail
exe="$1"; config="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"
printf 'model:\n  hiddn: 64\n' > "$work/typo.yaml"
cases=(
  "--config $work/typo.yaml"
  "--config $config --set training.micro_batch=-3"
  "--config $config --set parallel.tensor=3"
  "--config $config --set model.hidden=65536"
  "--config $config --set data.kind=indexed --set data.paths=$work/no-such-dataset"
)
# run.device: cuda where LibTorch sees no GPU (every machine CI runs on).
if ! nvidia-smi -L >/dev/null 2>&1; then cases+=("--config $config --set run.device=cuda"); fi
for args in "${cases[@]}"; do
  # shellcheck disable=SC2086 # each case is a list of words
  timeout 60 mpirun -np 4 --oversubscribe --bind-to none "$exe" $args --set run.dir="$work/runs" \
    > "$work/out.txt" 2>&1
  code=$?
  lines=$(grep -c "^cmpi-train:" "$work/out.txt")
  if [ "$code" -ne 2 ] || [ "$lines" -ne 1 ]; then
    echo "FAIL: $args: exit code $code (want 2), $lines cmpi-train lines (want 1)"
    cat "$work/out.txt"; exit 1
  fi
  echo "ok: $args: $(grep '^cmpi-train:' "$work/out.txt")"
  case "$args" in
    *run.device=cuda*)
      grep -q "^cmpi-train: rank 0 on host .*: run.device is cuda, but no CUDA device is visible" \
        "$work/out.txt" || { echo "FAIL: run.device=cuda: the line names no rank and host"; exit 1; } ;;
  esac
done
echo PASS
