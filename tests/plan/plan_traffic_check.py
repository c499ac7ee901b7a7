#!/usr/bin/env python3
"""Compares what `cmpi-train --plan` projects a rank to send per step with what
the trainer's CommStats measured on world rank 0 (pipeline stage 0): per
group, calls and raw bytes of one step (the difference of two consecutive
steps' cumulative stats in metrics.jsonl, so setup traffic cancels out).
With SUMMARY_JSON, also the memory the plan projects per pipeline stage for
parameters, gradients, optimizer state and staging buffers against the most
the trainer's optimizer held on any rank of that stage (summary.json), within
1 % (padding to a multiple of dp is the only difference).
Usage: plan_traffic_check.py METRICS_JSONL PLAN_JSON [SUMMARY_JSON]"""
import json
import sys

metrics = [json.loads(line) for line in open(sys.argv[1])]
plan = json.load(open(sys.argv[2]))
before, after = metrics[-2]["groups"], metrics[-1]["groups"]
measured = {}
for group, stats in after.items():
    prior = before.get(group, {"calls": 0, "raw_bytes": 0})
    calls = stats["calls"] - prior["calls"]
    raw = stats["raw_bytes"] - prior["raw_bytes"]
    if calls:
        measured[group] = (calls, raw)
projected = {g: (v["calls"], round(v["raw_bytes"])) for g, v in plan["stages"][0]["groups"].items()}
ok = True
for group in sorted(set(measured) | set(projected)):
    m, p = measured.get(group, (0, 0)), projected.get(group, (0, 0))
    same = m[0] == p[0] and m[1] == p[1]
    ok &= same
    print(f"{plan['layout']:<32} {group:<5} measured calls {m[0]:>4} bytes {m[1]:>10} | "
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
