#!/usr/bin/env bash
# log.tensorboard: rank 0 writes <run dir>/tensorboard/events.out.tfevents.*,
# which TensorBoard's own reader (the pinned tensorboard of the project's
# Python environment) reads back with every scalar equal to metrics.jsonl's;
# a resumed run adds a file whose restart marker drops the steps the earlier
# attempt logged past its checkpoint, so no step appears twice. Skips (77)
# where the environment has no tensorboard.
# Usage: tensorboard_test.sh CMPI_TRAIN CONFIG WORK_DIR PYTHON
set -euo pipefail
exe="$1"; config="$2"; work="$3"; python="$4"
here="$(cd "$(dirname "$0")" && pwd)"
"$python" -c "import tensorboard" 2>/dev/null ||
  { echo "SKIP: $python has no tensorboard (scripts/setup.sh installs it)"; exit 77; }
rm -rf "$work"; mkdir -p "$work"
run="$work/tb"
args=(--config "$config" --set run.dir="$work" --set run.name=tb --set training.steps=8
      --set training.warmup_steps=2 --set eval.every=3 --set eval.batches=1 --set log.every=1
      --set log.tensorboard=true --set checkpoint.every=4)
mpirun -np 2 --oversubscribe --bind-to none "$exe" "${args[@]}" --set training.steps=6 \
  >"$work/first.out"
ls "$run"/tensorboard/events.out.tfevents.* >/dev/null ||
  { echo "FAIL: no event file under $run/tensorboard"; exit 1; }
"$python" "$here/tensorboard_check.py" "$run" 6
# The second launch resumes at step 4's checkpoint: steps 5 and 6 again, then
# 7 and 8; TensorBoard must show each step once, with the resumed values.
mpirun -np 2 --oversubscribe --bind-to none "$exe" "${args[@]}" --resume auto >"$work/second.out"
[ "$(ls "$run"/tensorboard/events.out.tfevents.* | wc -l)" = 2 ] ||
  { echo "FAIL: expected one event file per launch"; ls "$run/tensorboard"; exit 1; }
"$python" "$here/tensorboard_check.py" "$run" 8
echo PASS
