#!/usr/bin/env python3
"""Smoke test of the time-to-target report (target_report.py) on a synthetic benchmark directory:
L* from the reference cell, time to L* as the sum of step times, 'never' for a run that stalls,
a failed run marked FAILED, and the per-repetition ratio best cmpi-train / best DDP. Registered
in ctest (tests/bench/CMakeLists.txt); needs only python3 (matplotlib optional)."""

import csv
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import target_report  # noqa: E402

STEPS = 20


def write_run(out, name, losses, step_ms, rc=0):
    d = os.path.join(out, "runs", name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "metrics.jsonl"), "w") as f:
        for i, (loss, ms) in enumerate(zip(losses, step_ms)):
            f.write(json.dumps({"step": i + 1, "total_steps": STEPS, "loss": loss, "step_ms": ms}) + "\n")
    return d


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def main():
    out = tempfile.mkdtemp(prefix="target_report_test_")
    falling = [10.0 - 0.4 * i for i in range(STEPS)]  # 10.0, 9.6, ... 2.4
    cells = [  # cell id, system, policy, losses, step ms, exit status
        ("cmpi/dp4/none", "cmpi-train", "none", falling, [1000.0] * STEPS, 0),
        ("cmpi/dp4/zhybrid", "cmpi-train", "zhybrid", falling, [500.0] * STEPS, 0),
        ("cmpi/dp4/powersgd", "cmpi-train", "powersgd", [10.0] * STEPS, [100.0] * STEPS, 0),
        ("cmpi/dp4/auto", "cmpi-train", "auto", falling, [500.0] * STEPS, 1),
        ("ddp/dp4/none", "pytorch-ddp", "none", falling, [800.0] * STEPS, 0),
        ("ddp/dp4/fp16", "pytorch-ddp", "fp16", falling[:2] + [f + 0.1 for f in falling[2:]],
         [700.0] * STEPS, 0),
    ]
    entries = []
    for cell, system, policy, losses, ms, rc in cells:
        d = write_run(out, cell.replace("/", "_"), losses, ms, rc)
        entries.append({"link": "200mbit", "rep": 1, "cell": cell, "system": system, "layout": "dp4",
                        "policy": policy, "run_dir": d, "rc": rc, "load_before": "1.00 1.00 1.00"})
    meta = {"links": ["200mbit"], "cells": [c[0] for c in cells], "target_step": 10, "target_window": 3,
            "target_reference": "cmpi/dp4/none", "tokens_per_step": 2048, "reps": 1, "steps": STEPS,
            "machine": {"lscpu Model name": "test CPU", "nproc": "2"}, "load_start": "1.0 1.0 1.0",
            "load_end": "1.0 1.0 1.0"}
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f)
    with open(os.path.join(out, "runs.jsonl"), "w") as f:
        for e in entries:
            f.write(json.dumps(e) + "\n")

    check(target_report.main(out, ["synthetic"]) == 0, "target_report.main failed")
    with open(os.path.join(out, "time_to_target.csv")) as f:
        rows = {(r["system"], r["policy"]): r for r in csv.DictReader(line for line in f if not line.startswith("#"))}
    # L* = mean of steps 8..10 = mean(7.2, 6.8, 6.4) = 6.8; reached at step 10.
    ref = rows[("cmpi-train", "none")]
    check(abs(float(ref["target_loss"]) - 6.8) < 1e-9, f"L* {ref['target_loss']}, expected 6.8")
    check(ref["step_reached"] == "10" and abs(float(ref["time_to_target_s"]) - 10.0) < 1e-9,
          f"reference reaches at step {ref['step_reached']} after {ref['time_to_target_s']} s, expected 10 / 10 s")
    fast = rows[("cmpi-train", "zhybrid")]
    check(abs(float(fast["time_to_target_s"]) - 5.0) < 1e-9, f"zhybrid {fast['time_to_target_s']} s, expected 5")
    # tokens/s over the whole run: 20 steps x 2048 tokens / 10 s
    check(abs(float(fast["tokens_per_s"]) - 4096.0) < 1e-6, f"zhybrid tokens/s {fast['tokens_per_s']}")
    stalled = rows[("cmpi-train", "powersgd")]
    check(stalled["reached"] == "0" and stalled["time_to_target_s"] == "", "powersgd must never reach L*")
    check(rows[("cmpi-train", "auto")]["status"].startswith("FAILED"), "a failed run must mark its cell FAILED")
    ddp = rows[("pytorch-ddp", "none")]
    check(abs(float(ddp["time_to_target_s"]) - 8.0) < 1e-9, f"DDP none {ddp['time_to_target_s']} s, expected 8")
    # fp16's curve is 0.1 higher from step 3: its smoothed loss reaches 6.8 at step 11 (6.9, 6.5, 6.1 + 0.1)
    fp16 = rows[("pytorch-ddp", "fp16")]
    check(fp16["step_reached"] == "11" and abs(float(fp16["time_to_target_s"]) - 7.7) < 1e-9,
          f"DDP fp16 reaches at {fp16['step_reached']} after {fp16['time_to_target_s']} s, expected 11 / 7.7 s")
    # best cmpi (zhybrid 5.0 s) over the best DDP that reached L* (fp16 7.7 s)
    check(abs(float(fast["vs_best_ddp"]) - 5.0 / 7.7) < 1e-3, f"vs_best_ddp {fast['vs_best_ddp']}")
    with open(os.path.join(out, "time_to_target.md")) as f:
        md = f.read()
    check("**never**" in md, "the table must say never")
    check("best cmpi-train zhybrid 5.0 s / best DDP fp16 7.7 s = 0.65x" in md, "per-repetition ratio missing:\n" + md)
    print(f"target_report_test: ok ({out})")


if __name__ == "__main__":
    main()
