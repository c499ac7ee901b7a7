#!/usr/bin/env python3
"""Tokens/s cost of activation recomputation, measured side by side.

Runs cmpi-train on one rank with training.recompute none, selective and full,
interleaved round after round (so that the machine's other load falls on
every mode alike), reads each run's metrics.jsonl, takes the median step time
(wall clock, `step_ms`) and the median CPU time of a step (`cpu_ms`: what the
single-threaded rank computed, whatever share of a core the machine's other
load left it) of the steps after the warm-up, and prints tokens/s per mode
by both, their ratios to `none` per round and the load average before each
run.

  bench/train/recompute_cost.py --build-dir build --config configs/neox-scaled.yaml \
      --rounds 3 --steps 12 --warmup 4 --out /tmp/recompute_cost

The config's data section is replaced by the Markov source (no dataset
needed; the arithmetic does not depend on the tokens) unless --keep-data.
A mode may carry settings after `+`, e.g. `none+model.attention_block_size=32`
(the blocked attention, compared with `none` in the same rounds).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


def run_once(args, mode, round_index):
    recompute, *settings = mode.split("+")
    suffix = "".join("_" + item.split("=")[-1] for item in settings)
    name = f"{recompute}{suffix}_{round_index}"
    overrides = settings + [
        f"training.recompute={recompute}",
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
    steps, cpu = [], []
    with open(os.path.join(args.out, name, "metrics.jsonl")) as f:
        for line in f:
            record = json.loads(line)
            if "step_ms" in record:
                steps.append(record["step_ms"])
                cpu.append(record["cpu_ms"])
    if len(steps) <= args.warmup:
        sys.exit(f"{name}: no step after the {args.warmup} warm-up steps")
    return (statistics.median(steps[args.warmup:]), statistics.median(cpu[args.warmup:]),
            load)


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
    if "none" not in modes:
        sys.exit("--modes must include none (the ratios are to it)")
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
            step_ms, cpu_ms, load = run_once(args, mode, r)
            results[mode].append((step_ms, cpu_ms, load))
            print(f"round {r + 1} {mode:9s} step {step_ms:8.1f} ms  cpu {cpu_ms:8.1f} ms  "
                  f"{tokens / cpu_ms * 1000:9.0f} tokens/cpu-s  load {load:.1f}", flush=True)
    print()
    print("| mode | tokens/s by CPU time (median) | vs none by CPU time, per round (median) | "
          "tokens/s by wall clock (median) | vs none by wall clock, per round (median) |")
    print("|---|--:|---|--:|---|")
    for mode in modes:
        cells = []
        for column in (1, 0):
            times = [run[column] for run in results[mode]]
            ratios = [results["none"][i][column] / t for i, t in enumerate(times)]
            cells.append(f"{tokens / statistics.median(times) * 1000:.0f}")
            cells.append(", ".join(f"{x:.3f}" for x in ratios) +
                         f" ({statistics.median(ratios):.3f})")
        print(f"| {mode} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
