#!/usr/bin/env python3
"""The planner against a finished training benchmark: for every cmpi-train cell of a
bench/train/run.sh output directory, runs `cmpi-train --plan` for the same config, layout, preset
and link, and prints projected / measured for the step time and the memory (docs/planner.md).

  bench/train/plan_check.py OUT [--build-dir build] [--cores N] [--flops F] [--markdown]

Measured: the median step_ms after the benchmark's warm-up steps (rank 0; median over the
repetitions); per pipeline stage the most parameter, gradient, optimizer and staging memory any
rank's optimizer held, and the most resident memory (summary.json "memory"), the busiest stage
taken. Projected: the plan's step time, and the same stage's state and total memory. The plan is
told what the emulated cluster is: ranks per node as the layout put them, the shaped link
(RATE/100us between nodes; TCP inside a node's namespace as 10gbit/20us), and that all ranks
share this machine's cores (--plan-cores, default the nproc the benchmark recorded). The compute
rate is the planner's probe (one layer of the model timed here), run 5 times and the fastest
taken, i.e. what a core does when it runs alone (other work on a shared machine slows a probe, not
the core), then passed to every cell with --plan-flops so all cells see the same figure; --flops
sets it instead. Run it after the benchmark, not beside it.
"""
PROBES = 5

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
INTER_LATENCY = "100us"
INTRA_LINK = "10gbit/20us"


def load_runs(out):
    runs = []
    with open(os.path.join(out, "runs.jsonl")) as f:
        for line in f:
            entry = json.loads(line)
            if entry.get("system") == "cmpi-train" and entry.get("rc") == 0:
                runs.append(entry)
    return runs


def measured(run, warmup):
    with open(os.path.join(run["run_dir"], "metrics.jsonl")) as f:
        steps = [json.loads(line) for line in f]
    timed = [s["step_ms"] for s in steps if s["step"] > warmup] or [s["step_ms"] for s in steps]
    with open(os.path.join(run["run_dir"], "summary.json")) as f:
        stages = json.load(f).get("memory", {}).get("stages", [])
    return statistics.median(timed), stages


def trainer_words(command):
    """The cmpi-train words of a benchmark run's command (after emulated_cluster.sh's --)."""
    words = shlex.split(command)
    return words[words.index("--") + 1:]


def plan_words(words, exe, nodes, per_node, link, cores, flops, waits="spin"):
    keep = [exe]
    i = 1
    while i < len(words):  # drop run.dir/run.name (the plan writes nothing there)
        if words[i] == "--set" and words[i + 1].split("=")[0] in ("run.dir", "run.name"):
            i += 2
            continue
        keep.append(words[i])
        i += 1
    keep += ["--plan", "--plan-ranks", str(nodes * per_node), "--plan-ranks-per-node", str(per_node),
             "--plan-link",
             f"inter={link}/{INTER_LATENCY},intra={INTRA_LINK}", "--plan-cores", str(cores),
             "--plan-waits", waits]
    if flops:
        keep += ["--plan-flops", repr(flops)]
    return keep


def run_plan(words):
    with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMP_NUM_THREADS="1")
        r = subprocess.run(words + ["--plan-json", tmp.name], capture_output=True, text=True,
                           env=env, cwd=ROOT)
        if r.returncode != 0:
            sys.exit(f"plan_check: {' '.join(shlex.quote(w) for w in words)} failed:\n{r.stderr}")
        with open(tmp.name) as f:
            return json.load(f)


def busiest(measured_stages, plan):
    """(stage, measured state, projected state, measured RSS, projected total) of the stage
    whose measured resident memory is largest."""
    if not measured_stages:
        return None
    m = max(measured_stages, key=lambda s: s["max_rss_bytes"])
    p = plan["stages"][m["stage"]]["memory"]
    return m["stage"], m["peak_state_bytes"], p["state_bytes"], m["max_rss_bytes"], p["total_bytes"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="a bench/train/run.sh output directory")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--cores", type=float, default=None,
                    help="cores the ranks shared (default: the nproc meta.json recorded)")
    ap.add_argument("--waits", choices=("spin", "block"), default="spin",
                    help="--plan-waits: waiting ranks poll (spin, what the trainer does) or sleep")
    ap.add_argument("--background-load", type=float, default=0,
                    help="runnable processes of other users beside the benchmark (e.g. the load "
                         "average before it started): the job then gets cores x ranks / (ranks + "
                         "load) of the cores, as a fair scheduler shares them (default 0: the "
                         "cores are the job's)")
    ap.add_argument("--flops", type=float, default=None,
                    help="achieved FLOP/s per rank on one core (default: the planner's probe, once)")
    args = ap.parse_args()
    exe = os.path.join(os.path.abspath(args.build_dir), "trainer", "cmpi-train")
    with open(os.path.join(args.out, "meta.json")) as f:
        meta = json.load(f)
    cores = args.cores or float(meta["machine"]["nproc"])
    warmup = int(meta["warmup"])
    runs = load_runs(args.out)
    if not runs:
        sys.exit(f"plan_check: no successful cmpi-train run in {args.out}/runs.jsonl")

    cells = {}
    for run in runs:
        cells.setdefault((run["link"], run["layout"], run["policy"]), []).append(run)
    flops = args.flops
    if not flops:
        first = runs[0]
        cluster = shlex.split(first["command"])
        nodes, per_node = (int(w) for w in cluster[cluster.index("run") + 1:cluster.index("run") + 3])
        words = plan_words(trainer_words(first["command"]), exe, nodes, per_node, first["link"],
                           cores, None)
        flops = max(run_plan(words)["flops_per_second"] for _ in range(PROBES))
    rows = []
    for (link, layout, policy), reps in cells.items():
        step_ms = statistics.median(measured(r, warmup)[0] for r in reps)
        _, stages = measured(reps[-1], warmup)
        words = trainer_words(reps[-1]["command"])
        cluster = shlex.split(reps[-1]["command"])
        nodes, per_node = (int(w) for w in cluster[cluster.index("run") + 1:cluster.index("run") + 3])
        ranks = nodes * per_node
        job_cores = cores * ranks / (ranks + args.background_load)
        plan = run_plan(plan_words(words, exe, nodes, per_node, link, round(job_cores, 3), flops,
                                    args.waits))
        rows.append((link, layout, policy, step_ms, plan["step_seconds"] * 1e3, busiest(stages, plan)))

    print(f"plan_check: {args.out} | {cores:g} cores shared, background load "
          f"{args.background_load:g} | compute {flops / 1e9:.3g} GFLOP/s per "
          f"rank | links inter RATE/{INTER_LATENCY}, intra {INTRA_LINK}")
    print(f"benchmark load average at start {meta.get('load_start', '?')}, at end {meta.get('load_end', '?')}")
    print("| link | layout | preset | measured step ms | projected ms | projected / measured | "
          "state MB measured | projected | ratio | resident MB measured | projected total | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for link, layout, policy, step_ms, projected_ms, mem in rows:
        line = f"| {link} | {layout} | {policy} | {step_ms:.0f} | {projected_ms:.0f} | {projected_ms / step_ms:.2f} |"
        if mem:
            stage, state, state_p, rss, total_p = mem
            line += (f" {state / 1e6:.1f} | {state_p / 1e6:.1f} | {state_p / state:.3f} |"
                     f" {rss / 1e6:.0f} (stage {stage}) | {total_p / 1e6:.0f} | {total_p / rss:.2f} |")
        else:
            line += " | | | | | |"
        print(line)
    within = sum(1 for r in rows if 0.75 <= r[4] / r[3] <= 1.25)
    print(f"\nstep time within 25 %: {within} of {len(rows)} cells")
    mems = [r[5] for r in rows if r[5]]
    if mems:
        state_ok = sum(1 for m in mems if abs(m[2] / m[1] - 1) <= 0.10)
        rss_ok = sum(1 for m in mems if abs(m[4] / m[3] - 1) <= 0.10)
        print(f"state memory within 10 %: {state_ok} of {len(mems)}; "
              f"resident memory within 10 %: {rss_ok} of {len(mems)}")


if __name__ == "__main__":
    main()
