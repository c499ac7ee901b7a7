#!/usr/bin/env python3
"""One rank, no communication: cmpi-train against PyTorch eager on the same model, data and optimizer.

Each repetition runs both systems one after the other (the order alternates between
repetitions, so drifting machine load hits both alike): `cmpi-train` as a single MPI process,
and `ddp_peer.py --eager` (the same GPT, token stream, initial weights, AdamW, schedule and
clipping; no process group, no DDP wrapper). Both write one metrics line per step with the step's
wall time (step_ms) and the process's CPU time (cpu_ms); the figures are medians over the steps
after --warmup, then over repetitions, with the per-repetition ratio cmpi-train / eager.
CPU time per step is the steadier figure on a shared machine: another process taking the core
stretches wall time, not CPU time. The 1-minute load average is recorded before every run.

    bench/train/compute_parity.py --build-dir build --reps 3 --steps 30 --out /tmp/parity

--baseline PATH adds a third system, another cmpi-train binary (e.g. a copy of the build before a
change), run in the same rotation: the before/after ratio under the same machine noise.

Writes OUT/compute_parity.md (the table and the machine), OUT/runs.jsonl (every run) and the
runs' directories under OUT/runs/.
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def load1():
    return os.getloadavg()[0]


def git_commit():
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                           text=True, cwd=ROOT).stdout.strip()
    return r.stdout.strip() + (" (modified)" if dirty else "")


def read_metrics(path, warmup):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    timed = [r for r in rows if r["step"] > warmup]
    if not timed:
        raise RuntimeError(f"{path}: no steps after the {warmup} warm-up steps")
    if any("cpu_ms" not in r for r in timed):
        raise RuntimeError(f"{path}: a step without cpu_ms")
    return {"step_ms": statistics.median(r["step_ms"] for r in timed),
            "cpu_ms": statistics.median(r["cpu_ms"] for r in timed),
            "losses": [r["loss"] for r in rows]}


def spread(values):
    return f"{min(values):.0f}–{max(values):.0f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--config", default=os.path.join(HERE, "gpt-3m.yaml"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5, help="steps left out of the medians")
    ap.add_argument("--baseline", default="", help="another cmpi-train binary to run in the rotation")
    ap.add_argument("--set", action="append", default=[], help="extra KEY=VALUE for both systems")
    ap.add_argument("--python", default=os.environ.get("CMPI_BENCH_PYTHON", os.environ.get("CMPI_PYTHON", sys.executable)))
    ap.add_argument("--out", default=os.path.join(ROOT, "runs", "compute-parity-" + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())))
    args = ap.parse_args()
    if args.reps < 1 or args.steps <= args.warmup:
        sys.exit("compute_parity: need --reps >= 1 and --steps > --warmup")

    trainer = os.path.abspath(os.path.join(args.build_dir, "trainer", "cmpi-train"))
    if not os.access(trainer, os.X_OK):
        sys.exit(f"compute_parity: no cmpi-train at {trainer} (--build-dir)")
    out = os.path.abspath(args.out)
    runs_dir = os.path.join(out, "runs")
    os.makedirs(runs_dir, exist_ok=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")

    sets = [f"training.steps={args.steps}", "parallel.data=1", "parallel.tensor=1", "parallel.pipeline=1",
            "parallel.zero_stage=0", "compression.preset=none"] + args.set
    base = [trainer, "--config", os.path.abspath(args.config)]
    for s in sets:
        base += ["--set", s]
    resolved = os.path.join(out, "resolved_config.yaml")
    r = subprocess.run(base + ["--print-config"], capture_output=True, text=True, env=env, cwd=ROOT)
    if r.returncode != 0 or "model:" not in r.stdout:
        sys.exit(f"compute_parity: could not resolve the config:\n{shlex.join(base)} --print-config\n{r.stderr}")
    with open(resolved, "w") as f:
        f.write(r.stdout)

    baseline = os.path.abspath(args.baseline) if args.baseline else ""
    if baseline and not os.access(baseline, os.X_OK):
        sys.exit(f"compute_parity: --baseline {baseline} is not an executable")

    def command(system, name):
        if system in ("cmpi-train", "cmpi-baseline"):
            binary = [baseline] if system == "cmpi-baseline" else [trainer]
            return binary + base[1:] + ["--set", f"run.dir={runs_dir}", "--set", f"run.name={name}"]
        return [args.python, os.path.join(HERE, "ddp_peer.py"), "--eager", "--config", resolved,
                "--out", os.path.join(runs_dir, name), "--data-dir", ROOT]

    systems = ["cmpi-train", "pytorch-eager"] + (["cmpi-baseline"] if baseline else [])
    short = {"cmpi-train": "cmpi", "pytorch-eager": "eager", "cmpi-baseline": "baseline"}
    load_start = os.getloadavg()
    results = {s: [] for s in systems}
    with open(os.path.join(out, "runs.jsonl"), "w") as log:
        for rep in range(args.reps):
            for system in (systems if rep % 2 == 0 else systems[::-1]):
                name = f"{short[system]}-r{rep}"
                cmd = command(system, name)
                before = load1()
                started = time.perf_counter()
                with open(os.path.join(out, name + ".log"), "w") as console:
                    rc = subprocess.run(cmd, stdout=console, stderr=subprocess.STDOUT, env=env, cwd=ROOT).returncode
                wall = time.perf_counter() - started
                if rc != 0:
                    sys.exit(f"compute_parity: {name} failed ({rc}); see {out}/{name}.log\n{shlex.join(cmd)}")
                m = read_metrics(os.path.join(runs_dir, name, "metrics.jsonl"), args.warmup)
                m.update(rep=rep, load_1min=before)
                results[system].append(m)
                rec = {"name": name, "system": system, "rep": rep, "command": shlex.join(cmd), "wall_s": wall,
                       "load_1min_before": before, "step_ms": m["step_ms"], "cpu_ms": m["cpu_ms"]}
                log.write(json.dumps(rec) + "\n")
                log.flush()
                print(f"compute_parity: {name}: step {m['step_ms']:.1f} ms, cpu {m['cpu_ms']:.1f} ms "
                      f"(load {before:.2f})", flush=True)
    load_end = os.getloadavg()

    with open(resolved) as f:
        import yaml

        cfg = yaml.safe_load(f)
    tokens = int(cfg["training"]["global_batch"]) * int(cfg["model"]["seq_len"])
    # The same workload: both systems' losses agree to float rounding (bench/train/README.md).
    loss_gap = max(abs(a - b) for a, b in zip(results["cmpi-train"][0]["losses"][:5],
                                              results["pytorch-eager"][0]["losses"][:5]))
    by_rep = {s: {m["rep"]: m for m in results[s]} for s in systems}
    wall_ratio = [by_rep["pytorch-eager"][r]["step_ms"] / by_rep["cmpi-train"][r]["step_ms"] for r in range(args.reps)]
    cpu_ratio = [by_rep["pytorch-eager"][r]["cpu_ms"] / by_rep["cmpi-train"][r]["cpu_ms"] for r in range(args.reps)]

    lines = [
        "| system | tokens/s (wall) | range | tokens/s (CPU time) | range | step ms | CPU ms/step |",
        "|---|---|---|---|---|---|---|"]
    for s in systems:
        wall_tps = [tokens / m["step_ms"] * 1e3 for m in results[s]]
        cpu_tps = [tokens / m["cpu_ms"] * 1e3 for m in results[s]]
        lines.append(f"| {s} | {statistics.median(wall_tps):.0f} | {spread(wall_tps)} | "
                     f"{statistics.median(cpu_tps):.0f} | {spread(cpu_tps)} | "
                     f"{statistics.median(m['step_ms'] for m in results[s]):.1f} | "
                     f"{statistics.median(m['cpu_ms'] for m in results[s]):.1f} |")
    lines.append("")
    def ratio_line(label, wall, cpu):
        return (f"{label} tokens/s, per repetition: wall {statistics.median(wall):.3f}× "
                f"({min(wall):.3f}–{max(wall):.3f}), CPU time {statistics.median(cpu):.3f}× "
                f"({min(cpu):.3f}–{max(cpu):.3f})")

    lines.append(ratio_line("cmpi-train / eager", wall_ratio, cpu_ratio))
    if baseline:
        for other in ("pytorch-eager", "cmpi-train"):
            wall = [by_rep["cmpi-baseline"][r]["step_ms"] / by_rep[other][r]["step_ms"] for r in range(args.reps)]
            cpu = [by_rep["cmpi-baseline"][r]["cpu_ms"] / by_rep[other][r]["cpu_ms"] for r in range(args.reps)]
            lines.append("")
            lines.append(ratio_line(f"{other} / baseline ({baseline})", wall, cpu))
    header = [
        f"# compute parity, one rank: {args.reps} repetitions × {args.steps} steps "
        f"(medians over steps > {args.warmup}), {tokens} tokens per step",
        f"machine: {cpu_model()}, {os.cpu_count()} CPUs; git {git_commit()}",
        f"load average (1, 5, 15 min) at start {load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f}, "
        f"at end {load_end[0]:.2f} {load_end[1]:.2f} {load_end[2]:.2f}; 1-min load before each run: "
        + ", ".join(f"{m['load_1min']:.2f}" for s in systems for m in results[s]),
        f"command: {shlex.join([sys.argv[0]] + sys.argv[1:])}",
        f"same workload: |loss difference| over the first 5 steps ≤ {loss_gap:.2e}",
        ""]
    text = "\n".join(header + lines) + "\n"
    with open(os.path.join(out, "compute_parity.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
