#!/usr/bin/env python3
"""Time to a target loss, from a finished training benchmark run with --target-step (run_bench.py).

    target_report.py OUT      # reads OUT/meta.json, OUT/runs.jsonl and each run's metrics.jsonl

How it works:
- Smoothed loss: at step s (1-based), the mean of the losses of steps s-w+1 .. s, w =
  --target-window (defined from step w on).
- L*: per link, the smoothed loss of the reference cell (default cmpi/<first layout>/none) at
  --target-step, the median over that cell's repetitions. (Lossless cmpi-train runs repeat the same
  losses bit for bit, so the median is the value.)
- A run reaches L* at the first step s >= w whose smoothed loss is <= L*; its time to L* is the sum
  of step_ms of steps 1..s (the training steps alone: process start-up, data and model set-up are
  left out, for both systems alike; warm-up steps and preset auto's probes count). A run that
  never gets there says "never" and its best smoothed loss.
- tokens/s: the whole run's tokens over the sum of its step times.
- Per cell: medians over the repetitions, min-max ranges, "reached in k of n".
- Ratios: per repetition (one interleaved session: the same machine noise for every cell), the best
  cmpi-train time to L* over the best DDP time among the hooks that reached it; reported as the
  median and range over repetitions, per link. Against DDP none too, when it reached L*.

Writes OUT/time_to_target.csv ('#' lines: machine, load, commands, L*), OUT/time_to_target.md and
OUT/time_to_target.png (smoothed loss against cumulative step time, one line per cell and
repetition, DDP dashed, L* dotted, one panel per link).
"""

import csv
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from report_common import color_of, fmt, read_jsonl  # noqa: E402

COLUMNS = ["link", "system", "layout", "policy", "status", "target_loss", "reached", "runs",
           "time_to_target_s", "time_to_target_s_min", "time_to_target_s_max", "step_reached",
           "vs_best_ddp", "tokens_per_s", "tokens_per_s_min", "tokens_per_s_max", "final_loss",
           "final_loss_smoothed", "best_smoothed_loss", "run_time_s", "load_1min_runs"]


def smoothed(losses, window):
    """Trailing mean over `window` steps; index i = step i+1; None before step `window`."""
    out, total = [], 0.0
    for i, x in enumerate(losses):
        total += x
        if i >= window:
            total -= losses[i - window]
        out.append(total / window if i + 1 >= window else None)
    return out


def run_curve(entry):
    """(losses, step_ms) of a run that exited 0 with a complete metrics.jsonl, else None."""
    path = os.path.join(entry.get("run_dir") or "", "metrics.jsonl")
    if entry.get("rc") != 0 or not os.path.exists(path):
        return None
    steps = read_jsonl(path)
    if not steps:
        return None
    return [r["loss"] for r in steps], [r["step_ms"] for r in steps], steps[0].get("total_steps")


def time_to_target(losses, step_ms, window, target):
    """(step, seconds) where the smoothed loss first reaches target, or (None, None)."""
    elapsed = 0.0
    for i, (s, ms) in enumerate(zip(smoothed(losses, window), step_ms)):
        elapsed += ms / 1e3
        if s is not None and s <= target:
            return i + 1, elapsed
    return None, None


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def analyse(meta, entries):
    """Returns (rows, runs, targets, ratios): one row per link x cell, every run's figures,
    L* per link, and the per-repetition ratios per link."""
    window, step = int(meta["target_window"]), int(meta["target_step"])
    reference = meta.get("target_reference") or ""
    latest = {}
    for e in entries:
        latest[(e["link"], e["rep"], e["cell"])] = e
    runs = []
    for (link, rep, cell), e in latest.items():
        curve = run_curve(e)
        runs.append({"link": link, "rep": rep, "cell": cell, "system": e["system"], "layout": e["layout"],
                     "policy": e["policy"], "curve": curve, "load": (e.get("load_before") or "?").split()[0]})
    targets = {}
    for link in meta["links"]:
        ref = [r for r in runs if r["link"] == link and r["cell"] == reference and r["curve"]
               and len(r["curve"][0]) >= step]
        values = [smoothed(r["curve"][0], window)[step - 1] for r in ref]
        targets[link] = median(values)
    for r in runs:
        r["target"] = targets.get(r["link"])
        if r["curve"] is None:
            continue
        losses, ms, _ = r["curve"]
        r["step"], r["seconds"] = (time_to_target(losses, ms, window, r["target"])
                                   if r["target"] is not None else (None, None))
        sm = [x for x in smoothed(losses, window) if x is not None]
        r["final_loss"], r["final_smoothed"] = losses[-1], (sm[-1] if sm else None)
        r["best_smoothed"] = min(sm) if sm else None
        r["run_time_s"] = sum(ms) / 1e3
        tokens = meta.get("tokens_per_step")
        r["tokens_per_s"] = tokens * len(ms) / r["run_time_s"] if tokens and r["run_time_s"] else None

    order = {c: i for i, c in enumerate(meta["cells"])}
    rows = []
    for link in meta["links"]:
        for cell in sorted({r["cell"] for r in runs if r["link"] == link}, key=lambda c: order.get(c, 99)):
            mine = [r for r in runs if r["link"] == link and r["cell"] == cell]
            ok = [r for r in mine if r["curve"]]
            reached = [r for r in ok if r.get("seconds") is not None]
            first = mine[0]
            row = {"link": link, "cell": cell, "system": first["system"], "layout": first["layout"],
                   "policy": first["policy"], "runs": len(mine), "reached": len(reached),
                   "target_loss": targets.get(link),
                   "status": "ok" if len(ok) == len(mine) else f"FAILED ({len(mine) - len(ok)} of {len(mine)} runs)",
                   "load_1min_runs": "/".join(r["load"] for r in sorted(mine, key=lambda r: r["rep"]))}
            if reached:
                times = [r["seconds"] for r in reached]
                row.update(time_to_target_s=median(times), time_to_target_s_min=min(times),
                           time_to_target_s_max=max(times), step_reached=median([r["step"] for r in reached]))
            if ok:
                tps = [r["tokens_per_s"] for r in ok if r["tokens_per_s"]]
                row.update(tokens_per_s=median(tps), tokens_per_s_min=min(tps) if tps else None,
                           tokens_per_s_max=max(tps) if tps else None,
                           final_loss=median([r["final_loss"] for r in ok]),
                           final_loss_smoothed=median([r["final_smoothed"] for r in ok]),
                           best_smoothed_loss=median([r["best_smoothed"] for r in ok]),
                           run_time_s=median([r["run_time_s"] for r in ok]))
            rows.append(row)

    ratios = {}
    for link in meta["links"]:
        per_rep = []
        for rep in sorted({r["rep"] for r in runs if r["link"] == link}):
            these = [r for r in runs if r["link"] == link and r["rep"] == rep and r.get("seconds") is not None]
            cmpi = [r for r in these if r["system"] == "cmpi-train"]
            ddp = [r for r in these if r["system"] == "pytorch-ddp"]
            if cmpi and ddp:
                best_c = min(cmpi, key=lambda r: r["seconds"])
                best_d = min(ddp, key=lambda r: r["seconds"])
                ddp_none = next((r for r in ddp if r["policy"] == "none"), None)
                per_rep.append({"rep": rep, "cmpi": best_c["policy"], "cmpi_s": best_c["seconds"],
                                "ddp": best_d["policy"], "ddp_s": best_d["seconds"],
                                "ratio": best_c["seconds"] / best_d["seconds"],
                                "ratio_vs_ddp_none": best_c["seconds"] / ddp_none["seconds"] if ddp_none else None})
        ratios[link] = per_rep
        # each row against the best DDP cell that reached L* (medians over repetitions)
        ddp_rows = [r for r in rows if r["link"] == link and r["system"] == "pytorch-ddp"
                    and r.get("time_to_target_s") is not None]
        if ddp_rows:
            best = min(r["time_to_target_s"] for r in ddp_rows)
            for r in rows:
                if r["link"] == link and r.get("time_to_target_s") is not None:
                    r["vs_best_ddp"] = r["time_to_target_s"] / best
    return rows, runs, targets, ratios


def summary_lines(meta, targets, ratios):
    lines = []
    for link in meta["links"]:
        t = targets.get(link)
        lines.append(f"link {link}: L* = {fmt(t, 4) or 'unknown (reference cell has no run to step ' + str(meta['target_step']) + ')'}"
                     f" = {meta.get('target_reference')}'s {meta['target_window']}-step mean loss at step "
                     f"{meta['target_step']}")
        for p in ratios.get(link, []):
            lines.append(f"  repetition {p['rep']}: best cmpi-train {p['cmpi']} {p['cmpi_s']:.1f} s / best DDP "
                         f"{p['ddp']} {p['ddp_s']:.1f} s = {p['ratio']:.2f}x"
                         + (f" (vs DDP none {p['ratio_vs_ddp_none']:.2f}x)" if p["ratio_vs_ddp_none"] else ""))
        rs = [p["ratio"] for p in ratios.get(link, [])]
        if rs:
            lines.append(f"  best cmpi-train / best DDP time to L*: median {statistics.median(rs):.2f}x "
                         f"(range {min(rs):.2f}-{max(rs):.2f} over {len(rs)} repetitions)")
    return lines


def write_csv(path, meta, header, rows):
    with open(path, "w", newline="") as f:
        for line in header:
            f.write("# " + line + "\n")
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for r in rows:
            w.writerow([fmt(r.get(c), 4 if "loss" in c else (3 if c == "vs_best_ddp" else 1)) for c in COLUMNS])


def write_markdown(path, meta, rows, summary):
    with open(path, "w") as f:
        f.write("| link | system | policy | reaches L* after (s) | step | vs best DDP | tokens/s | "
                "final loss | best smoothed loss |\n|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            system = ("DDP " if r["system"] == "pytorch-ddp" else "cmpi ") + r["layout"]
            if r.get("time_to_target_s") is not None:
                reach = f"{r['time_to_target_s']:.1f} ({r['time_to_target_s_min']:.1f}–{r['time_to_target_s_max']:.1f})"
                if r["reached"] < r["runs"]:
                    reach += f", {r['reached']} of {r['runs']} runs"
            else:
                reach = "**never**" if r["status"] == "ok" else r["status"]
            tps = (f"{r['tokens_per_s']:.0f} ({r['tokens_per_s_min']:.0f}–{r['tokens_per_s_max']:.0f})"
                   if r.get("tokens_per_s") else "–")
            f.write(f"| {r['link']} | {system} | {r['policy']} | {reach} | {fmt(r.get('step_reached'), 0) or '–'} | "
                    f"{fmt(r.get('vs_best_ddp'), 2) or '–'} | {tps} | {fmt(r.get('final_loss'), 3) or '–'} | "
                    f"{fmt(r.get('best_smoothed_loss'), 3) or '–'} |\n")
        f.write("\n" + "\n".join(summary) + "\n")


def plot(path, meta, runs, targets):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    links = [l for l in meta["links"] if any(r["link"] == l and r["curve"] for r in runs)]
    if not links:
        return
    window = int(meta["target_window"])
    extra = {}
    fig, axes = plt.subplots(1, len(links), figsize=(7 * len(links), 4.8), squeeze=False, sharey=True)
    for ax, link in zip(axes[0], links):
        labelled = set()
        for r in sorted(runs, key=lambda r: (r["cell"], r["rep"])):
            if r["link"] != link or not r["curve"]:
                continue
            losses, ms, _ = r["curve"]
            t, xs, ys = 0.0, [], []
            for s, m in zip(smoothed(losses, window), ms):
                t += m / 1e3
                if s is not None:
                    xs.append(t)
                    ys.append(s)
            label = ("DDP " if r["system"] == "pytorch-ddp" else "cmpi ") + f"{r['layout']} {r['policy']}"
            ax.plot(xs, ys, "--" if r["system"] == "pytorch-ddp" else "-", color=color_of(r["policy"], extra),
                    linewidth=1.1, alpha=0.85, label=label if label not in labelled else None)
            labelled.add(label)
            if r.get("seconds") is not None:
                ax.plot([r["seconds"]], [r["target"]], "o", color=color_of(r["policy"], extra), markersize=3)
        if targets.get(link) is not None:
            ax.axhline(targets[link], color="black", linestyle=":", linewidth=0.9,
                       label=f"L* = {targets[link]:.3f}")
        ax.set_title(f"link {link}")
        ax.set_xlabel("wall time: sum of step times (s)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
    axes[0][0].set_ylabel(f"training loss, mean of the last {window} steps")
    m = meta.get("machine", {})
    fig.suptitle(f"Time to the target loss (L* = {meta.get('target_reference')} at step {meta['target_step']})\n"
                 f"{m.get('lscpu Model name', '')}, {m.get('nproc', '?')} CPUs; load "
                 f"{meta.get('load_start', '?').split()[0]}→{(meta.get('load_end') or '?').split()[0]}; "
                 f"{meta.get('reps')} reps × {meta.get('steps')} steps; dots: L* reached", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(out, header=None):
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    if not meta.get("target_step"):
        return 0
    index = os.path.join(out, "runs.jsonl")
    entries = read_jsonl(index) if os.path.exists(index) else []
    rows, runs, targets, ratios = analyse(meta, entries)
    summary = summary_lines(meta, targets, ratios)
    header = list(header or []) + [
        f"time to target: L* per link = {meta.get('target_reference')}'s smoothed loss (mean of "
        f"{meta['target_window']} steps) at step {meta['target_step']}, median over repetitions; time to L* = "
        "sum of step_ms up to the first step whose smoothed loss <= L* (start-up excluded); tokens/s = "
        "the run's tokens / the sum of its step times; ranges = min-max over repetitions"] + summary
    write_csv(os.path.join(out, "time_to_target.csv"), meta, header, rows)
    write_markdown(os.path.join(out, "time_to_target.md"), meta, rows, summary)
    try:
        plot(os.path.join(out, "time_to_target.png"), meta, runs, targets)
    except ImportError as e:
        print(f"target_report: no plot ({e}); install python3-matplotlib")
    with open(os.path.join(out, "time_to_target.md")) as f:
        print(f.read(), end="")
    print(f"target_report: -> {out}/time_to_target.csv, time_to_target.md, time_to_target.png")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: target_report.py OUT_DIR")
    sys.exit(main(sys.argv[1]))
