#!/usr/bin/env python3
"""Compares what `cmpi-train --plan` projects a rank of each pipeline stage to
send per step with what the trainer's CommStats measured on a rank of that
stage: per stage and group, calls and raw bytes of one step (the difference
of two consecutive steps' cumulative stats, so setup traffic cancels out).
The measured counts come from the trainer's stage traffic log
(CMPI_STAGE_TRAFFIC=DIR: DIR/stage<S>.jsonl, written by the first rank of
stage S, trainer/stage_traffic_log.h); every stage of the plan (first,
middle, last) must have one. With SUMMARY_JSON, also the memory the plan
projects per pipeline stage for parameters, gradients, optimizer state and
staging buffers against the most the trainer's optimizer held on any rank of
that stage (summary.json), within 1 % (padding to a multiple of dp is the
only difference).
Usage: plan_traffic_check.py STAGE_DIR PLAN_JSON [SUMMARY_JSON]"""
import json
import os
import sys

plan = json.load(open(sys.argv[2]))


def measured_step(path):
    """Calls and raw bytes per group of the last step in a stage log."""
    records = [json.loads(line) for line in open(path)]
    if len(records) < 2:
        sys.exit(f"{path}: {len(records)} step records, need 2")
    before, after = records[-2]["groups"], records[-1]["groups"]
    out = {}
    for group, stats in after.items():
        prior = before.get(group, {"calls": 0, "raw_bytes": 0})
        calls = stats["calls"] - prior["calls"]
        if calls:
            out[group] = (calls, stats["raw_bytes"] - prior["raw_bytes"])
    return out, records[-1]["world_rank"]


ok = True
for stage in plan["stages"]:
    path = os.path.join(sys.argv[1], f"stage{stage['stage']}.jsonl")
    if not os.path.exists(path):
        print(f"{plan['layout']:<32} stage {stage['stage']}: no measured traffic ({path})")
        ok = False
        continue
    measured, rank = measured_step(path)
    projected = {g: (v["calls"], round(v["raw_bytes"])) for g, v in stage["groups"].items()}
    for group in sorted(set(measured) | set(projected)):
        m, p = measured.get(group, (0, 0)), projected.get(group, (0, 0))
        same = m[0] == p[0] and m[1] == p[1]
        ok &= same
        print(f"{plan['layout']:<32} stage {stage['stage']} (rank {rank:>2}) {group:<5} "
              f"measured calls {m[0]:>4} bytes {m[1]:>10} | "
              f"projected calls {p[0]:>4} bytes {p[1]:>10} {'ok' if same else 'MISMATCH'}")
if len(sys.argv) > 3:
    measured_stages = json.load(open(sys.argv[3]))["memory"]["stages"]
    for stage, m in zip(plan["stages"], measured_stages):
        projected, held = stage["memory"]["state_bytes"], m["peak_state_bytes"]
        close = abs(projected - held) <= 0.01 * held
        ok &= close
        print(f"{plan['layout']:<32} stage {m['stage']} state memory measured {held:>10} | "
              f"projected {projected:>10.0f} {'ok' if close else 'MISMATCH'}")
sys.exit(0 if ok else 1)
