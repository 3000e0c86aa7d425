#!/usr/bin/env python3
"""Markdown tables for docs/fabric.md from results/fabric-*.jsonl (written by
scripts/fabric.sh).

Usage: scripts/fabric-tables.py [--per-seed] [--only NAME[,NAME...]] [results-dir]

A report line is either a single-seed report (`rpc-lab --json`:
`seed`, `results`) or a multi-seed one (`--seeds N`: `seeds`, `regimes`, each
with `stats` and one `results` entry per seed). A single-seed report prints
plain figures, as before. A multi-seed one prints `mean ±h` per cell, h the
half-width of the 95 % confidence interval for the mean (Student's t with N-1
degrees of freedom, the same arithmetic as `lab/src/seeds.rs`), and a
plain figure where every seed gives the same value (where `rpc-lab`
prints `±0`); the
metrics the report's `stats` has are taken from it, the rest (links paused,
peak buffer, per-size slowdowns, ...) are computed here from the per-seed
results the same way. `--per-seed` adds, under each multi-seed table, one
plain table per seed. `--only` prints only the named result files (the NAME
of fabric-NAME.jsonl: incast, victim, websearch, credits, calibration, ...).
"""
import argparse
import json
import math
import pathlib

# Student's t, 0.975 quantile, 1-30 degrees of freedom (as lab/src/seeds.rs).
T975 = [12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004,
        2.262157, 2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905,
        2.109816, 2.100922, 2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899,
        2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272]
Z975 = 1.959963984540054


def t975(df):
    if df <= len(T975):
        return T975[df - 1]
    z2, v = Z975 * Z975, float(df)
    g1 = (z2 + 1) * Z975 / 4
    g2 = ((5 * z2 + 16) * z2 + 3) * Z975 / 96
    g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * Z975 / 384
    return Z975 + g1 / v + g2 / v ** 2 + g3 / v ** 3


def interval(values):
    """(mean, half-width or None), as lab/src/seeds.rs's Interval::of."""
    n = len(values)
    if n == 0:
        return 0.0, None
    x0 = values[0]
    s = sum(x - x0 for x in values)
    q = sum((x - x0) ** 2 for x in values)
    mean = x0 + s / n
    if n < 2:
        return mean, None
    sd = math.sqrt(max(q - s * s / n, 0.0) / (n - 1))
    return mean, t975(n - 1) * sd / math.sqrt(n)


# A cell format: an int (that many decimals) or COUNT (whole numbers; a mean
# of counts that differ between seeds gets one decimal below 100, as the
# engine's own table prints it).
COUNT = "count"


def fmt_one(v, fmt):
    if v is None:
        return "-"
    if fmt == COUNT:
        return str(int(round(v)))
    return f"{v:.{fmt}f}"


def fmt_values(values, fmt, stat=None):
    """One cell from per-seed values (None where a seed has no value)."""
    if len(values) == 1:
        return fmt_one(values[0], fmt)
    present = [v for v in values if v is not None]
    if not present:
        return "-"
    if len(present) == len(values) and all(v == present[0] for v in present):
        return fmt_one(present[0], fmt)  # the same in every seed: no interval
    if stat is not None and len(present) == len(values):
        mean, hw = stat["mean"], stat["ci95"]
    else:
        mean, hw = interval(present)
    if fmt == COUNT:
        d = 1 if abs(mean) < 100 and hw else 0
    else:
        d = fmt
    cell = f"{mean:.{d}f}" if hw is None else f"{mean:.{d}f} ±{hw:.{d}f}"
    if len(present) < len(values):
        cell += f" ({len(present)} of {len(values)} seeds)"
    return cell


DIR = pathlib.Path("results")


def reports(name):
    path = DIR / f"fabric-{name}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def seeds_of(rep):
    return rep["seeds"] if "seeds" in rep else [rep["seed"]]


def regimes_of(rep):
    """[(regime name, [result per seed], stats or None)] of either kind of report."""
    if "seeds" in rep:
        return [(g["regime"], g["results"], g.get("stats")) for g in rep["regimes"]]
    return [(r["regime"], [r], None) for r in rep["results"]]


def one_seed(rep, i):
    """The single-seed report of seed index i of a multi-seed report."""
    return {"scenario": rep["scenario"], "seed": rep["seeds"][i],
            "results": [g["results"][i] for g in rep["regimes"]]}


def seed_label(rep):
    s = seeds_of(rep)
    if len(s) == 1:
        return f"seed {s[0]}"
    if all(b == a + 1 for a, b in zip(s, s[1:])):
        return f"seeds {s[0]}-{s[-1]}, mean ±95 % interval"
    return "seeds " + ",".join(map(str, s)) + ", mean ±95 % interval"


def done_cell(results, stats):
    flows = results[0]["flows"]
    done = [r["completed"] for r in results]
    if len(set(done)) == 1:
        return f"{done[0]}/{flows}"
    return f"{fmt_values(done, COUNT, stats and stats.get('completed'))}/{flows}"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


# The main table's columns after regime and done: header, value of one
# result, format, key in a multi-seed report's stats (None: computed here).
MAIN = [
    ("Gb/s", lambda r: r["goodput_gbps"], 1, "goodput_gbps"),
    ("flow Gb/s", lambda r: r.get("mean_flow_gbps"), 1, "mean_flow_gbps"),
    ("slowdown p50", lambda r: r["slowdown"]["p50"], 2, "slowdown_p50"),
    ("p99", lambda r: r["slowdown"]["p99"], 2, "slowdown_p99"),
    ("p99.9", lambda r: r["slowdown"]["p999"], 2, "slowdown_p999"),
    ("drops switch", lambda r: r["drops_switch"], COUNT, "drops_switch"),
    ("drops ring", lambda r: r["drops_host_ring"], COUNT, "drops_host_ring"),
    ("pause frames", lambda r: r["pause_frames"], COUNT, "pause_frames"),
    ("paused us", lambda r: r["paused_us"], 0, "paused_us"),
    ("links paused", lambda r: r["links_paused"], COUNT, None),
    ("ECN marks", lambda r: r["ecn_marks"], COUNT, "ecn_marks"),
    ("resent", lambda r: r["retransmitted_pkts"], COUNT, "retransmitted_pkts"),
    ("peak buffer KB", lambda r: r["peak_buffer_bytes"] // 1024, COUNT, None),
]
VICTIM = ("victim Gb/s", lambda r: r.get("victim_goodput_gbps", 0), 1, "victim_goodput_gbps")


def cells(results, stats, cols):
    return [fmt_values([f(r) for r in results], fmt, stats.get(key) if stats and key else None)
            for _, f, fmt, key in cols]


def main_table(rep, extra=()):
    cols = MAIN[:2] + list(extra) + MAIN[2:]
    rows = [[name, done_cell(res, st)] + cells(res, st, cols) for name, res, st in regimes_of(rep)]
    return table(["regime", "done"] + [c[0] for c in cols], rows)


def buckets_table(rep):
    regs = regimes_of(rep)
    labels = [b["label"] for b in regs[0][1][0]["buckets"]]
    rows = []
    for name, res, _ in regs:
        row = [name]
        for i in range(len(labels)):
            bs = [r["buckets"][i] for r in res]
            if all(b["flows"] == 0 for b in bs):
                row.append("-")
                continue
            p50 = [b["slowdown"]["p50"] if b["flows"] else None for b in bs]
            p99 = [b["slowdown"]["p99"] if b["flows"] else None for b in bs]
            row.append(f"{fmt_values(p50, 1)} / {fmt_values(p99, 1)}")
        rows.append(row)
    return table(["regime"] + [f"{l} p50 / p99" for l in labels], rows)


def print_rep(title, rep, extra=(), buckets=False, per_seed=False):
    print(f"### {title} ({seed_label(rep)})\n")
    print(main_table(rep, extra))
    if buckets:
        print("\nFCT slowdown by flow size:\n")
        print(buckets_table(rep))
    print()
    if per_seed and "seeds" in rep:
        for i in range(len(rep["seeds"])):
            print_rep(title, one_seed(rep, i), extra, buckets)


def per_result_table(name, title, cols, per_seed=False):
    """One row per regime over every report of `name`; cols as in MAIN, the
    value function taking one result (None: '-')."""
    reps = reports(name)
    if not reps:
        return
    labels = sorted({seed_label(rep) for rep in reps})
    print(f"### {title} ({'; '.join(labels)})\n")
    rows = []
    for rep in reps:
        for regime, res, st in regimes_of(rep):
            rows.append([regime] + cells(res, st, cols))
    print(table(["regime"] + [c[0] for c in cols], rows))
    print()
    multi = [rep for rep in reps if "seeds" in rep]
    if per_seed and multi:
        for i in range(max(len(rep["seeds"]) for rep in multi)):
            rows = [[r["regime"]] + cells([r], None, cols)
                    for rep in multi if i < len(rep["seeds"])
                    for r in one_seed(rep, i)["results"]]
            seeds = sorted({rep["seeds"][i] for rep in multi if i < len(rep["seeds"])})
            print(f"seed {', '.join(map(str, seeds))}:\n")
            print(table(["regime"] + [c[0] for c in cols], rows))
            print()


def ratio(a, b):
    return a / b if b else None


def main():
    global DIR
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="?", default="results")
    ap.add_argument("--per-seed", action="store_true",
                    help="also print each seed's plain table under a multi-seed one")
    ap.add_argument("--only", help="comma-separated result names (fabric-NAME.jsonl)")
    a = ap.parse_args()
    DIR = pathlib.Path(a.dir)
    only = set(a.only.split(",")) if a.only else None
    want = lambda name: only is None or name in only
    ps = a.per_seed

    def section(title, name, extra=(), buckets=False):
        if want(name):
            for rep in reports(name):
                print_rep(title, rep, extra, buckets, ps)

    section("incast (32 x 256 KiB)", "incast")
    section("victim", "victim", (VICTIM,))
    section("slow receiver", "slow-receiver")
    if want("incast-sweep"):
        for rep in reports("incast-sweep"):
            n = regimes_of(rep)[0][1][0]["flows"]
            print_rep(f"incast, {n} senders", rep, per_seed=ps)
    # scripts/fabric.sh runs websearch at these loads, in this order.
    if want("websearch"):
        for load, rep in zip((0.3, 0.5, 0.8), reports("websearch")):
            print_rep(f"websearch at {load:.0%} load", rep, buckets=True, per_seed=ps)
    section("hadoop", "hadoop", buckets=True)
    section("permutation", "permutation")
    section("alltoall", "alltoall")

    if want("credits"):
        per_result_table("credits", "credits sweep (incast, 64 senders)", [
            ("credits", lambda r: r.get("credits"), COUNT, None),
            ("Gb/s", lambda r: r["goodput_gbps"], 1, "goodput_gbps"),
            ("flow Gb/s", lambda r: r.get("mean_flow_gbps"), 1, "mean_flow_gbps"),
            ("drops switch", lambda r: r["drops_switch"], COUNT, "drops_switch"),
            ("resent", lambda r: r["retransmitted_pkts"], COUNT, "retransmitted_pkts"),
            ("slowdown p99", lambda r: r["slowdown"]["p99"], 1, "slowdown_p99"),
            ("peak buffer KB", lambda r: r["peak_buffer_bytes"] // 1024, COUNT, None),
        ], ps)
    if want("calibration"):
        per_result_table("calibration", "calibration pair (1 sender, 64 KiB, window 4, 1 % loss)", [
            ("credits", lambda r: r["credits"], COUNT, None),
            ("RPCs", lambda r: r["rpcs"], COUNT, None),
            ("Gb/s", lambda r: r["goodput_gbps"], 2, "goodput_gbps"),
            ("resent", lambda r: r["retransmitted_pkts"], COUNT, "retransmitted_pkts"),
            ("resent per RPC", lambda r: r["retransmitted_pkts"] / max(r["rpcs"], 1), 2, None),
            ("rollbacks per RPC", lambda r: r["rollbacks"] / max(r["rpcs"], 1), 2, None),
            ("resent per rollback", lambda r: ratio(r["retransmitted_pkts"], r["rollbacks"]), 1, None),
            ("frames per RPC", lambda r: r["sim_pkts"] / max(r["rpcs"], 1), 1, None),
            ("virtual ms", lambda r: r["sim_time_us"] / 1e3, 0, None),
        ], ps)
    if want("calibration-slow"):
        per_result_table(
            "calibration-slow",
            "slow receiver (1 sender, 512 B, window 8, service 2 and 10 us per frame)", [
                ("RPCs", lambda r: r["rpcs"], COUNT, None),
                ("virtual ms", lambda r: r["sim_time_us"] / 1e3, 1, None),
                ("Mrps (after the 100 us warm-up)",
                 lambda r: r["rpcs"] / (r["sim_time_us"] - 100.0), 4, None),
            ], ps)
    if want("calibration-ring"):
        per_result_table(
            "calibration-ring",
            "overrun slow receiver (8 senders x 32 requests of 32 B, 64-entry ring, 4.59 us per request)", [
                ("credits", lambda r: r["credits"], COUNT, None),
                ("RPCs", lambda r: r["rpcs"], COUNT, None),
                ("Mrps (after the 100 us warm-up)",
                 lambda r: r["rpcs"] / (r["sim_time_us"] - 100.0), 4, None),
                ("ring drops", lambda r: r["drops_host_ring"], COUNT, "drops_host_ring"),
                ("loss (of all frames) %",
                 lambda r: 100 * r["drops_host_ring"] / max(r["sim_pkts"], 1), 2, None),
                ("resent", lambda r: r["retransmitted_pkts"], COUNT, "retransmitted_pkts"),
                ("rollbacks", lambda r: r["rollbacks"], COUNT, None),
            ], ps)


if __name__ == "__main__":
    main()
