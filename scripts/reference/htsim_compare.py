#!/usr/bin/env python3
"""The fabric lab against htsim (github.com/Broadcom/csg-htsim): writes
htsim's topology and connection-matrix files for our scenarios, runs both
simulators, and prints one table. Called by scripts/reference/htsim-compare.sh,
which checks the htsim tree and builds it; run that, not this.

Only our own code is here: htsim is run as a program on files this script
writes, in the formats htsim's sim/datacenter reads (FatTreeTopology::load,
ConnectionMatrix::load). Nothing of htsim is copied.

Why the parameters are what they are (docs/fabric.md, "htsim"):
  * Frames: our IP MTU 1500 is a 1514-byte frame carrying 1444 payload bytes
    (Ethernet 14 + IPv4 20 + UDP 8 + RPC 28 = 70 header bytes, docs/wire.md;
    wire version 1's 24-byte RPC header left 1448).
    htsim's RoCE/HPCC packet is its `-mtu` payload plus a 64-byte header
    (RocePacket::ACKSIZE), so `-mtu 1450` gives the same 1514-byte frame.
  * PFC: our `roce` regime pauses an ingress at xoff = max(buffer_per_port/4,
    2 frames) and releases at xon = xoff - 2 frames (apply_fabric in
    lab/src/fabric/fabric_regime.rs);
    htsim's `-pfc_thresholds LOW HIGH` count htsim data packets (1450 B) and
    compare them with wire bytes, so HIGH = round(xoff / 1450) etc.
  * Topologies: htsim's main_roce takes a topology file; a star is a 2-tier
    fat tree whose one ToR has every host (its one spine carries nothing),
    and our permutation's 16 x 8 leaf-spine with 4 spines (2:1 at the leaf)
    is a 2-tier fat tree with radix 8 down, 4 up. main_hpcc takes no
    topology file, only `-nodes N` for a 3-tier K-ary fat tree (N = K^3/4):
    incast runs there on 54 hosts (K = 6, 32 of them sending), the
    permutation on 128 (K = 8, full bisection). Hence "where comparable".
  * ECMP: htsim seeds its flows' path ids from the wall clock, so the
    permutation is run once per frozen clock time ("draw", under faketime)
    and ours, whose hash is fixed, is set against the draws that load their
    busiest link as much as ours does (k).
"""
import argparse
import datetime
import json
import math
import pathlib
import re
import statistics
import struct
import subprocess
import sys
import time

MASK64 = (1 << 64) - 1

# Our frame (docs/wire.md): IP MTU + Ethernet header; payload after our 70
# header bytes (engine::wire::HEADERS_LEN; engine/tests/suite/wire_docs.rs checks
# that they agree).
OUR_MTU = 1500
ETH = 14
OUR_HEADERS = 70
FRAME = OUR_MTU + ETH  # 1514
OUR_PAYLOAD = FRAME - OUR_HEADERS  # 1444
# htsim: packet on the wire = payload + RocePacket::ACKSIZE (64).
HTSIM_HDR = 64
HTSIM_MSS = FRAME - HTSIM_HDR  # 1450
LINK_GBPS = 100
LINK_DELAY_US = 1
KIB = 1024
MIB = 1024 * KIB


# --- Our permutation, reproduced so htsim gets the very same flows ---------
# Ports of engine/src/rng.rs (SplitMix64) and scenario.rs (sub_seed,
# derangement). `check-perm` compares them with a dump from the engine.


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK64

    def next_u64(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, n):
        return (self.next_u64() * n) >> 64


def sub_seed(seed, stream):
    return SplitMix64(seed ^ ((stream * 0xD6E8FEB86659FD93) & MASK64)).next_u64()


def derangement(n, rng):
    # As in scenario.rs, a failed try is shuffled again, not restarted.
    p = list(range(n))
    for _ in range(64):
        for i in range(n - 1, 0, -1):
            j = rng.below(i + 1)
            p[i], p[j] = p[j], p[i]
        if all(i != d for i, d in enumerate(p)):
            return p
    p = list(range(n))
    for i in range(n - 1, 0, -1):
        j = rng.below(i)
        p[i], p[j] = p[j], p[i]
    return p


def our_permutation(hosts, seed):
    """(src, dst) of every flow of `rpc-bench fabric --scenario permutation`."""
    dsts = derangement(hosts, SplitMix64(sub_seed(seed, MASK64)))
    return list(enumerate(dsts))


def ecmp_hash(b):
    """topology.rs ecmp_hash: FNV-1a over addresses and ports, then a mix."""
    prime, h = 0x0100000001B3, 0xCBF29CE484222325
    for x in b:
        h = ((h ^ x) * prime) & MASK64
    h = ((h ^ 17) * prime) & MASK64
    h ^= h >> 29
    h = (h * 0xBF58476D1CE4E5B9) & MASK64
    return h ^ (h >> 32)


def our_link_loads(flows, hosts_per_leaf=8, spines=4):
    """Flows on each leaf-spine link of our run: the NIC hashes a frame's
    IPs and UDP ports (host h is 10.1.h>>8.h&255, port 31850; mod.rs
    host_addr) onto one of the uplinks (nic.rs); the spine then has one way
    down."""
    def tup(s, d):
        return ((0x0A010000 | s).to_bytes(4, "big") + (0x0A010000 | d).to_bytes(4, "big")
                + (31850).to_bytes(2, "big") * 2)
    loads = {}
    for s, d in flows:
        ls, ld = s // hosts_per_leaf, d // hosts_per_leaf
        if ls == ld:
            continue
        u = ecmp_hash(tup(s, d)) % spines
        for link in (f"LS{ls}->US{u}", f"US{u}->LS{ld}"):
            loads[link] = loads.get(link, 0) + 1
    return loads


# --- Scenarios ---------------------------------------------------------------


def scenarios(seed):
    """name -> what both simulators run."""
    incast = [(s, 0) for s in range(1, 33)]
    return {
        "incast-256k": dict(
            ours=["--scenario", "incast", "--hosts", "32", "--flow-size", str(256 * KIB)],
            flows=incast, size=256 * KIB, topo="star", hosts=33, hpcc_nodes=54,
        ),
        "incast-16m": dict(
            ours=["--scenario", "incast", "--hosts", "32", "--flow-size", str(16 * MIB)],
            flows=incast, size=16 * MIB, topo="star", hosts=33, hpcc_nodes=54,
        ),
        "perm-1m": dict(
            ours=["--scenario", "permutation", "--hosts", "128", "--flow-size", str(MIB)],
            flows=our_permutation(128, seed), size=MIB, topo="leafspine",
            hosts=128, hpcc_nodes=128,
        ),
    }


def write_topo(path, kind, hosts):
    """htsim FatTreeTopology::load format: our star or our leaf-spine."""
    common = f"Downlink_speed_Gbps {LINK_GBPS}\nDownlink_Latency_ns {LINK_DELAY_US * 1000}\nSwitch_Latency_ns 0\n"
    if kind == "star":
        # One ToR with every host; fat-tree rules need an uplink, to a spine
        # no flow uses.
        body = (f"Nodes {hosts}\nTiers 2\nPodsize {hosts}\n\n"
                f"Tier 0\n{common}Radix_Down {hosts}\nRadix_Up 1\nOversubscribed {hosts}\n\n"
                f"Tier 1\n{common}Radix_Down 1\n")
    else:
        # scenario.rs permutation(): 8 hosts per leaf, 4 spines, every link
        # 100 Gb/s, so 2:1 at the leaf; hosts numbered leaf by leaf in both.
        leaves = hosts // 8
        body = (f"Nodes {hosts}\nTiers 2\nPodsize {hosts}\n\n"
                f"Tier 0\n{common}Radix_Down 8\nRadix_Up 4\nOversubscribed 2\n\n"
                f"Tier 1\n{common}Radix_Down {leaves}\n")
    path.write_text("# written by scripts/reference/htsim_compare.py\n" + body)


def write_cm(path, nodes, flows, size):
    """htsim ConnectionMatrix::load format; every flow starts at 0 as ours."""
    lines = [f"Nodes {nodes}", f"Connections {len(flows)}"]
    lines += [f"{s}->{d} id {i + 1} start 0 size {size}" for i, (s, d) in enumerate(flows)]
    path.write_text("\n".join(lines) + "\n")


# --- Running -------------------------------------------------------------------


def pfc_thresholds(buffer_kb):
    """(our xoff, our xon) in bytes and htsim's (low, high) in its packets."""
    xoff = max(buffer_kb * KIB // 4, 2 * FRAME)
    xon = max(xoff - 2 * FRAME, 0)
    return xoff, xon, round(xon / HTSIM_MSS), round(xoff / HTSIM_MSS)


FINISHED = re.compile(r"^Flow (\S+) (?:\d+ )?finished at ([0-9.eE+-]+)")


def run_htsim(binary, sc, name, out, seed, buffer_kb, fake_time=None, log_links=False):
    """Runs htsim in its own directory (it writes idmap.txt and its log into
    the working directory); returns per-flow FCTs (us), the process's wall
    time and, on the leaf-spine, the flows on each fabric link.

    `fake_time`: run htsim under faketime frozen at that time. htsim's RoCE
    and HPCC sources call srand(time(NULL)) and then take their ECMP path
    id from random() (glibc's rand and random share one state), so which
    links ECMP picks changes every wall-clock second whatever -seed says;
    a frozen clock makes a run repeatable, and another time is another draw."""
    rundir = out / (f"{name}-{binary.name}" + (f"-{fake_time[-8:].replace(':', '')}" if fake_time else "")
                    + ("-links" if log_links else ""))
    rundir.mkdir(parents=True, exist_ok=True)
    cm, nodes, extra = rundir / "flows.cm", sc["hosts"], []
    if binary.name == "htsim_roce":
        topo = rundir / "fabric.topo"
        write_topo(topo, sc["topo"], sc["hosts"])
        extra = ["-topo", str(topo.resolve())]
        ports = sc["hosts"] if sc["topo"] == "star" else 12
        if log_links:
            # Sample the ToR up and spine down queues (every 10 us) so the
            # flows per link can be read back: see htsim_link_loads. The
            # logging slows htsim down, hence a separate run.
            extra += ["-log", "tor_upqueue"]
    else:
        # main_hpcc: no topology file; a K-ary 3-tier fat tree of N hosts.
        nodes = sc["hpcc_nodes"]
        ports = round((4 * nodes) ** (1 / 3))  # K
    write_cm(cm, nodes, sc["flows"], sc["size"])
    _, _, low, high = pfc_thresholds(buffer_kb)
    # htsim's lossless queues never drop: past -q they only print "LOSSLESS
    # not working". -q = our switch's whole shared buffer, so that message
    # means htsim queued more than our switch could hold.
    q = math.ceil(ports * buffer_kb * KIB / HTSIM_MSS)
    # Enough virtual time for the flows, at worst all into one link at 1/10
    # of line rate; htsim's clock keeps ticking to -end, so not much more.
    per_dst = {}
    for _, d in sc["flows"]:
        per_dst[d] = per_dst.get(d, 0) + sc["size"]
    end_us = int(10 * max(per_dst.values()) * 8 / (LINK_GBPS * 1e3)) + 2000
    prefix = ["faketime", fake_time] if fake_time else []
    cmd = [*prefix, str(binary.resolve()), *extra, "-nodes", str(nodes), "-tm", str(cm.resolve()),
           "-strat", "ecmp_host", "-paths", "1", "-mtu", str(HTSIM_MSS),
           "-linkspeed", str(LINK_GBPS * 1000), "-hop_latency", str(LINK_DELAY_US),
           "-pfc_thresholds", str(low), str(high), "-q", str(q),
           "-seed", str(seed), "-end", str(end_us), "-o", "htsim.log"]
    log = rundir / "stdout.txt"
    shown = [f"'{c}'" if " " in c else c for c in cmd]
    (rundir / "cmd.txt").write_text(f"cd {rundir.resolve()} && " + " ".join(shown) + "\n")
    t0 = time.perf_counter()
    with open(log, "w") as f:
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=rundir)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"htsim failed (exit {r.returncode}); see {log}")
    fcts, overflows = {}, 0
    for line in log.read_text(errors="replace").splitlines():
        m = FINISHED.match(line)
        if m:
            fcts[m.group(1)] = float(m.group(2))
        elif "LOSSLESS not working" in line:
            overflows += 1
    # htsim's own New/Rtx counters stay 0 for RoCE (only _packets_sent
    # counts), so packets are estimated: every flow's data packets
    # (ceil(size / 1450), no loss on a lossless fabric) and one ACK each.
    pkts = 2 * len(sc["flows"]) * math.ceil(sc["size"] / HTSIM_MSS)
    links = htsim_link_loads(rundir, sc["size"]) if log_links else None
    return dict(fcts=list(fcts.values()), flows=len(sc["flows"]), wall=wall, time=fake_time,
                pkts=pkts, overflows=overflows, end_us=end_us, links=links,
                cmd=(rundir / "cmd.txt").read_text().strip())


def htsim_link_loads(rundir, size):
    """Flows on each leaf-spine link of an htsim run, from its own queue log:
    the last CUM_TRAFFIC record of every sampled queue holds the time its
    arrivals took to serialise, in seconds; over one flow's time that is
    the number of flows (plus a few % of ACKs going the other way, which
    rounding drops). The log is htsim's Logfile: a text preamble up to
    '# TRACE', then records of (double time, u32 type, u32 id, u32 event,
    3 doubles); type 4 is QUEUE_RECORD, whose one event is CUM_TRAFFIC."""
    data = (rundir / "htsim.log").read_bytes()
    start = data.index(b"# TRACE\n") + len(b"# TRACE\n")
    if b"# transpose=0" not in data[:start]:
        return None  # a column-major log: not read here
    names = {}
    for line in (rundir / "idmap.txt").read_text().splitlines():
        k, _, v = line.partition(" ")
        names[int(k)] = v
    last = {}
    rec = struct.Struct("<dIIIddd")
    for off in range(start, len(data) - rec.size + 1, rec.size):
        _, typ, qid, _, v1, _, _ = rec.unpack_from(data, off)
        if typ == 4:
            last[qid] = v1
    one_flow = math.ceil(size / HTSIM_MSS) * FRAME * 8 / (LINK_GBPS * 1e9)
    return {names.get(q, str(q)): round(v / one_flow) for q, v in last.items()
            if re.match(r"(LS\d+->US|US\d+->LS)", names.get(q, ""))}


def run_ours(rpc_bench, sc, regime, seed, buffer_kb):
    cmd = [rpc_bench, "fabric", *sc["ours"], "--regimes", regime,
           "--buffer-kb", str(buffer_kb), "--link-delay-us", str(LINK_DELAY_US),
           "--seed", str(seed), "--json", "--timing"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr.strip()}")
    rep = json.loads(r.stdout.strip().splitlines()[-1])
    res = rep["results"][0]
    return dict(res=res, rate=rep.get("sim_pkts_per_sec"), cmd=cmd)


# --- Summaries -----------------------------------------------------------------


def nearest_rank(sorted_vals, num, den):
    """Our metrics.rs percentile definition, for htsim's FCTs too."""
    n = len(sorted_vals)
    if n == 0:
        return float("nan")
    return sorted_vals[min(max(-(-n * num // den), 1), n) - 1]


def floor_us(sim, size, flows_into_bottleneck):
    """Time the bottleneck link needs for every data frame, by each
    simulator's own frame accounting (incast: the receiver's link)."""
    if sim == "ours":
        # Full frames of OUR_PAYLOAD bytes, then a short last one; the
        # fabric serialises in whole ns, rounded up (Port::ser_ns).
        ps_per_byte = 8000 // LINK_GBPS
        full, rest = divmod(size, OUR_PAYLOAD)
        ns = full * -(-FRAME * ps_per_byte // 1000)
        if rest:
            ns += -(-(rest + OUR_HEADERS) * ps_per_byte // 1000)
    else:
        # Whole 1450-byte packets (the last one too), exact picoseconds.
        ns = math.ceil(size / HTSIM_MSS) * FRAME * 8 / LINK_GBPS
    return flows_into_bottleneck * ns / 1e3


def summarize_ours(run, sc):
    r = run["res"]
    total = len(sc["flows"]) * sc["size"]
    last = r["fct_us"]["p999"]  # p99.9 by nearest rank is the max for < 1000 flows
    # Cross-check: goodput is completed bytes over first start .. last end.
    from_goodput = total * 8 / r["goodput_gbps"] / 1e3 if r["goodput_gbps"] else float("nan")
    pkts = r["sim_pkts"]
    return dict(done=f"{r['completed']}/{r['flows']}", last=last, p50=r["fct_us"]["p50"],
                mean=None, gbps=r["goodput_gbps"], rate=run["rate"],
                wall=pkts / run["rate"] if run["rate"] else None,
                pkts=pkts, pkts_est=False, check=from_goodput,
                pauses=r["pause_frames"], drops=r["drops_switch"] + r["drops_headroom"])


def summarize_htsim(run, sc):
    f = sorted(run["fcts"])
    total = len(f) * sc["size"]
    last = f[-1] if f else float("nan")
    return dict(done=f"{len(f)}/{run['flows']}", last=last, p50=nearest_rank(f, 50, 100),
                mean=statistics.fmean(f) if f else None,
                gbps=total * 8 / last / 1e3 if f else 0.0,
                rate=run["pkts"] / run["wall"], wall=run["wall"], pkts=run["pkts"],
                pkts_est=True, overflows=run["overflows"])


def fmt(v, spec):
    return "n/a" if v is None else format(v, spec)


def versus(ours, ref, what):
    """Relative difference of last completion; on the leaf-spine, where each
    simulator's ECMP picks its own links, also against the htsim draws that
    put as many flows on their busiest link as ours did."""
    text = f"{(ours['last'] - ref['last']) / ref['last'] * 100:+.2f} % vs {what}"
    if ref.get("same_k"):
        text += (f" (median draw); {(ours['last'] - ref['same_k']) / ref['same_k'] * 100:+.2f} % "
                 f"vs the median of the draws with k = {ours['k']}")
    elif "same_k" in ref:
        text += f" (median draw); no draw had k = {ours['k']}"
    return text


def print_table(rows, commit, buffer_kb, seed):
    xoff, xon, low, high = pfc_thresholds(buffer_kb)
    print()
    print(f"htsim commit: {commit}")
    print(f"links {LINK_GBPS} Gb/s, {LINK_DELAY_US} us one way; frame {FRAME} B "
          f"(ours {OUR_PAYLOAD} B payload, htsim -mtu {HTSIM_MSS}); seed {seed}")
    print(f"PFC: ours xoff {xoff} B / xon {xon} B per ingress; htsim pause above "
          f"{high * HTSIM_MSS} B, resume below {low * HTSIM_MSS} B "
          f"(-pfc_thresholds {low} {high}); buffer {buffer_kb} KiB per port")
    hdr = (f"{'scenario':<12} {'system':<30} {'done':>7} {'last us':>9} {'p50 us':>9} "
           f"{'mean us':>9} {'Gb/s':>7} {'floor us':>9} {'k':>2} {'Mpkt/s':>8} {'wall s':>6}  vs htsim")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        s = r["sum"]
        rate = (fmt(s["rate"] / 1e6 if s["rate"] else None, ".2f") + ("*" if s.get("pkts_est") else "")
                + ("L" if s.get("logged") else ""))
        print(f"{r['scenario']:<12} {r['system']:<30} {s['done']:>7} {s['last']:>9.2f} "
              f"{s['p50']:>9.2f} {fmt(s['mean'], '.2f'):>9} {s['gbps']:>7.2f} "
              f"{fmt(r.get('floor'), '.2f'):>9} {s.get('k') or '-':>2} {rate:>8} "
              f"{fmt(s['wall'], '.3f'):>6}  {r.get('vs', '')}")
    print()
    print("last: last flow completion (every flow starts at 0: the makespan); Gb/s: all flow "
          "bytes / last; p50 by nearest rank in both.")
    print("floor: time the receiver's link needs for every data frame, by that simulator's "
          "own frame accounting (incast).")
    print("k: most flows ECMP put on one leaf-spine link (ours: our hash; htsim: its "
          "tor_upqueue log); the makespan is about k x one flow's time.")
    print("ours: mean n/a (the JSON has p50/p99/p99.9 only); Mpkt/s is --timing's "
          "sim_pkts_per_sec (frames the hosts sent).")
    if any(r["sum"].get("logged") for r in rows):
        print("L: that htsim run also wrote its queue log (no faketime, so no separate run "
              "for k): slower than it would be.")
    print("*: htsim packets estimated (its RoCE New/Rtx counters stay 0): ceil(size/1450) "
          "data packets per flow plus one ACK each, over the htsim process's wall time.")
    print("(cc): where comparable only. htsim has no DCQCN, so ours roce (PFC+DCQCN) is set "
          "against HPCC over PFC, on main_hpcc's own 3-tier fat tree (it takes no topology "
          "file): 54 hosts for incast, 128 (full bisection) for the permutation.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run")
    run.add_argument("--htsim-dir", required=True, type=pathlib.Path)
    run.add_argument("--rpc-bench", required=True)
    run.add_argument("--out", required=True, type=pathlib.Path)
    run.add_argument("--lossless", required=True, help="our regimes against htsim RoCE+PFC")
    run.add_argument("--cc", default="roce", help="our regimes against htsim HPCC ('' for none)")
    run.add_argument("--scenarios", default="incast-256k,incast-16m,perm-1m")
    run.add_argument("--buffer-kb", type=int, default=256)
    run.add_argument("--seed", type=int, default=1)
    run.add_argument("--commit", default="unknown")
    run.add_argument("--faketime", action="store_true",
                     help="run htsim under faketime (repeatable ECMP draws)")
    run.add_argument("--draws", type=int, default=5,
                     help="htsim ECMP draws (frozen clock times) for the permutation")
    chk = sub.add_parser("check-perm", help="print our permutation as 'src dst' lines")
    chk.add_argument("hosts", type=int)
    chk.add_argument("seed", type=int)
    a = ap.parse_args()

    if a.cmd == "check-perm":
        for s, d in our_permutation(a.hosts, a.seed):
            print(s, d)
        return

    all_sc = scenarios(a.seed)
    names = [n for n in a.scenarios.split(",") if n]
    for n in names:
        if n not in all_sc:
            sys.exit(f"unknown scenario {n!r}; valid: {', '.join(all_sc)}")
    lossless = [r for r in a.lossless.split(",") if r]
    cc = [r for r in a.cc.split(",") if r]
    roce_bin = a.htsim_dir / "htsim_roce"
    hpcc_bin = a.htsim_dir / "htsim_hpcc"
    a.out.mkdir(parents=True, exist_ok=True)
    if cc and not hpcc_bin.exists():
        print("note: no htsim_hpcc binary; the HPCC rows are left out", file=sys.stderr)
        cc = []

    # Frozen clocks for htsim (run_htsim): 2024-01-01 00:00:00, :01, ...
    base = datetime.datetime(2024, 1, 1)
    times = [str(base + datetime.timedelta(seconds=i)) for i in range(max(a.draws, 1))] if a.faketime else []
    if not a.faketime:
        print("note: no faketime: htsim's ECMP draw follows the wall clock, so its "
              "permutation and HPCC rows change from run to run", file=sys.stderr)
    rows, raw = [], {}
    for name in names:
        sc = all_sc[name]
        star = sc["topo"] == "star"
        our_k = None if star else max(our_link_loads(sc["flows"]).values())
        raw[name] = {}

        def ours(reg, ref, what):
            print(f"== {name}: ours {reg}", file=sys.stderr)
            o = run_ours(a.rpc_bench, sc, reg, a.seed, a.buffer_kb)
            s = summarize_ours(o, sc)
            s["k"] = our_k
            if abs(s["check"] - s["last"]) > 0.001 * s["last"]:
                print(f"warning: {name} {reg}: p99.9 FCT {s['last']} us, but goodput gives "
                      f"a makespan of {s['check']:.2f} us", file=sys.stderr)
            raw[name][f"ours {reg}"] = o
            sys_name = f"ours {reg}" + (" (cc)" if what == "HPCC" else "")
            rows.append(dict(scenario=name, system=sys_name, sum=s, vs=versus(s, ref, what),
                             floor=floor_us("ours", sc["size"], len(sc["flows"])) if star else None))

        # One htsim run, or on the leaf-spine one per ECMP draw (see run_htsim).
        draws = times[:a.draws] if not star and times else times[:1] or [None]
        hruns = []
        for t in draws:
            print(f"== {name}: htsim RoCE+PFC" + (f" at {t}" if t else ""), file=sys.stderr)
            h = run_htsim(roce_bin, sc, name, a.out, a.seed, a.buffer_kb, t, log_links=not star and not t)
            hs = summarize_htsim(h, sc)
            if not star and t:
                # Same clock, same run: a second one with the queue log for k
                # (and a check that htsim repeats itself under faketime).
                hl = run_htsim(roce_bin, sc, name, a.out, a.seed, a.buffer_kb, t, log_links=True)
                if sorted(hl["fcts"]) != sorted(h["fcts"]):
                    print(f"warning: {name}: htsim at {t} did not repeat its FCTs", file=sys.stderr)
                h["links"] = hl["links"]
            elif not star:
                hs["logged"] = True  # the speed includes the queue log's cost
            hs["k"] = max(h["links"].values()) if h["links"] else None
            raw[name][f"htsim roce {t}"] = h
            label = "htsim RoCE+PFC, no CC" + (f" {t[-8:]}" if len(draws) > 1 else "")
            rows.append(dict(scenario=name, system=label, sum=hs,
                             floor=floor_us("htsim", sc["size"], len(sc["flows"])) if star else None))
            hruns.append(hs)
        # Ours is set against the median draw (by last completion), and the
        # note says how the draws with ours' k compare.
        hs = sorted(hruns, key=lambda r: r["last"])[len(hruns) // 2]
        if len(hruns) > 1:
            same_k = [r["last"] for r in hruns if r.get("k") == our_k]
            hs = dict(hs)
            hs["same_k"] = statistics.median(same_k) if same_k else None
        for reg in lossless:
            ours(reg, hs, "RoCE+PFC")
        if cc:
            print(f"== {name}: htsim HPCC over PFC", file=sys.stderr)
            hp = run_htsim(hpcc_bin, sc, name, a.out, a.seed, a.buffer_kb, draws[0])
            hps = summarize_htsim(hp, sc)
            raw[name]["htsim hpcc"] = hp
            rows.append(dict(scenario=name, system="htsim HPCC+PFC (cc)", sum=hps))
            for reg in cc:
                ours(reg, hps, "HPCC")
        overflow = sum(r.get("overflows", 0) for r in raw[name].values())
        if overflow:
            print(f"note: {name}: htsim queued more than our switch's buffer "
                  f"({overflow} 'LOSSLESS not working' lines)", file=sys.stderr)

    print_table(rows, a.commit, a.buffer_kb, a.seed)
    (a.out / "summary.json").write_text(json.dumps(
        dict(commit=a.commit, seed=a.seed, buffer_kb=a.buffer_kb, rows=rows, runs=raw),
        indent=1, default=str))
    print(f"\nfiles: {a.out}/ (per run: topology, matrix, command, htsim output; summary.json)")


if __name__ == "__main__":
    main()
