#!/usr/bin/env python3
"""The table of scripts/cc-idle.sh from its JSON lines.

    python3 scripts/cc_idle_table.py results/cc-idle-<ts>.jsonl timely dcqcn nscc

Per request size: cc=none's median goodput; per controller the median of
its per-round ratios to the same round's cc=none (and the ratios), and the
medians of its own counters `pacing_waits` and `cc_rate_cuts` (the session
waited for its rate; its controller lowered the rate). A run that printed
no result counts as 0 Gb/s.
"""
import json
import statistics
import sys


def main(path, ccs):
    g, waits, cuts = {}, {}, {}
    for line in open(path):
        r = json.loads(line)
        key = (r["round"], r["size"], r["cc"])
        res = r["result"]
        g[key] = res.get("gbps", 0.0)
        cs = res.get("client_stats", {})
        waits[key] = cs.get("pacing_waits", 0)
        cuts[key] = cs.get("cc_rate_cuts", 0)
    rounds = sorted({k[0] for k in g})
    print(f"# {path}, {len(rounds)} rounds")
    head = " | ".join(f"`{c}` median ratio (per round); waits, cuts" for c in ccs)
    print(f"| request | `none` Gb/s (median) | {head} |")
    print("|---|---:|" + "---|" * len(ccs))
    for size in (65536, 8388608):
        nones = [g.get((r, size, "none"), 0.0) for r in rounds]
        cells = []
        for c in ccs:
            ratios = [g.get((r, size, c), 0.0) / n if n else 0.0 for r, n in zip(rounds, nones)]
            w = statistics.median(waits.get((r, size, c), 0) for r in rounds)
            k = statistics.median(cuts.get((r, size, c), 0) for r in rounds)
            per = ", ".join(f"{x:.2f}" for x in ratios)
            cells.append(f"{statistics.median(ratios):.2f}x ({per}); {w:.0f}, {k:.0f}")
        label = "64 KiB" if size == 65536 else "8 MiB"
        print(f"| {label} | {statistics.median(nones):.2f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
