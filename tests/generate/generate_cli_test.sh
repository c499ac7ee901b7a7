#!/usr/bin/env bash
# cmpi-generate end to end on a tiny GPT (byte tokens, markov data; a
# vocabulary of 257, the byte tokenizer's, which tp2 pads to 258 rows: model.vocab_multiple):
#  * trained 12 steps under tp2 and, separately, under pp2 (2 ranks each),
#    checkpointing at the end; cmpi-generate runs on ONE process (no mpirun)
#    from the run directory (its newest checkpoint);
#  * greedy ids with the KV cache equal those without it (the whole
#    sequence rerun per token), for both layouts' checkpoints;
#  * the tp2 checkpoint exported to Hugging Face (--export-hf) gives the
#    same greedy ids from the Hugging Face directory, and an independent
#    PyTorch greedy decoder (greedy_reference.py over tests/hf/hf_reference.py)
#    gives them too (that part skipped where the project's python lacks torch);
#  * sampling with --seed repeats exactly; without --seed the seed printed on
#    stderr reproduces the text; top-k 1 equals greedy;
#  * a text prompt goes through the run's byte tokenizer and is echoed;
#  * errors: a missing model path, a prompt longer than model.seq_len, a token
#    id outside the vocabulary, an unknown option: exit 2, one line naming it.
# Usage: generate_cli_test.sh CMPI_TRAIN CMPI_GENERATE CONFIG WORKDIR
set -uo pipefail
train_exe="$1"; gen="$2"; config="$3"; work="$4"
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../../scripts/python_env.sh"
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAIL: $*"; for f in "$work"/*.err; do echo "--- $f"; cat "$f"; done; exit 1; }
sets=(--set model.vocab_size=257 --set data.tokenizer=bytes --set model.hidden=32
      --set model.seq_len=32 --set model.layers=2 --set training.steps=12
      --set training.global_batch=4 --set training.micro_batch=2 --set training.warmup_steps=0
      --set training.lr=1e-2 --set checkpoint.every=12 --set log.every=100 --set run.dir="$work")
train() {  # train NAME LAYOUT-SETS...
  local name=$1; shift
  timeout 300 mpirun -np 2 --oversubscribe --bind-to none "$train_exe" --config "$config" \
    "${sets[@]}" --set run.name="$name" "$@" > "$work/$name.train" 2>&1 ||
    { cat "$work/$name.train"; fail "training $name"; }
}
train tp2 --set parallel.tensor=2
train pp2 --set parallel.pipeline=2

generate() {  # generate OUT-NAME ARGS...: stdout to OUT-NAME.out, stderr to OUT-NAME.err
  local name=$1; shift
  timeout 120 "$gen" "$@" > "$work/$name.out" 2> "$work/$name.err"
}
prompt=1,2,3,4,5
for run in tp2 pp2; do
  generate "$run-cache" --model "$work/$run" --ids "$prompt" --max-new-tokens 20 --emit ids ||
    fail "$run: greedy with the cache"
  generate "$run-nocache" --model "$work/$run" --ids "$prompt" --max-new-tokens 20 --emit ids \
    --no-cache || fail "$run: greedy without the cache"
  [ "$(wc -w < "$work/$run-cache.out")" -ge 1 ] || fail "$run: no tokens"
  diff "$work/$run-cache.out" "$work/$run-nocache.out" ||
    fail "$run: greedy ids with the KV cache differ from the full-forward ones"
  grep -q "step 12" "$work/$run-cache.err" || fail "$run: did not load the step-12 checkpoint"
  echo "$run: greedy ids with and without the cache: $(cat "$work/$run-cache.out")"
done
grep -q "saved by tp 2" "$work/tp2-cache.err" || fail "tp2: the layout is not reported"
grep -q "saved by pp 2" "$work/pp2-cache.err" || fail "pp2: the layout is not reported"

# The Hugging Face export of the tp2 checkpoint.
timeout 120 "$train_exe" --config "$config" "${sets[@]}" --set run.name=tp2 --resume \
  --export-hf "$work/hf" > "$work/export.err" 2>&1 || fail "export"
generate hf --model "$work/hf" --ids "$prompt" --max-new-tokens 20 --emit ids ||
  fail "greedy from the Hugging Face directory"
diff "$work/tp2-cache.out" "$work/hf.out" || fail "the Hugging Face export generates other ids"
grep -q "Hugging Face GPT-2" "$work/hf.err" || fail "the Hugging Face source is not reported"
if "$CMPI_PYTHON" -c "import torch, numpy" > /dev/null 2>&1; then
  timeout 120 "$CMPI_PYTHON" "$here/greedy_reference.py" "$work/hf" --ids "$prompt" \
    --max-new-tokens 20 --eos 256 > "$work/python.out" 2> "$work/python.err" ||
    fail "the PyTorch reference failed"
  diff "$work/tp2-cache.out" "$work/python.out" ||
    fail "cmpi-generate's greedy ids differ from the PyTorch reference's"
  echo "PyTorch reference: the same greedy ids"
else
  echo "note: $CMPI_PYTHON lacks torch: the PyTorch reference comparison is skipped"
fi

# Sampling: a seed repeats; the printed seed reproduces; top-k 1 is greedy.
sample=(--model "$work/tp2" --ids "$prompt" --max-new-tokens 20 --emit ids --temperature 1.5)
generate s1 "${sample[@]}" --top-k 50 --top-p 0.95 --seed 7 || fail "sampling"
generate s2 "${sample[@]}" --top-k 50 --top-p 0.95 --seed 7 || fail "sampling again"
diff "$work/s1.out" "$work/s2.out" || fail "the same seed sampled other ids"
grep -q "seed 7" "$work/s1.err" || fail "the seed is not printed"
generate s3 "${sample[@]}" || fail "sampling without a seed"
seed=$(grep -o "seed [0-9]*" "$work/s3.err" | head -1 | cut -d' ' -f2)
[ -n "$seed" ] || fail "no seed printed when none was given"
generate s4 "${sample[@]}" --seed "$seed" || fail "sampling with the printed seed"
diff "$work/s3.out" "$work/s4.out" || fail "the printed seed does not reproduce the ids"
generate k1 "${sample[@]}" --top-k 1 --seed 3 || fail "top-k 1"
diff "$work/tp2-cache.out" "$work/k1.out" || fail "top-k 1 differs from greedy"
echo "sampling: seeds repeat, top-k 1 is greedy"

# Text through the run's tokenizer (bytes), echoed, then the continuation.
generate text --model "$work/tp2" --prompt "In the beginning" --max-new-tokens 8 --seed 1 \
  --temperature 1 || fail "a text prompt"
head -c 16 "$work/text.out" | grep -q "^In the beginning$" || fail "the prompt is not echoed"
grep -q "tokenizer bytes" "$work/text.err" || fail "the run's tokenizer is not used"
printf 'first prompt\nsecond prompt\n' > "$work/prompts.txt"
generate file --model "$work/tp2" --prompt-file "$work/prompts.txt" --max-new-tokens 4 ||
  fail "a prompt file"
grep -q "prompt 2:" "$work/file.err" || fail "the second prompt of the file did not run"

# Errors: exit 2 and one line naming the culprit.
expect_error() {  # WHAT PATTERN ARGS...
  local what=$1 pattern=$2; shift 2
  generate error "$@"
  local code=$?
  [ "$code" -eq 2 ] || fail "$what: exit $code, expected 2"
  grep -q -- "$pattern" "$work/error.err" || fail "$what: stderr does not say '$pattern'"
  [ "$(wc -l < "$work/error.err")" -eq 1 ] || fail "$what: not one line"
}
expect_error "missing model" "$work/nowhere: no such directory" --model "$work/nowhere" --ids 1
long=$(seq -s, 1 40)
expect_error "prompt too long" "model.seq_len 32" --model "$work/tp2" --ids "$long"
expect_error "id outside the vocabulary" "token id 300 .* outside the vocabulary \[0, 257)" \
  --model "$work/tp2" --ids 1,300
expect_error "unknown option" "unknown option --bogus" --model "$work/tp2" --ids 1 --bogus
expect_error "no checkpoint in a run" "no complete checkpoint\|without checkpoints\|neither" \
  --model "$work" --ids 1
echo "errors: one line each, exit 2"
echo "PASS"
