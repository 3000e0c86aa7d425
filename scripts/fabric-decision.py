#!/usr/bin/env python3
"""The decision table: reads the multi-seed `rpc-lab --json` reports that
scripts/fabric-decision.sh wrote (one ROW.json per row) and replaces the
text between the markers of docs/fabric.md with one table (per row and
regime: FCT slowdown p99 and p50, goodput, switch drops, trims, pause
frames, flows completed; each the mean and 95 % interval over the seeds,
the arithmetic of scripts/fabric-tables.py) and one generated sentence
per row saying who leads. Run scripts/fabric-decision.sh, not this.

Usage: scripts/fabric-decision.py --dir results/decision [--dir MORE]...
       [--doc docs/fabric.md] [--seeds 5] [--note TEXT]... [--print]

With several --dir, a row's regimes are those of every directory in turn
(a regime found twice is taken from the first), so rows run at different
times, e.g. the uec regimes after a change to them, make one table.
"""
import argparse
import importlib.util
import json
import pathlib
import sys

BEGIN = "<!-- decision-table: begin (scripts/fabric-decision.sh writes this) -->"
END = "<!-- decision-table: end -->"
ROWS = [
    ("incast-16", "16-node incast, 15 x 2 MB"),
    ("incast-128", "128-node incast, 127 x 2 MB"),
    ("incast-1024", "1,024-node incast, 1,023 x 100 KB"),
    ("perm-1024", "1,024-node permutation, 2 MB"),
    ("perm-1024-degraded", "the same, 8 core links at 25 %"),
    ("websearch-0.5", "websearch, 50 % load"),
    ("websearch-0.8", "websearch, 80 % load"),
]

_spec = importlib.util.spec_from_file_location(
    "fabric_tables", pathlib.Path(__file__).with_name("fabric-tables.py"))
_ft = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_ft)
interval = _ft.interval


def metric(results, get):
    """(mean, half-width) over the seeds, None if no seed has the value."""
    vals = [v for v in (get(r) for r in results) if v is not None]
    if not vals:
        return None
    return interval(vals)


def cell(mi, decimals):
    if mi is None:
        return "-"
    mean, h = mi
    if h is None or h == 0:
        return f"{mean:.{decimals}f}"
    return f"{mean:.{decimals}f} ±{h:.{decimals}f}"


COLUMNS = [
    ("sd p99", lambda r: r["slowdown"]["p99"], 2),
    ("sd p50", lambda r: r["slowdown"]["p50"], 2),
    ("goodput Gb/s", lambda r: r["goodput_gbps"], 1),
    ("drops", lambda r: r["drops_switch"], 0),
    ("trims", lambda r: r.get("trims"), 0),
    ("pauses", lambda r: r["pause_frames"], 0),
    ("done", lambda r: r["completed"] / max(r["flows"], 1) * 100, 1),
]


def sentence(label, per_regime):
    """One sentence of what the row shows (who has the lowest tail, who
    drops, who pauses), from the means."""
    tails = [(m[0][0], name) for name, m in per_regime if m[0] is not None]
    if not tails:
        return f"{label}: no results."
    tails.sort()
    best, worst = tails[0], tails[-1]
    droppers = [name for name, m in per_regime if m[3] and m[3][0] > 0]
    pausers = [name for name, m in per_regime if m[5] and m[5][0] > 0]
    unfinished = [name for name, m in per_regime if m[6] and m[6][0] < 100]
    parts = [f"{label}: lowest tail slowdown {best[1]} ({best[0]:.2f}), highest "
             f"{worst[1]} ({worst[0]:.2f})"]
    parts.append("drops in " + ", ".join(droppers) if droppers else "no regime drops")
    parts.append("pauses in " + ", ".join(pausers) if pausers else "none pauses")
    if unfinished:
        parts.append("not every flow finished in " + ", ".join(unfinished))
    return "; ".join(parts) + "."


def render(dirs, seeds, notes):
    head = ["row", "regime"] + [c[0] for c in COLUMNS]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    sentences = []
    for name, label in ROWS:
        regimes, seen = [], set()
        for d in dirs:
            f = d / f"{name}.json"
            if f.exists():
                for reg in json.loads(f.read_text())["regimes"]:
                    if reg["regime"] not in seen:
                        seen.add(reg["regime"])
                        regimes.append(reg)
        if not regimes:
            out.append(f"| {label} | (not run) |" + " |" * len(COLUMNS))
            continue
        per_regime = []
        for reg in regimes:
            ms = [metric(reg["results"], get) for _, get, _ in COLUMNS]
            per_regime.append((reg["regime"], ms))
            out.append(f"| {label} | {reg['regime']} | " +
                       " | ".join(cell(m, c[2]) for m, c in zip(ms, COLUMNS)) + " |")
        sentences.append("- " + sentence(label, per_regime))
    text = [f"Seeds 7-{6 + seeds} (mean ±95 % interval where the seeds differ); "
            "sd: FCT slowdown; drops: in switches; pauses: PFC frames; "
            "done: % of flows completed."]
    text += ["", *out, "", *sentences]
    if notes:
        text += ["", *("Note: " + n for n in notes)]
    return "\n".join(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True, action="append")
    ap.add_argument("--doc", default="docs/fabric.md")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--note", action="append", default=[])
    ap.add_argument("--print", action="store_true", help="print, leave the doc alone")
    a = ap.parse_args()
    table = render([pathlib.Path(d) for d in a.dir], a.seeds, a.note)
    if a.print:
        print(table)
        return
    doc = pathlib.Path(a.doc)
    text = doc.read_text()
    if BEGIN not in text or END not in text:
        sys.exit(f"fabric-decision: {doc} has no markers {BEGIN!r} ... {END!r}")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    doc.write_text(f"{head}{BEGIN}\n{table}\n{END}{tail}")
    print(f"fabric-decision: table written into {doc}", file=sys.stderr)


if __name__ == "__main__":
    main()
