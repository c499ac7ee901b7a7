#!/usr/bin/env bash
# cmpi-train's config command line end to end: --version answers without an
# MPI job; several --config files merge in order and --print-config says
# which file set a key and which it replaced; a GPT-NeoX config
# (configs/neox-tiny.yml) with a local_setup-style second file trains, the
# log saying it was read as NeoX and one warning naming the ignored keys; an
# error in the second file names that file.
# Usage: config_files_cli_test.sh CMPI_TRAIN SOURCE_DIR WORK_DIR
set -euo pipefail
exe="$1"; src="$2"; work="$3"
rm -rf "$work"; mkdir -p "$work"

# --version: no mpirun, exit 0, the libraries named.
out=$("$exe" --version)
echo "$out"
for part in '^cmpi-train [0-9]' '^git revision: .' '^LibTorch: 2\.' '^MPI: .*MPI standard' '^CUDA: '; do
  echo "$out" | grep -qE "$part" || { echo "FAIL: --version lacks $part"; exit 1; }
done

# Two project files: the second's key wins and the provenance says so.
cat > "$work/a.yaml" <<'YAML'
model:
  layers: 2
  hidden: 64
training:
  steps: 20
YAML
cat > "$work/b.yaml" <<'YAML'
# local settings
model:
  layers: 4
YAML
out=$(mpirun -np 1 "$exe" --config "$work/a.yaml" --config "$work/b.yaml" --print-config)
echo "$out" | grep -q '^  layers: 4$' || { echo "FAIL: b.yaml's layers did not win"; exit 1; }
echo "$out" | grep -q '^  hidden: 64$' || { echo "FAIL: a.yaml's hidden lost"; exit 1; }
echo "$out" | grep -qF "#   model.layers: $work/b.yaml:3 (replaced $work/a.yaml:2)" \
  || { echo "FAIL: provenance of model.layers"; echo "$out" | tail -5; exit 1; }

# An error in the second file names it, once, exit 2.
printf 'training:\n  steps: zero\n' > "$work/bad.yaml"
set +e
err=$(mpirun -np 2 --oversubscribe "$exe" --config "$work/a.yaml" --config "$work/bad.yaml" \
  --print-config 2>&1 >/dev/null); code=$?
set -e
echo "bad second file: exit $code: $err"
[ "$code" -eq 2 ] || { echo "FAIL: exit $code, expected 2"; exit 1; }
[ "$(echo "$err" | grep -c "$work/bad.yaml:2: training.steps: expected a positive integer")" -eq 1 ] \
  || { echo "FAIL: not one message naming bad.yaml:2"; exit 1; }

# A GPT-NeoX config with a local_setup-style file trains a few steps.
cat > "$work/local_setup.yml" <<'YAML'
{
  "train-iters": 4,
  "lr-decay-iters": 4,
  "log-interval": 2,
  "save": "checkpoints-unused",
  "tensorboard-dir": "tensorboard",
}
YAML
out=$(mpirun -np 2 --oversubscribe --bind-to none "$exe" --config "$src/configs/neox-tiny.yml" \
  --config "$work/local_setup.yml" --set run.dir="$work" --set run.name=neox 2>"$work/stderr")
cat "$work/stderr"; echo "$out" | tail -3
echo "$out" | grep -qF "config: $src/configs/neox-tiny.yml: read as a GPT-NeoX config" \
  || { echo "FAIL: the log does not say the file was read as NeoX"; exit 1; }
[ "$(grep -c 'GPT-NeoX keys with no meaning here' "$work/stderr")" -eq 2 ] \
  || { echo "FAIL: expected one warning per NeoX file"; exit 1; }
grep -q 'ignored: launcher, use_wandb' "$work/stderr" || { echo "FAIL: warning lacks keys"; exit 1; }
echo "$out" | grep -qE '^step 4/4 ' || { echo "FAIL: did not train 4 steps"; exit 1; }
grep -q '^  steps: 4$' "$work/neox/config.yaml" || { echo "FAIL: resolved config"; exit 1; }
echo PASS
