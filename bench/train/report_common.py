"""What the end-to-end benchmark's report scripts share (report.py, link_change_report.py):
reading a JSON-lines file, formatting a figure for a table, and one colour per policy so that
every plot of a run draws a policy alike."""

import json

POLICY_COLORS = {"none": "#7f7f7f", "mzhybrid": "#1f77b4", "zhybrid": "#ff7f0e", "fp16": "#2ca02c",
                 "powersgd": "#d62728"}
EXTRA_COLORS = ["#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]


def read_jsonl(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return rows


def fmt(x, digits=1):
    if x is None:
        return ""
    if isinstance(x, str):
        return x
    if isinstance(x, int):
        return str(x)
    return f"{x:.{digits}f}"


def color_of(policy, extra):
    """The policy's colour; a policy without one takes the next spare colour, remembered in `extra`."""
    if policy in POLICY_COLORS:
        return POLICY_COLORS[policy]
    if policy not in extra:
        extra[policy] = EXTRA_COLORS[len(extra) % len(EXTRA_COLORS)]
    return extra[policy]
