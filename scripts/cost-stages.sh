#!/usr/bin/env bash
# Where the engine's instructions per RPC go, stage by stage: the same
# in-memory run as scripts/cost.sh (`rpc-bench engine`, two endpoints on one
# thread) under callgrind with N1 and N2 RPCs; the difference divided by
# N2 - N1 is the cost per RPC without start-up, as in cost.sh. Each
# instruction is charged to a stage by where it comes from in the source,
# inlining included: addr2line -i gives every executed address's chain of
# inlined functions, and the innermost function of the chain that names a
# stage decides (a library helper such as Option::map or VecDeque::pop_front
# counts for the engine function it was inlined into). A call into another
# object (memcpy in libc, clock_gettime in the vDSO) counts, whole, for the
# stage of its call site. The bench's own loop (its in-memory wire, its
# clock reads) is the `harness` row: not the engine.
#
# Usage: scripts/cost-stages.sh [--rpcs N1 N2] [--detail] [-- ENGINE ARGS...]
#   default: --rpcs 50000 150000, 32 B requests and responses, window 1
#   --detail: also the 12 costliest functions (innermost engine frames) per stage
#   e.g. scripts/cost-stages.sh -- --workload throughput --window 8 --sessions 16
#   RPC_BENCH=path: that rpc-bench binary (another build, to compare), not a fresh build
set -euo pipefail
cd "$(dirname "$0")/.."
N1=50000 N2=150000 DETAIL=0
while [ $# -gt 0 ]; do
  case $1 in
    --rpcs) N1=${2:?"--rpcs needs N1 N2"} N2=${3:?"--rpcs needs N1 N2"}; shift 3 ;;
    --detail) DETAIL=1; shift ;;
    --) shift; break ;;
    *) echo "usage: scripts/cost-stages.sh [--rpcs N1 N2] [--detail] [-- ENGINE ARGS...]" >&2; exit 2 ;;
  esac
done
[ "$N2" -gt "$N1" ] || { echo "cost-stages.sh: N2 must exceed N1" >&2; exit 2; }
command -v valgrind >/dev/null 2>&1 && command -v addr2line >/dev/null 2>&1 || ./scripts/install-deps.sh
if [ -n "${RPC_BENCH:-}" ]; then
  B=$(realpath "$RPC_BENCH")
else
  # As cost.sh: the build test.sh makes (the same dependency features).
  cargo build --release -q --workspace --bins --examples
  B=$(pwd)/target/release/rpc-bench
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in "$N1" "$N2"; do
  valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$tmp/$n.out" \
    "$B" engine --rpcs "$n" "$@" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
done

python3 - "$B" "$tmp/$N1.out" "$tmp/$N2.out" "$N1" "$N2" "$DETAIL" "$@" <<'PY'
import collections, re, subprocess, sys

binary, out1, out2, n1, n2, detail = sys.argv[1:7]
n1, n2, detail = int(n1), int(n2), detail == "1"

def parse(path):
    """From a callgrind file (--dump-instr=yes): the binary's instructions
    per address, the function each address is in, every call (caller
    object and address, callee object and function, inclusive cost), and
    the collected total."""
    names = {"ob": {}, "fn": {}}
    ob = fn = cob = cfn = None
    pos = [0, 0]
    after_calls = False
    total = 0
    self_ir = collections.Counter()
    fn_of = {}
    calls = []
    def name(kind, v):
        m = re.match(r"\((\d+)\)(?: (.*))?", v)
        if not m:
            return v
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
        return names[kind].get(m.group(1), "")
    for line in open(path):
        c = line[0]
        if c in "0123456789+-*":
            f = line.split()
            for i in range(2):
                t = f[i]
                if t.startswith("0x"):
                    pos[i] = int(t, 16)
                elif t[0] in "+-":
                    pos[i] += int(t)
                elif t != "*":
                    pos[i] = int(t)
            ir = int(f[2]) if len(f) > 2 else 0
            if after_calls:
                calls.append((ob, fn, pos[0], cob or ob, cfn, ir))
                after_calls = False
                cob = None
            elif ob == binary:
                self_ir[pos[0]] += ir
                fn_of[pos[0]] = fn
            continue
        if line.startswith("ob="):
            ob = name("ob", line[3:].strip())
        elif line.startswith("fn="):
            fn = name("fn", line[3:].strip())
        elif line.startswith("cob="):
            cob = name("ob", line[4:].strip())
        elif line.startswith("cfn="):
            cfn = name("fn", line[4:].strip())
        elif line.startswith("calls="):
            after_calls = True
        elif line.startswith("summary:") or line.startswith("totals:"):
            total = int(line.split()[1])
    return self_ir, fn_of, calls, total

runs = [parse(p) for p in (out1, out2)]
addrs = sorted(set().union(*(r[0] for r in runs), *({c[2] for c in r[2] if c[0] == binary} for r in runs)))
res = subprocess.run(["addr2line", "-a", "-i", "-f", "-C", "-e", binary],
                     input="".join(f"{a:#x}\n" for a in addrs), capture_output=True,
                     text=True, check=True).stdout.splitlines()
chains, cur, i = {}, None, 0
while i < len(res):
    if res[i].startswith("0x"):
        cur = int(res[i], 16)
        chains[cur] = []
        i += 1
    else:
        chains[cur].append(res[i])  # the function; the next line is file:line
        i += 2

# Stages by function: the innermost frame of an address's inline chain that
# matches a rule decides (first rule that matches wins). Helpers with no
# rule (wire getters, message geometry, Instant arithmetic, std) count for
# the frame they were inlined into.
RULES = [
    ("rx: parse and check headers", r"^engine::wire::(parse_frame|.*Repr::parse)|Endpoint::handle_frame$"),
    ("tx: write frames", r"^engine::wire::(template::|.*::emit$)|^engine::proto::frame::write_frame|client_tx::write_packet|ServerSession::write_(answer|bare)|transmit::.*::write_"),
    ("session lookup", r"^engine::proto::table::"),
    ("timers (deadline heap, loss scan)", r"^engine::proto::(timers|loss)::"),
    ("cc, pacing, pause, SACK, NAK", r"^engine::proto::(cc|congestion|pause|links|sack|client_sack|nak)::"),
    ("message buffers (pool)", r"^engine::proto::msgbuf::"),
    ("transmit queues, scheduling", r"^engine::proto::(transmit|txq)::"),
    ("protocol: slots, credits, answers", r"^engine::proto::(client|client_rx|client_tx|server|server_rx|server_tx|session|endpoint)::"),
    ("delivery, app commands", r"^engine::proto::requests::"),
    ("engine, other", r"^engine::(?!wire::|time::|proto::(frame|state|event|ids)::)"),
    ("harness (bench loop, not the engine)", r"^bench::measure::enginecost::"),
]
RULES = [(s, re.compile(r)) for s, r in RULES]
OUTSIDE = "outside the loop (start-up, report)"

def owner(fn):
    """The path a frame's function belongs to: the dropped type of
    drop_in_place (unwrapping Option), the type of a trait impl, else the
    function itself."""
    m = re.match(r"core::ptr::drop_in_place<(.*)>$", fn)
    if m:
        fn = m.group(1)
        m = re.match(r"core::option::Option<(.*)>$", fn)
        fn = m.group(1) if m else fn
    m = re.match(r"<(.*?)(?: as .*)?>::(\w+)$", fn)
    if m:
        fn = m.group(1) + "::" + m.group(2)
    return fn

def chain_stage(a):
    for fn in chains.get(a, []):
        o = owner(fn)
        for s, r in RULES:
            if r.search(o):
                return s, re.sub(r"<impl [^>]*>::", "", o)
    return None

def attribute(self_ir, fn_of, calls):
    """Instructions per (stage, function). An address no rule names (an
    out-of-line std function, say) takes the stages of its function's call
    sites, weighted by what each call cost; a call into another object
    counts, whole, at its call site, unless that object calls back into
    the binary (libc starting main), whose instructions count themselves."""
    callers = collections.defaultdict(list)  # callee fn -> [(site addr, cost)]
    reenter = set()
    edges = collections.defaultdict(set)
    for ob, fn, site, cob, cfn, ir in calls:
        if ob == binary and cob == binary:
            callers[cfn].append((site, ir))
        if ob != binary:
            if cob == binary:
                reenter.add((ob, fn))
            else:
                edges[(cob, cfn)].add((ob, fn))
    todo = list(reenter)
    while todo:  # whoever calls a function that re-enters, re-enters
        for caller in edges.pop(todo.pop(), ()):
            if caller not in reenter:
                reenter.add(caller)
                todo.append(caller)
    memo = {}
    def fn_dist(f, depth=0):
        if f in memo:
            return memo[f]
        memo[f] = {(OUTSIDE, f): 1.0}  # a cycle or no caller: outside
        if depth > 30 or not callers.get(f):
            return memo[f]
        acc, tot = collections.Counter(), 0
        for site, ir in callers[f]:
            for k, w in site_dist(site, depth + 1).items():
                acc[k] += w * ir
            tot += ir
        if tot:
            memo[f] = {k: v / tot for k, v in acc.items()}
        return memo[f]
    def site_dist(a, depth=0):
        st = chain_stage(a)
        return {st: 1.0} if st else fn_dist(fn_of.get(a), depth)
    out = collections.Counter()
    for a, ir in self_ir.items():
        for k, w in site_dist(a).items():
            out[k] += ir * w
    for ob, fn, site, cob, cfn, ir in calls:
        if ob == binary and cob != binary and (cob, cfn) not in reenter:
            for k, w in site_dist(site).items():
                out[k] += ir * w
    return out

a1, a2 = (attribute(r[0], r[1], r[2]) for r in runs)
n = n2 - n1
per_stage, per_fn = collections.Counter(), collections.defaultdict(collections.Counter)
for k in set(a1) | set(a2):
    d = a2.get(k, 0) - a1.get(k, 0)
    per_stage[k[0]] += d
    per_fn[k[0]][k[1]] += d
args = " ".join(sys.argv[7:]) or "defaults: 32 B, window 1"
print(f"instructions per RPC by stage (rpc-bench engine, {args}; {n1} and {n2} RPCs)")
engine = 0
for s in [s for s, _ in RULES] + [OUTSIDE]:
    if round(per_stage.get(s, 0) / n, 1) == 0:
        continue
    v = per_stage[s] / n
    if not s.startswith(("harness", "outside")):
        engine += v
    print(f"  {s:40s} {v:8.1f}")
    if detail:
        for fn, c in per_fn[s].most_common(12):
            if round(c / n, 1):
                print(f"    {c / n:8.1f}  {fn[:100]}")
total = (runs[1][3] - runs[0][3]) / n
print(f"  {'engine (the rows above but harness)':40s} {engine:8.1f}")
print(f"  {'all (scripts/cost.sh)':40s} {total:8.1f}  (rows: {sum(per_stage.values()) / n:.1f})")
PY
