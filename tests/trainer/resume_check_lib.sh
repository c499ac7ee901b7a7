# Shared by the tests that resume a run and compare it with an uninterrupted
# one (resume_auto_test.sh, resume_measured_test.sh). Source it after
# setting `work` (the test's directory of runs).

fail() { echo "FAIL: $1"; [ -f "${2:-}" ] && cat "$2"; exit 1; }

# losses FILE FROM: "step loss" of every step >= FROM in metrics.jsonl.
losses() {
  python3 -c 'import json,sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["step"] >= int(sys.argv[2]): print(r["step"], r["loss"])' "$1" "$2"
}

# expect_resumed_bit_exact WHOLE RESUMED AT LAST RANKS: run RESUMED (from
# WHOLE's checkpoint of step AT) said it resumed there, logged steps AT+1 ..
# LAST with WHOLE's losses bit for bit (a float32 printed with 9 significant
# digits identifies it), and its checkpoint of step LAST holds the same
# shards as WHOLE's, byte for byte, for each of RANKS ranks: a rounding
# difference the losses do not show still shows there.
expect_resumed_bit_exact() {
  local whole="$1" resumed="$2" at="$3" last="$4" ranks="$5"
  grep -q "checkpoint: resumed at step $at" "$work/$resumed.txt" ||
    fail "did not resume at step $at" "$work/$resumed.txt"
  [ "$(losses "$work/$resumed/metrics.jsonl" $((at + 1)) | wc -l)" -eq $((last - at)) ] ||
    fail "the resumed run did not log steps $((at + 1))-$last" "$work/$resumed/metrics.jsonl"
  diff <(losses "$work/$whole/metrics.jsonl" $((at + 1))) \
    <(losses "$work/$resumed/metrics.jsonl" $((at + 1))) ||
    fail "the resumed run's losses differ from the uninterrupted run's (it decided anew)"
  local rank shard
  for ((rank = 0; rank < ranks; ++rank)); do
    shard="$(printf 'step_%08d/shard_%05d.bin' "$last" "$rank")"
    [ -f "$work/$whole/checkpoints/$shard" ] || fail "the uninterrupted run wrote no $shard"
    cmp -s "$work/$whole/checkpoints/$shard" "$work/$resumed/checkpoints/$shard" ||
      fail "$shard of the resumed run differs from the uninterrupted run's"
  done
}
