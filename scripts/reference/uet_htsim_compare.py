#!/usr/bin/env python3
"""The fabric lab against uet-htsim (github.com/ultraethernet/uet-htsim), on
uet-htsim's own validation suite: every experiment of
validate_uec_sender.txt, validate_uec_rcv.txt and
validate_load_balancing_failed_snd.txt, run by both simulators on the same
connection matrix, in one table. Called by
scripts/reference/uet-htsim-compare.sh, which checks the tree and builds
htsim_uec; run that, not this.

Nothing of uet-htsim is copied: its validation files are read (the format
of validate_parallel.py: a matrix path, then `!Experiment NAME`,
`!Binary B`, `!Param FLAGS`, `!tailFCT US`, `!FCT FLOW US` lines) and
htsim_uec is run as a program. Its tail FCT is what validate_parallel.py
takes: the time of the last `finished at T` line (time since the start of
the run, us); ours is `last_end_us` of rpc-lab's JSON, the same measure.
Packets per wall second (and per CPU second in the record): uet-htsim's are every packet its hosts sent (the
`New: Rtx: RTS: ACKs: NACKs: Pulls:` summary line), ours `sim_pkts` (every
frame the hosts' NICs sent), each over the simulator's own wall time.

How uet-htsim's flags map to ours is the table MAP below (one place).
"""
import argparse
import json
import math
import os
import pathlib
import re
import resource
import subprocess
import sys
import time

FILES = [
    "validate_uec_sender.txt",
    "validate_uec_rcv.txt",
    "validate_load_balancing_failed_snd.txt",
]

# uet-htsim's defaults (htsim/sim/datacenter/main_uec.cpp, main()): 3-tier
# fat tree, 100 Gb/s host links (HOST_NIC in main.h), 1 us per hop
# (hop_latency), 4,150-byte packets (packet_size), 64-byte trimmed headers
# (trimsize), trimming on. Ours follow them on every experiment.
TOPOLOGY_FLAGS = [
    ("--topology", "fat-tree"),
    ("--mtu", "4136"),  # IP MTU: 4,150-byte frames, uet-htsim's packets
    ("--link-gbps", "100"),
    ("--link-delay-us", "1"),
]
HTSIM_MTU = 4150

# uet-htsim flag -> what ours does with it. Each entry: (flag, takes a
# value, function(value, env) -> (our args, note)). `env` has the regimes
# to use. A note says where the mapping is not exact.
def _regime(which):
    def f(_v, env):
        return (["--regimes", env[which]], "")
    return f


def _paths(v, env):
    # -paths 1: every packet of a flow on one path, as per-flow ECMP.
    # -paths N > 1: spraying over N entropies; which way is
    # -load_balancing_algo's (default MIXED in main_uec.cpp).
    if int(v) == 1:
        return (["--path-selection", "ecmp"], "")
    env["spraying"] = True
    return ([], "")


# -load_balancing_algo: uet-htsim's UecMpOblivious, UecMpReps, UecMpBitmap,
# UecMpMixed (uec_mp.h). The lab has ecmp | oblivious | reps; bitmap (skip
# entropies a NACK or ECN marked, a bitmap per flow) and mixed (bitmap then
# REPS) learn from the same feedback as REPS does, so they map to reps.
LB = {"oblivious": ("oblivious", ""), "reps": ("reps", ""), "reps2": ("reps", ""),
      "bitmap": ("reps", "bitmap->reps (nearest: both learn from NACK/ECN)"),
      "mixed": ("reps", "mixed->reps (nearest: bitmap+REPS)")}


def _lb(v, env):
    name, note = LB.get(v, (None, None))
    if name is None:
        return ([], f"-load_balancing_algo {v}: not mapped")
    env["lb"] = (name, note)
    return ([], "")


def _failed(v, env):
    # fat_tree_topology.cpp: -failed N runs the first N core-to-aggregation
    # links at _failed_link_ratio = 0.25 of the link rate, with 0.25 of the
    # queue (FatTreeTopology::alloc_queue, reduced_speed). The suite's
    # experiment names say "10% capacity"; the code says 25 %; we follow
    # the code.
    return (["--degraded-links", v, "--degraded-fraction", "0.25"], "")


def _queue(v, _env):
    # -q N: every switch queue holds N packets of 4,150 bytes (memFromPkt),
    # and a CompositeQueue trims only when that queue is full
    # (compositequeue.cpp, receivePacket): ours trims above --trim-kb, so
    # both take the size (uec's default is one BDP, uet-htsim's own
    # default queue size).
    kb = math.ceil(int(v) * HTSIM_MTU / 1024)
    return (["--buffer-kb", str(kb), "--trim-kb", str(kb)], "")


def _cwnd(v, _env):
    # -cwnd N: NSCC's/RCCC's initial and largest window, N packets
    # (cwnd_b = cwnd * data_packet_size in main_uec.cpp); ours: the
    # session's packets in flight, its credits.
    return (["--set", f"transport.credits={v}"], "")


def _topo(v, env):
    # uet-htsim's leaf_spine_1024_oversub*.topo (FatTreeTopologyCfg::load
    # reads it): 2 tiers, Tier 0's Radix_Down hosts per leaf and Radix_Up
    # uplinks (32 and 8: 4:1; 32 and 4: 8:1), one to each spine, 100 Gb/s
    # and 1 us everywhere, no switch latency: ours is `--topology
    # leaf-spine:HxS`, in place of the default fat tree. Another shape (3
    # tiers, other speeds or latencies) is not mapped.
    tiers, down, up, other = None, None, None, []
    try:
        tier = None
        for line in (env["sim_dc"] / v).read_text().splitlines():
            t = line.split()
            if len(t) == 2 and t[0] == "Tier":
                tier = int(t[1])
            elif len(t) == 2 and t[0] == "Tiers":
                tiers = int(t[1])
            elif len(t) == 2 and tier == 0 and t[0] == "Radix_Down":
                down = int(t[1])
            elif len(t) == 2 and tier == 0 and t[0] == "Radix_Up":
                up = int(t[1])
            elif len(t) == 2 and t[0] == "Downlink_speed_Gbps" and t[1] != "100":
                other.append(line.strip())
            elif len(t) == 2 and t[0] == "Downlink_Latency_ns" and t[1] != "1000":
                other.append(line.strip())
            elif len(t) == 2 and t[0] == "Switch_Latency_ns" and t[1] != "0":
                other.append(line.strip())
    except OSError as e:
        return (None, f"-topo {v}: not mapped ({e})")
    if tiers != 2 or not down or not up or other:
        return (None, f"-topo {pathlib.Path(v).name}: not mapped (not a 2-tier leaf-spine at "
                      f"100 Gb/s, 1 us per hop: {tiers} tiers {' '.join(other)})")
    env["topology"] = f"leaf-spine:{down}x{up}"
    return ([], f"-topo: leaf-spine:{down}x{up} ({down // up}:1)")


def _ignored(why):
    def f(v, _env):
        return ([], why.format(v=v))
    return f


MAP = {
    "-sender_cc_only": (False, _regime("snd")),
    "-receiver_cc_only": (False, _regime("rcv")),
    "-paths": (True, _paths),
    "-load_balancing_algo": (True, _lb),
    "-failed": (True, _failed),
    "-q": (True, _queue),
    "-cwnd": (True, _cwnd),
    "-topo": (True, _topo),
    # htsim stops at -end; ours runs until every flow is done or its own
    # grace after the last start: a flow past -end fails the target either way.
    "-end": (True, _ignored("")),
    "-sack_threshold": (True, _ignored("-sack_threshold {v}: ours acknowledges per its own rule")),
}


def parse_plan(path):
    """The experiments of one validation file, as validate_parallel.py reads it."""
    out = []
    lines = pathlib.Path(path).read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line or line.startswith("#") or line.startswith("!"):
            continue
        exp = {"matrix": line, "name": "", "binary": "./htsim_uec", "params": [],
               "target": 0, "flow_targets": {}}
        while i < len(lines) and lines[i].startswith("!"):
            p = lines[i].rstrip()
            i += 1
            word, _, rest = p.partition(" ")
            if word == "!Binary":
                exp["binary"] = rest.strip()
            elif word == "!Param":
                exp["params"] += rest.split()
            elif word == "!tailFCT":
                exp["target"] = float(rest)
            elif word == "!FCT":
                flow, us = rest.split()
                exp["flow_targets"][flow] = float(us)
            elif word == "!Experiment":
                exp["name"] = rest.strip()
        out.append(exp)
    return out


def ours_args(params, env):
    """Our flags for uet-htsim's `params`, and notes where not exact."""
    args, notes = [], []
    env = dict(env, spraying=False, lb=None, topology=None)
    i = 0
    while i < len(params):
        flag = params[i]
        if flag not in MAP:
            notes.append(f"{flag}: not mapped")
            i += 1
            continue
        takes, fn = MAP[flag]
        value = params[i + 1] if takes else None
        i += 2 if takes else 1
        a, note = fn(value, env)
        if a is None:
            return None, [note]
        args += a
        if note:
            notes.append(note)
    if env["spraying"]:
        name, note = env["lb"] or LB["mixed"]
        args += ["--path-selection", name]
        if note:
            notes.append(note)
    if "--regimes" not in args:
        args += ["--regimes", env["snd"]]
    if env["topology"]:
        args += ["--topology", env["topology"]]
    return args, notes


# --- uet-htsim -------------------------------------------------------------

FINISHED = re.compile(r"\bfinished at (\S+)")
SUMMARY = re.compile(r"New: (\d+) Rtx: (\d+) RTS: (\d+) Bounced: (\d+) ACKs: (\d+) NACKs: (\d+) Pulls: (\d+)")


def conn_count(matrix):
    for line in pathlib.Path(matrix).read_text().splitlines():
        t = line.split()
        if len(t) == 2 and t[0] == "Connections":
            return int(t[1])
    return 0


def run_htsim(exp, sim_dc, htsim, workdir, timeout):
    """Runs one experiment in `workdir` (htsim writes logout.dat there);
    reuses a finished earlier run of the same command line."""
    params = list(exp["params"])
    for k, p in enumerate(params[:-1]):
        if p == "-topo":
            params[k + 1] = str(sim_dc / params[k + 1])
    cmd = [str(htsim), "-tm", str(sim_dc / exp["matrix"])] + params
    workdir.mkdir(parents=True, exist_ok=True)
    done = workdir / "result.json"
    if done.exists():
        r = json.loads(done.read_text())
        if r.get("cmd") == cmd:
            return r
    t0, c0 = time.monotonic(), children_cpu()
    try:
        p = subprocess.run(["nice", "-n", "10"] + cmd, cwd=workdir, capture_output=True,
                           text=True, timeout=timeout)
        out, rc = p.stdout, p.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), "timeout"
    wall, cpu = time.monotonic() - t0, children_cpu() - c0
    (workdir / "stdout.txt").write_text(out)
    ends = [float(m.group(1)) for m in FINISHED.finditer(out)]
    s = SUMMARY.search(out)
    pkts = sum(int(x) for k, x in enumerate(s.groups()) if k != 3) if s else 0
    r = {"cmd": cmd, "rc": rc, "wall_s": wall, "cpu_s": cpu, "finished": len(ends),
         "tail_us": ends[-1] if ends else None, "pkts": pkts}
    done.write_text(json.dumps(r))
    return r


# --- ours ------------------------------------------------------------------

def lab_flags(rpc_lab):
    """The long flags this rpc-lab build has (others helpers' flags may not
    be merged yet)."""
    h = subprocess.run([rpc_lab, "--help"], capture_output=True, text=True).stdout
    return set(re.findall(r"(--[a-z][a-z0-9-]*)", h))


def drop_missing(args, have):
    """`args` without the flags (and their values) this build lacks."""
    out, missing, i = [], [], 0
    while i < len(args):
        a = args[i]
        takes = i + 1 < len(args) and not args[i + 1].startswith("--")
        if a.startswith("--") and a not in have:
            missing.append(a)
            i += 2 if takes else 1
            continue
        out.append(a)
        i += 1
    return out, missing


def run_ours(rpc_lab, matrix, args, timeout):
    cmd = [rpc_lab, "--scenario", "matrix", "--matrix", str(matrix), "--json", "-q"] + args
    t0, c0 = time.monotonic(), children_cpu()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"cmd": cmd, "error": f"timeout after {timeout} s", "wall_s": timeout}
    wall, cpu = time.monotonic() - t0, children_cpu() - c0
    if p.returncode != 0:
        err = p.stderr.strip().splitlines()
        return {"cmd": cmd, "error": err[-1] if err else f"exit {p.returncode}", "wall_s": wall}
    r = json.loads(p.stdout.strip().splitlines()[-1])["results"][0]
    return {"cmd": cmd, "wall_s": wall, "cpu_s": cpu, "tail_us": r["last_end_us"],
            "finished": r["completed"], "flows": r["flows"], "pkts": r["sim_pkts"],
            "trims": r.get("trims"), "drops": r["drops_switch"], "regime": r["regime"]}


def verdict(tail, finished, conns, target):
    if tail is None or finished != conns:
        return "FAIL"
    return "pass" if target <= 0 or tail <= target else "FAIL"


def done_of(r, conns):
    """A tail FCT cell: the figure, and how many connections finished
    when not all did."""
    if not r or "error" in r:
        return "-"
    cell = fmt(r.get("tail_us"))
    if r.get("finished") != conns:
        cell += f" ({r.get('finished')}/{conns} done)"
    return cell


def fmt(x, d=1):
    return "-" if x is None else f"{x:.{d}f}"


def children_cpu():
    """CPU seconds (user + system) of the waited-for child processes."""
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def mpps(r, key="wall_s"):
    """Million packets per second of the simulator's wall time (`key`
    "cpu_s": of its CPU time, which on a loaded machine says more)."""
    if not r or not r.get("pkts") or not r.get(key):
        return "-"
    return f"{r['pkts'] / r[key] / 1e6:.3f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim-dir", required=True, help="uet-htsim's htsim/sim")
    ap.add_argument("--htsim", required=True, help="the htsim_uec binary")
    ap.add_argument("--rpc-lab", help="our binary (none: uet-htsim only)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--regime-snd", default="uec")
    ap.add_argument("--regime-rcv", default="uec-rcv")
    ap.add_argument("--only", default="", help="run experiments whose name contains this")
    ap.add_argument("--timeout", type=int, default=3600)
    ap.add_argument("--record", help="also write uet-htsim's results to this file")
    ap.add_argument("--cached-only", action="store_true",
                    help="skip the experiments uet-htsim has not run yet in --out")
    a = ap.parse_args()

    sim_dc = pathlib.Path(a.sim_dir) / "datacenter"
    out = pathlib.Path(a.out)
    env = {"snd": a.regime_snd, "rcv": a.regime_rcv, "sim_dc": sim_dc}
    have = lab_flags(a.rpc_lab) if a.rpc_lab else set()
    rows, record = [], []
    for f in FILES:
        for k, exp in enumerate(parse_plan(sim_dc / f)):
            if a.only and a.only not in exp["name"]:
                continue
            label = f"{f.removeprefix('validate_').removesuffix('.txt')}#{k + 1}"
            matrix = sim_dc / exp["matrix"]
            conns = conn_count(matrix)
            if a.cached_only and not (out / "htsim" / label / "result.json").exists():
                continue
            print(f"uet-htsim-compare: {label} {exp['name']}: uet-htsim ...", file=sys.stderr, flush=True)
            h = run_htsim(exp, sim_dc, a.htsim, out / "htsim" / label, a.timeout)
            hv = verdict(h["tail_us"], h["finished"], conns, exp["target"])
            record.append(f"{label}\t{exp['name']}\t{' '.join(exp['params'])}\t{exp['target']:g}\t"
                          f"{fmt(h['tail_us'], 3)}\t{h['finished']}/{conns}\t{hv}\t{h['pkts']}\t"
                          f"{h['wall_s']:.2f}\t{mpps(h)}\t{h.get('cpu_s', float('nan')):.2f}\t{mpps(h, 'cpu_s')}")
            o, notes = None, []
            if a.rpc_lab:
                args, notes = ours_args(exp["params"], env)
                if args is not None:
                    # A -topo's leaf-spine replaces the default fat tree.
                    base = [x for pair in TOPOLOGY_FLAGS if not ("--topology" in args and pair[0] == "--topology")
                            for x in pair]
                    args, missing = drop_missing(base + args, have)
                    if missing:
                        notes.append("not in this rpc-lab: " + " ".join(sorted(set(missing))))
                    print(f"uet-htsim-compare: {label}: ours ...", file=sys.stderr, flush=True)
                    o = run_ours(a.rpc_lab, matrix, args, a.timeout)
                    if "error" in o:
                        notes.append("ours: " + o["error"])
            ov = verdict(o.get("tail_us"), o.get("finished"), conns, exp["target"]) if o and "error" not in o else "-"
            ratio = (f"{o['tail_us'] / h['tail_us']:.2f}"
                     if o and o.get("tail_us") and h["tail_us"] else "-")
            rows.append([label, exp["name"], f"{exp['target']:g}", done_of(h, conns), hv,
                         done_of(o, conns), ov, ratio,
                         mpps(h), mpps(o) if o and "error" not in o else "-",
                         (o.get("regime") if o and "error" not in o else "") + (
                             (" (" + "; ".join(n for n in notes if n) + ")") if any(notes) else "")])
    head = ["#", "experiment", "target us", "uet-htsim us", "", "ours us", "", "ours/ref",
            "ref Mpkt/s", "ours Mpkt/s", "ours: regime (notes)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    table = "\n".join(lines)
    print(f"uet-htsim commit {a.commit}")
    print(table)
    (out / "table.md").write_text(f"uet-htsim commit {a.commit}\n\n{table}\n")
    if a.record:
        hdr = ("# uet-htsim " + a.commit + ", htsim_uec on its validation suite "
               "(scripts/reference/uet-htsim-compare.sh)\n"
               "# experiment\tname\tparams\ttarget_us\ttail_us\tfinished/connections\tverdict\t"
               "packets\twall_s\tMpkt_per_wall_s\tcpu_s\tMpkt_per_cpu_s\n")
        pathlib.Path(a.record).write_text(hdr + "\n".join(record) + "\n")



if __name__ == "__main__":
    main()
