#!/usr/bin/env python3
"""Tokens/s cost of activation recomputation, measured side by side.

Runs cmpi-train on one rank with training.recompute none, selective and full,
interleaved round after round (so that the machine's other load falls on
every mode alike), reads each run's metrics.jsonl, takes the median step time
of the steps after the warm-up and prints tokens/s per mode, its ratio to
`none` per round and the load average before each run.

  bench/train/recompute_cost.py --build-dir build --config configs/neox-scaled.yaml \
      --rounds 3 --steps 12 --warmup 4 --out /tmp/recompute_cost

The config's data section is replaced by the Markov source (no dataset
needed; the arithmetic does not depend on the tokens) unless --keep-data.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def run_once(args, mode, round_index):
    name = f"{mode}_{round_index}"
    overrides = [
        f"training.recompute={mode}",
        f"training.steps={args.steps}",
        f"training.warmup_steps=0",
        f"training.global_batch={args.micro_batch}",
        f"training.micro_batch={args.micro_batch}",
        "parallel.data=1",
        "eval.every=0",
        "log.every=1000",
        f"run.dir={args.out}",
        f"run.name={name}",
    ]
    if not args.keep_data:
        overrides += ["data.kind=markov", "data.paths=[]", "data.split=[0.98, 0.02]"]
    command = [os.path.join(args.build_dir, "trainer", "cmpi-train"), "--config", args.config]
    for item in overrides:
        command += ["--set", item]
    load = os.getloadavg()[0]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    steps = []
    with open(os.path.join(args.out, name, "metrics.jsonl")) as f:
        for line in f:
            record = json.loads(line)
            if "step_ms" in record:
                steps.append(record["step_ms"])
    timed = steps[args.warmup:]
    if not timed:
        sys.exit(f"{name}: no step after the {args.warmup} warm-up steps")
    return statistics.median(timed), load


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--config", default="configs/neox-scaled.yaml")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--warmup", type=int, default=4)
    parser.add_argument("--micro-batch", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=0, help="0: the config's")
    parser.add_argument("--modes", default="none,selective,full")
    parser.add_argument("--keep-data", action="store_true")
    parser.add_argument("--out", default="/tmp/recompute_cost")
    args = parser.parse_args()
    modes = args.modes.split(",")
    seq_len = args.seq_len
    if not seq_len:
        text = subprocess.run([os.path.join(args.build_dir, "trainer", "cmpi-train"), "--config",
                               args.config, "--print-config"], check=True, capture_output=True,
                              text=True).stdout
        in_model = False
        for line in text.splitlines():
            if line.startswith("model:"):
                in_model = True
            elif not line.startswith(" "):
                in_model = False
            elif in_model and line.strip().startswith("seq_len:"):
                seq_len = int(line.split(":")[1])
    tokens = args.micro_batch * seq_len
    results = {mode: [] for mode in modes}
    for r in range(args.rounds):
        for mode in modes:
            step_ms, load = run_once(args, mode, r)
            results[mode].append((step_ms, load))
            print(f"round {r + 1} {mode:9s} step {step_ms:8.1f} ms  "
                  f"{tokens / step_ms * 1000:9.0f} tokens/s  load {load:.1f}", flush=True)
    print()
    print("| mode | median step ms per round | tokens/s (median of rounds) | vs none, per round |")
    print("|---|---|--:|---|")
    for mode in modes:
        steps = [s for s, _ in results[mode]]
        ratios = [results["none"][i][0] / s for i, s in enumerate(steps)] if "none" in results \
            else []
        print(f"| {mode} | {', '.join(f'{s:.0f}' for s in steps)} | "
              f"{tokens / statistics.median(steps) * 1000:.0f} | "
              f"{', '.join(f'{x:.3f}' for x in ratios)} |")


if __name__ == "__main__":
    main()
