#!/usr/bin/env python3
"""Whole-run figures of a benchmark whose links change mid-run (run_bench.py --link-schedule).

With the link changing, a median step time says little: what a user sees is the time of the whole
run. Per run this sums step_ms over every step (warm-up included: the schedule starts counting at
step 1) and gives tokens/s over the run; per cell, the median over repetitions that exited 0.
Writes OUT/link_change.md (the table) and OUT/link_change_steps.png (step time against step, the
first repetition of each cell, one panel per starting link, dotted lines where the link changed).

    link_change_report.py OUT
"""

import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from report_common import color_of, fmt, read_jsonl  # noqa: E402


def run_curve(entry):
    path = os.path.join(entry.get("run_dir") or "", "metrics.jsonl")
    if entry.get("rc") != 0 or not os.path.exists(path):
        return None
    steps = read_jsonl(path)
    return steps or None


def build(meta, entries):
    latest = {}
    for e in entries:
        latest[(e["link"], e["rep"], e["cell"])] = e
    cells = {}
    for (link, rep, cell_id), e in sorted(latest.items(), key=lambda kv: kv[0][1]):
        c = cells.setdefault((link, cell_id), {"link": link, "cell": cell_id, "system": e["system"],
                                               "layout": e["layout"], "policy": e["policy"], "runs": []})
        steps = run_curve(e)
        c["runs"].append({"rep": rep, "steps": steps, "changes": e.get("link_changes", [])})
    rows = []
    for c in cells.values():
        ok = [r for r in c["runs"] if r["steps"]]
        row = dict(c, runs_ok=len(ok), runs_total=len(c["runs"]))
        if ok:
            seconds = [sum(s["step_ms"] for s in r["steps"]) / 1e3 for r in ok]
            tokens = [sum(s["tokens_per_s"] * s["step_ms"] / 1e3 for s in r["steps"]) for r in ok]
            row["run_s"] = statistics.median(seconds)
            row["tokens_per_s"] = statistics.median(t / s for t, s in zip(tokens, seconds))
            row["curve"] = [s["step_ms"] for s in ok[0]["steps"]]
            row["changes"] = ok[0]["changes"]
            row["final_loss"] = statistics.median(r["steps"][-1]["loss"] for r in ok)
        rows.append(row)
    for row in rows:
        rivals = [r for r in rows if r["link"] == row["link"] and r is not row and r.get("run_s")]
        if row.get("run_s") and rivals:
            best = min(rivals, key=lambda r: r["run_s"])
            row["vs_best_other"] = best["run_s"] / row["run_s"]
            row["best_other"] = f"{'DDP ' if best['system'] == 'pytorch-ddp' else ''}{best['policy']}"
    return rows


def write_markdown(path, meta, rows):
    with open(path, "w") as f:
        f.write(f"link schedule {meta.get('link_schedule')} (after STEP steps: RATE), each run starting "
                f"at its link; {meta.get('steps')} steps; load {meta.get('load_start', '?')} -> "
                f"{meta.get('load_end', '?')}\n\n")
        f.write("| start link | system | layout | policy | runs ok | whole run s | tokens/s over the run "
                "| speed vs the best other cell | final loss |\n|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            vs = (f"{r['vs_best_other']:.2f}× ({r['best_other']})" if r.get("vs_best_other") else "–")
            f.write(f"| {r['link']} | {r['system']} | {r['layout']} | {r['policy']} | {r['runs_ok']}/"
                    f"{r['runs_total']} | {fmt(r.get('run_s'), 1) or '–'} | "
                    f"{fmt(r.get('tokens_per_s'), 0) or '–'} | {vs} | "
                    f"{fmt(r.get('final_loss'), 3) or '–'} |\n")


def plot(path, meta, rows):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    links = [l for l in meta["links"] if any(r["link"] == l and r.get("curve") for r in rows)]
    if not links:
        return
    extra = {}
    fig, axes = plt.subplots(1, len(links), figsize=(7 * len(links), 4.5), squeeze=False, sharey=True)
    for ax, link in zip(axes[0], links):
        changes = []
        for r in rows:
            if r["link"] != link or not r.get("curve"):
                continue
            ys = r["curve"]
            ax.plot(range(1, len(ys) + 1), ys, "--" if r["system"] == "pytorch-ddp" else "-",
                    color=color_of(r["policy"], extra), linewidth=1.2, marker=".", markersize=4,
                    label=f"{'DDP ' if r['system'] == 'pytorch-ddp' else ''}{r['layout']} {r['policy']}")
            changes = changes or r.get("changes", [])
        for c in changes:
            ax.axvline(c["after_step"] + 0.5, color="black", linestyle=":", linewidth=0.9)
            ax.text(c["after_step"] + 0.7, ax.get_ylim()[1] * 0.95, c["rate"], fontsize=8, va="top")
        ax.set_title(f"starting at {link}; schedule {meta.get('link_schedule')}")
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("step time, ms (first repetition)")
    fig.suptitle(f"Step time as the link changes (load {meta.get('load_start', '?').split()[0]}→"
                 f"{meta.get('load_end', '?').split()[0]})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(out):
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    index = os.path.join(out, "runs.jsonl")
    rows = build(meta, read_jsonl(index) if os.path.exists(index) else [])
    write_markdown(os.path.join(out, "link_change.md"), meta, rows)
    try:
        plot(os.path.join(out, "link_change_steps.png"), meta, rows)
    except ImportError as e:
        print(f"link_change_report: no plot ({e}); install python3-matplotlib")
    with open(os.path.join(out, "link_change.md")) as f:
        print(f.read(), end="")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: link_change_report.py OUT_DIR")
    sys.exit(main(sys.argv[1]))
