#!/usr/bin/env bash
# Builds the fuzz targets (if needed) into build-fuzz/ and runs each for
# SECONDS under AddressSanitizer and UndefinedBehaviorSanitizer, one after
# the other, starting from the seeds of bench/fuzz/corpus/<target>/.
#   bench/fuzz/run.sh SECONDS [TARGET ...]      (default: every target)
# Prints per target: executions, coverage (libFuzzer's final `cov:`, edges),
# crashes (inputs saved under build-fuzz/crashes/<target>/). The corpus a run
# grows is kept in build-fuzz/corpus/<target>/ and reused by the next run;
# the committed seeds are never written. Exit status 1 if any target crashed.
# Environment: CMPI_FUZZ_BUILD (build dir), CMPI_JOBS (build jobs),
# CMPI_FUZZ_RSS_MB (memory limit per target, default 2048).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${CMPI_FUZZ_BUILD:-$ROOT/build-fuzz}"
SECONDS_EACH="${1:?usage: bench/fuzz/run.sh SECONDS [TARGET ...]}"
shift
ALL_TARGETS=(json config_yaml tokenizer_json hf_config_json safetensors_header
             checkpoint_metadata checkpoint_shard indexed_idx codec_decode)
if [ $# -gt 0 ]; then TARGETS=("$@"); else TARGETS=("${ALL_TARGETS[@]}"); fi

launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Fuzz \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMPI_FUZZ=ON "${launcher[@]}" >/dev/null
cmake --build "$BUILD" -j "${CMPI_JOBS:-$(nproc)}" --target cmpi_fuzzers

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
summary=()
any_crash=0
for target in "${TARGETS[@]}"; do
  exe="$BUILD/bench/fuzz/fuzz_$target"
  [ -x "$exe" ] || { echo "unknown target $target (known: ${ALL_TARGETS[*]})" >&2; exit 2; }
  seeds="$ROOT/bench/fuzz/corpus/$target"
  corpus="$BUILD/corpus/$target"
  crashes="$BUILD/crashes/$target"
  log="$BUILD/logs/$target.log"
  mkdir -p "$corpus" "$crashes" "$(dirname "$log")"
  before=$(ls "$crashes" | wc -l)
  echo "== $target: ${SECONDS_EACH}s (log $log)"
  # -timeout: one input taking 10 s is a hang; -malloc_limit_mb: one
  # allocation over it is reported (unbounded allocation from a size field).
  set +e
  "$exe" "$corpus" "$seeds" -max_total_time="$SECONDS_EACH" -timeout=10 \
    -rss_limit_mb="${CMPI_FUZZ_RSS_MB:-2048}" -malloc_limit_mb=512 -print_final_stats=1 \
    -artifact_prefix="$crashes/" >"$log" 2>&1
  status=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  found=$(( $(ls "$crashes" | wc -l) - before ))
  if [ "$status" -ne 0 ] && [ "$found" -eq 0 ]; then found=1; fi
  [ "$found" -gt 0 ] && any_crash=1
  summary+=("$(printf '%-20s %12s %8s %8s' "$target" "${execs:-?}" "${cov:-?}" "$found")")
  [ "$found" -gt 0 ] && grep -m3 -E 'ERROR|runtime error|fuzz defect|deadly signal' "$log" || true
done
echo
printf '%-20s %12s %8s %8s\n' target executions "cov" crashes
printf '%s\n' "${summary[@]}"
exit "$any_crash"
