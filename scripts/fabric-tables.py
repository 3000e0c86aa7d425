#!/usr/bin/env python3
"""Markdown tables for docs/fabric.md from results/fabric-*.jsonl (written by
scripts/fabric.sh). Usage: scripts/fabric-tables.py [results-dir]"""
import json
import pathlib
import sys

DIR = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "results")


def reports(name):
    path = DIR / f"fabric-{name}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def per_result_table(name, title, header, row):
    """One row per regime result over every report of `name`."""
    reps = reports(name)
    if not reps:
        return
    print(f"### {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for rep in reps:
        for r in rep["results"]:
            print("| " + " | ".join(row(r)) + " |")
    print()


def main_table(rep, extra=()):
    cols = ["regime", "done", "Gb/s", *[c for c, _ in extra], "slowdown p50", "p99", "p99.9",
            "drops switch", "drops ring", "pause frames", "paused us", "links paused",
            "ECN marks", "resent", "peak buffer KB"]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rep["results"]:
        row = [r["regime"], f'{r["completed"]}/{r["flows"]}', f'{r["goodput_gbps"]:.1f}']
        row += [f(r) for _, f in extra]
        s = r["slowdown"]
        row += [f'{s["p50"]:.2f}', f'{s["p99"]:.2f}', f'{s["p999"]:.2f}',
                str(r["drops_switch"]), str(r["drops_host_ring"]), str(r["pause_frames"]),
                f'{r["paused_us"]:.0f}', str(r["links_paused"]), str(r["ecn_marks"]),
                str(r["retransmitted_pkts"]), str(r["peak_buffer_bytes"] // 1024)]
        out.append("| " + " | ".join(row) + " |")
    return "\n".join(out)


def buckets_table(rep):
    labels = [b["label"] for b in rep["results"][0]["buckets"]]
    out = ["| regime | " + " | ".join(f"{l} p50 / p99" for l in labels) + " |",
           "|" + "---|" * (len(labels) + 1)]
    for r in rep["results"]:
        cells = []
        for b in r["buckets"]:
            s = b["slowdown"]
            cells.append("-" if b["flows"] == 0 else f'{s["p50"]:.1f} / {s["p99"]:.1f}')
        out.append(f'| {r["regime"]} | ' + " | ".join(cells) + " |")
    return "\n".join(out)


def section(title, name, extra=(), buckets=False):
    reps = reports(name)
    if not reps:
        return
    for rep in reps:
        print(f"### {title} (seed {rep['seed']})\n")
        print(main_table(rep, extra))
        if buckets:
            print("\nFCT slowdown by flow size:\n")
            print(buckets_table(rep))
        print()


victim = (("victim Gb/s", lambda r: f'{r.get("victim_goodput_gbps", 0):.1f}'),)
section("incast (32 x 256 KiB)", "incast")
section("victim", "victim", victim)
section("slow receiver", "slow-receiver")
for rep in reports("incast-sweep"):
    n = rep["results"][0]["flows"]
    print(f"### incast, {n} senders\n")
    print(main_table(rep))
    print()
# scripts/fabric.sh runs websearch at these loads, in this order.
for load, rep in zip((0.3, 0.5, 0.8), reports("websearch")):
    print(f"### websearch at {load:.0%} load\n")
    print(main_table(rep))
    print("\nFCT slowdown by flow size:\n")
    print(buckets_table(rep))
    print()
section("hadoop", "hadoop", buckets=True)
section("permutation", "permutation")
section("alltoall", "alltoall")

per_result_table(
    "credits", "credits sweep (incast, 64 senders)",
    ["regime", "credits", "Gb/s", "drops switch", "resent", "slowdown p99", "peak buffer KB"],
    lambda r: [r["regime"], str(r.get("session_credits", "?")), f'{r["goodput_gbps"]:.1f}',
               str(r["drops_switch"]), str(r["retransmitted_pkts"]),
               f'{r["slowdown"]["p99"]:.1f}', str(r["peak_buffer_bytes"] // 1024)])
per_result_table(
    "calibration", "calibration pair (1 sender, 64 KiB, window 4, 1 % loss)",
    ["regime", "credits", "RPCs", "Gb/s", "resent", "resent per RPC", "rollbacks per RPC",
     "resent per rollback", "frames per RPC", "virtual ms"],
    lambda r: [r["regime"], str(r["session_credits"]), str(r["rpcs"]), f'{r["goodput_gbps"]:.2f}',
               str(r["retransmitted_pkts"]), f'{r["retransmitted_pkts"] / max(r["rpcs"], 1):.2f}',
               f'{r["rollbacks"] / max(r["rpcs"], 1):.2f}',
               f'{r["retransmitted_pkts"] / r["rollbacks"]:.1f}' if r["rollbacks"] else "-",
               f'{r["sim_pkts"] / max(r["rpcs"], 1):.1f}', f'{r["sim_time_us"] / 1e3:.0f}'])
per_result_table(
    "calibration-slow", "slow receiver (1 sender, 512 B, window 8, service 2 and 10 us per frame)",
    ["regime", "RPCs", "virtual ms", "Mrps (after the 100 us warm-up)"],
    lambda r: [r["regime"], str(r["rpcs"]), f'{r["sim_time_us"] / 1e3:.1f}',
               f'{r["rpcs"] / (r["sim_time_us"] - 100.0):.4f}'])
per_result_table(
    "calibration-ring", "overrun slow receiver (8 senders x 32 requests of 32 B, 64-entry ring, 4.59 us per request)",
    ["regime", "credits", "RPCs", "Mrps (after the 100 us warm-up)", "ring drops", "loss (of all frames)",
     "resent", "rollbacks"],
    lambda r: [r["regime"], str(r["session_credits"]), str(r["rpcs"]),
               f'{r["rpcs"] / (r["sim_time_us"] - 100.0):.4f}', str(r["drops_host_ring"]),
               f'{100 * r["drops_host_ring"] / max(r["sim_pkts"], 1):.2f} %',
               str(r["retransmitted_pkts"]), str(r["rollbacks"])])
