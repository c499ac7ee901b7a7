#!/usr/bin/env python3
"""cmpi-plot: plots what runs wrote to metrics.jsonl, several runs overlaid.

    scripts/cmpi_plot.py RUN_DIR [RUN_DIR ...] [-o plot.png]

One PNG with five panels: training loss and validation loss (val_loss, on the
steps it was computed) per step, tokens/s per step, per communicator group the
cumulative compression ratio (raw bytes / wire bytes) of what it sent, and the
cumulative bytes rank 0 put on the wire (each step's wire_bytes).
Each run is labelled with its directory name. Uses Debian's
python3-matplotlib with the Agg backend (no display needed).
"""
import argparse
import json
import math
import os
import sys


def read_metrics(run_dir):
    path = os.path.join(run_dir, "metrics.jsonl")
    rows = []
    try:
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    sys.exit(f"cmpi-plot: {path}:{number}: not JSON: {e}")
    except OSError as e:
        sys.exit(f"cmpi-plot: {path}: {e.strerror}")
    if not rows:
        sys.exit(f"cmpi-plot: {path}: no steps recorded")
    return rows


def number(value):
    """A finite float, or NaN for null / missing (non-finite values are null)."""
    return float(value) if isinstance(value, (int, float)) else math.nan


def main(argv):
    parser = argparse.ArgumentParser(prog="cmpi-plot", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run directory (with metrics.jsonl)")
    parser.add_argument("-o", "--output", default="cmpi_plot.png", help="PNG to write (default %(default)s)")
    args = parser.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(17, 8))
    loss_ax, speed_ax, wire_ax = axes[0]
    val_ax, ratio_ax, unused_ax = axes[1]
    unused_ax.axis("off")
    for run_dir in args.runs:
        rows = read_metrics(run_dir)
        label = os.path.basename(os.path.normpath(run_dir))
        steps = [r["step"] for r in rows]
        line, = loss_ax.plot(steps, [number(r.get("loss")) for r in rows], label=f"{label} loss")
        val = [(r["step"], number(r["val_loss"])) for r in rows if "val_loss" in r]
        for ax in (loss_ax, val_ax):
            if val:
                ax.plot(*zip(*val), "o--", color=line.get_color(), label=f"{label} val_loss")
        speed_ax.plot(steps, [number(r.get("tokens_per_s")) for r in rows], label=label)
        sent, total = [], 0.0
        for r in rows:
            total += number(r.get("wire_bytes"))
            sent.append(total / 1e6)
        wire_ax.plot(steps, sent, label=label)
        groups = sorted({g for r in rows for g in r.get("groups", {})})
        for group in groups:
            ratio = [(r["step"], number(r["groups"][group].get("ratio")))
                     for r in rows if group in r.get("groups", {})]
            ratio_ax.plot(*zip(*ratio), label=f"{label} {group}")
    loss_ax.set(title="loss (nats/token)", xlabel="step")
    val_ax.set(title="validation loss", xlabel="step")
    speed_ax.set(title="tokens/s", xlabel="step")
    ratio_ax.set(title="wire ratio per group (raw / wire bytes, cumulative)", xlabel="step")
    wire_ax.set(title="MB sent by rank 0 (cumulative)", xlabel="step")
    for ax in (loss_ax, val_ax, speed_ax, ratio_ax, wire_ax):
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small")
    fig.tight_layout()
    try:
        fig.savefig(args.output, dpi=100)
    except OSError as e:
        sys.exit(f"cmpi-plot: {args.output}: {e.strerror}")
    print(f"cmpi-plot: wrote {args.output} ({len(args.runs)} run(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
