#!/usr/bin/env python3
"""LibTorch builds side by side: one-rank tokens/s of a config in each
precision and the GEMM rate cmpi-train's start-up line prints, for two or more
cmpi-train binaries (e.g. one linked against the torch wheel's LibTorch 2 and
one against Debian's LibTorch 1.13), interleaved in one run so that the
machine's load falls on all of them alike.

  bench/libtorch/compare.py --binary lt2=build/trainer/cmpi-train \\
      --binary lt113=/tmp/build-113/trainer/cmpi-train \\
      --binary lt113-skx=/tmp/build-113/trainer/cmpi-train --env lt113-skx OPENBLAS_CORETYPE=SkylakeX \\
      --reps 3 --steps 20

Each run is one process (no mpirun), `training.threads` as the config says;
tokens/s is the median of the metrics lines after the first `--skip` steps.
Writes OUT/runs.jsonl and prints a markdown table (median and range over the
repetitions, the ratio of each binary to the first).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

GEMM = re.compile(r"^blas: (.*) \| GEMM 512x256x1024: ([0-9.]+) GFLOP/s", re.M)


def run_once(binary, config, precision, steps, out_dir, extra, env):
    os.makedirs(out_dir, exist_ok=True)
    cmd = [binary, "--config", config, "--set", f"training.steps={steps}",
           "--set", f"training.precision={precision}", "--set", "parallel.data=1",
           "--set", f"run.dir={out_dir}", "--set", "run.name=run", "--set", "log.every=1",
           "--set", "eval.every=0"] + extra
    start = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env})
    wall = time.time() - start
    if proc.returncode != 0:
        raise SystemExit(f"compare: {' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    gemm = GEMM.search(proc.stdout)
    rates = []
    with open(os.path.join(out_dir, "run", "metrics.jsonl")) as f:
        for line in f:
            record = json.loads(line)
            if "tokens_per_s" in record and record.get("step", 0) > 0:
                rates.append((record["step"], record["tokens_per_s"]))
    return {"gemm_gflops": float(gemm.group(2)) if gemm else None,
            "blas": gemm.group(1) if gemm else None, "rates": rates, "wall_s": wall}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", action="append", required=True, help="LABEL=PATH (repeat; first is the baseline)")
    ap.add_argument("--env", action="append", default=[], nargs=2, metavar=("LABEL", "KEY=VALUE"),
                    help="an environment variable for one binary's runs (e.g. OPENBLAS_CORETYPE)")
    ap.add_argument("--config", default="configs/neox-scaled.yaml")
    ap.add_argument("--precisions", default="fp32,bf16")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--skip", type=int, default=5, help="steps left out of the median (warm-up)")
    ap.add_argument("--out", default="/tmp/cmpi-libtorch-compare")
    ap.add_argument("--set", action="append", default=[], help="extra --set for every run")
    args = ap.parse_args()
    binaries = [tuple(b.split("=", 1)) for b in args.binary]
    envs = {label: {} for label, _ in binaries}
    for label, setting in args.env:
        key, value = setting.split("=", 1)
        envs[label][key] = value
    extra = sum((["--set", s] for s in args.set), [])
    os.makedirs(args.out, exist_ok=True)
    results = {}
    with open(os.path.join(args.out, "runs.jsonl"), "w") as log:
        for rep in range(args.reps):
            for precision in args.precisions.split(","):
                for label, path in binaries:
                    r = run_once(path, args.config, precision, args.steps,
                                 os.path.join(args.out, f"{label}-{precision}-{rep}"), extra,
                                 envs[label])
                    kept = [v for s, v in r["rates"] if s > args.skip]
                    r.update(label=label, precision=precision, rep=rep, env=envs[label],
                             tokens_per_s=statistics.median(kept) if kept else None,
                             load=os.getloadavg()[0])
                    log.write(json.dumps(r) + "\n")
                    log.flush()
                    results.setdefault((label, precision), []).append(r)
                    print(f"rep {rep} {label:8s} {precision}: {r['tokens_per_s']:.0f} tok/s, "
                          f"GEMM {r['gemm_gflops']} GFLOP/s, load {r['load']:.1f}", flush=True)
    base = binaries[0][0]
    print(f"\n| binary | precision | tokens/s (median, range) | vs {base} | GEMM GFLOP/s (median) | BLAS |")
    print("|---|---|---|---|---|---|")
    for precision in args.precisions.split(","):
        base_tps = statistics.median(r["tokens_per_s"] for r in results[(base, precision)])
        for label, _ in binaries:
            rs = results[(label, precision)]
            tps = [r["tokens_per_s"] for r in rs]
            gemm = statistics.median(r["gemm_gflops"] for r in rs)
            print(f"| {label} | {precision} | {statistics.median(tps):.0f} ({min(tps):.0f}-{max(tps):.0f}) | "
                  f"{statistics.median(tps) / base_tps:.2f}x | {gemm:.1f} | {rs[0]['blas']} |")
    loads = [r["load"] for rs in results.values() for r in rs]
    print(f"\nload average during the runs: {min(loads):.1f}-{max(loads):.1f}")


if __name__ == "__main__":
    sys.exit(main())
